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

package image

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// What the test builds the image as. The version has a "+" (as make's
// default for an untagged commit has), which a tag cannot hold; the
// commit is made up, so that a label that does not come from the build
// cannot pass by chance.
const (
	version   = "v1.2.3-imagetest+abc"
	tag       = "v1.2.3-imagetest-abc"
	revision  = "0123456789abcdef0123456789abcdef01234567"
	buildDate = "2025-06-07T08:09:10Z"
	source    = "https://github.com/batch-scheduler/batch-scheduler"
	// repository is build-image.sh's default.
	repository = "batch-scheduler"
)

var platforms = []string{"linux/amd64", "linux/arm64"}

var (
	cp *controlplane.ControlPlane
	// root is the repository; out is where the image was built
	// (IMAGE_OUTPUT); hostTarball is the docker tarball (IMAGE_TARBALL).
	root, out, hostTarball string
)

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger.
	ctrllog.SetLogger(klog.NewKlogr())
	var err error
	if root, err = repoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	if out, err = os.MkdirTemp("", "batch-scheduler-image-"); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	hostTarball = filepath.Join(out, "host.tar")
	start := time.Now()
	if err := buildImage(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		_ = os.RemoveAll(out)
		os.Exit(1)
	}
	fmt.Printf("image: make image took %s\n", time.Since(start).Round(time.Second))
	// The scheduler needs nothing but the API server: the pod is bound to
	// a node object that no kubelet runs.
	controlplane.RunTests("image", &cp, func() int {
		defer os.RemoveAll(out)
		return m.Run()
	}, controlplane.WithoutCluster())
}

// buildImage runs make image, as a user would, with the version, commit
// and date above (so through the Makefile's LDFLAGS), into out.
func buildImage() error {
	cmd := exec.Command("make", "--no-print-directory", "image",
		"VERSION="+version, "GIT_COMMIT="+revision, "BUILD_DATE="+buildDate)
	cmd.Dir = root
	cmd.Env = append(withoutMakeVars(os.Environ()),
		"IMAGE_OUTPUT="+out,
		"IMAGE_PLATFORMS="+strings.Join(platforms, ","),
		"IMAGE_TARBALL="+hostTarball,
		"IMAGE_REPOSITORY=", "IMAGE_TAG=", "IMAGE_SOURCE=", "SOURCE_DATE_EPOCH=")
	output, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("make image: %w\n%s", err, output)
	}
	return nil
}

// withoutMakeVars drops the variables of a make this test may run under
// (make test): the inner make must not think it is a sub-make of it.
func withoutMakeVars(env []string) []string {
	var kept []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		kept = append(kept, kv)
	}
	return kept
}

// repoRoot walks up from the working directory to this module's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/batch-scheduler/batch-scheduler\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository root: no go.mod of github.com/batch-scheduler/batch-scheduler above the working directory")
		}
		dir = parent
	}
}
