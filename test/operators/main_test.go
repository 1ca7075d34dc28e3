/*
Copyright The batch-scheduler Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package operators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var (
	cp  *controlplane.ControlPlane
	dyn dynamic.Interface
	// operatorBin is bin/kuberay-operator (in controlplane.AssetsDir).
	operatorBin string
)

var (
	rayClusterGVR   = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
	coschedulingGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	volcanoGVR      = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
)

// kuberayModule is the Go module of KubeRay's operator; hack/tools/kuberay
// pins its version.
const kuberayModule = "github.com/ray-project/kuberay/ray-operator"

func TestMain(m *testing.M) {
	if err := app.ApplyLogging(); err != nil {
		fmt.Fprintln(os.Stderr, "applying the logging configuration:", err)
		os.Exit(1)
	}
	controlplane.RunTests("operators", &cp, func() int {
		if err := setUp(); err != nil {
			fmt.Fprintln(os.Stderr, "operators:", err)
			return 1
		}
		return m.Run()
	})
}

// setUp finds the operator binary and installs the CRDs: the minimal
// PodGroup CRDs of config/crds/third-party and KubeRay's own.
func setUp() error {
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return err
	}
	operatorBin = filepath.Join(assets, "kuberay-operator")
	if _, err := os.Stat(operatorBin); err != nil {
		return fmt.Errorf("KubeRay operator missing (build it with 'make control-plane'): %w", err)
	}
	if dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
		return fmt.Errorf("creating a dynamic client: %w", err)
	}
	// Only the PodGroups: the directory also holds a minimal RayCluster CRD
	// (for test/dialects), which, created first, would stand in for
	// KubeRay's own.
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crds", "third-party", "scheduling.*_podgroups.yaml"))
	if err != nil || len(files) != 3 {
		return fmt.Errorf("want the 3 PodGroup CRDs of config/crds/third-party, found %v (%v)", files, err)
	}
	rayCRDs, err := kuberayCRDs()
	if err != nil {
		return err
	}
	if err := installCRDs(append(files, rayCRDs...)); err != nil {
		return err
	}
	return nil
}

// kuberayCRDs returns the CRD files of the KubeRay version that
// hack/tools/kuberay pins, from the Go module cache (downloading the
// module if it is not there yet).
func kuberayCRDs() ([]string, error) {
	toolDir := filepath.Join("..", "..", "hack", "tools", "kuberay")
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "mod", "download", "-json", kuberayModule)
	cmd.Dir = toolDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("finding module %s in %s: %w: %s", kuberayModule, toolDir, err, strings.TrimSpace(stderr.String()))
	}
	var mod struct{ Dir, Version, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("decoding 'go mod download -json %s': %w", kuberayModule, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return nil, fmt.Errorf("module %s: no directory in the module cache: %s", kuberayModule, mod.Error)
	}
	files, err := filepath.Glob(filepath.Join(mod.Dir, "config", "crd", "bases", "ray.io_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("module %s@%s: no CRDs under %s/config/crd/bases (%v)", kuberayModule, mod.Version, mod.Dir, err)
	}
	return files, nil
}

// installCRDs creates the CRDs in files and waits until each is served.
func installCRDs(files []string) error {
	for _, f := range files {
		if err := controlplane.InstallCRDFile(context.Background(), dyn, f); err != nil {
			return err
		}
	}
	return nil
}
