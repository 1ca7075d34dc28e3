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

package twolevel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var (
	cp *controlplane.ControlPlane
	// allocatorBin, vmManagerBin and schedulerBin are the programs built
	// by TestMain; schedulerBin runs where a test kills batch-scheduler.
	allocatorBin, vmManagerBin, schedulerBin string
)

func TestMain(m *testing.M) {
	// The schedulers the tests run in-process set the process's logging
	// up; do it before any test goroutine logs.
	if err := app.ApplyLogging(); err != nil {
		fmt.Fprintln(os.Stderr, "applying the logging configuration:", err)
		os.Exit(1)
	}
	controlplane.RunTests("twolevel", &cp, func() int {
		dir, err := os.MkdirTemp("", "twolevel-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "twolevel: creating the directory of the programs:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := buildPrograms(dir); err != nil {
			fmt.Fprintln(os.Stderr, "twolevel:", err)
			return 1
		}
		allocatorBin = filepath.Join(dir, "allocator")
		vmManagerBin = filepath.Join(dir, "vm-manager")
		schedulerBin = filepath.Join(dir, "batch-scheduler")
		return m.Run()
	})
}

// buildPrograms builds examples/allocator, examples/vm-manager and
// batch-scheduler into dir with one go build run from the repository root.
func buildPrograms(dir string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if err := controlplane.GoBuild(root, dir, "./examples/allocator", "./examples/vm-manager", "./cmd/batch-scheduler"); err != nil {
		return fmt.Errorf("building the allocator, the VM manager and batch-scheduler: %w", err)
	}
	return nil
}

// repoRoot walks up from the working directory to the directory holding
// go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}
