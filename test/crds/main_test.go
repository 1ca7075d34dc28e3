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

package crds

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var (
	cp *controlplane.ControlPlane
	// client is the generated typed clientset for cp.
	client versioned.Interface
)

// crdDir holds the generated CRDs, relative to this package.
var crdDir = filepath.Join("..", "..", "deploy", "crds")

func TestMain(m *testing.M) {
	controlplane.RunTests("crds", &cp, func() int { return setUpAndRun(m) })
}

// setUpAndRun installs the CRDs, waits until the API server serves them,
// and runs the tests.
func setUpAndRun(m *testing.M) int {
	crds, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{Paths: []string{crdDir}, ErrorIfPathMissing: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "crds: installing the CRDs in %s: %v\n", crdDir, err)
		return 1
	}
	if len(crds) != 4 {
		fmt.Fprintf(os.Stderr, "crds: %s holds %d CRDs, want 4 (Grant, ExternalWorkload, Queue, NodeLedger)\n", crdDir, len(crds))
		return 1
	}
	if client, err = versioned.NewForConfig(cp.Config); err != nil {
		fmt.Fprintln(os.Stderr, "crds: creating the typed clientset:", err)
		return 1
	}
	return m.Run()
}
