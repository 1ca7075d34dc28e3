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

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var (
	cp *controlplane.ControlPlane
	// binaries maps the name of each command under ../cmd to the path of
	// its build.
	binaries = map[string]string{}
)

func TestMain(m *testing.M) {
	controlplane.RunTests("e2e", &cp, func() int {
		dir, err := os.MkdirTemp("", "acme-scheduler-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: creating the build directory:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := build(dir, "acme-scheduler", "acme-scheduler-blank"); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		return m.Run()
	})
}

// build builds each command of ../cmd into dir, as a vendor's release
// would, and records where in binaries.
func build(dir string, names ...string) error {
	pkgs := make([]string, 0, len(names))
	for _, n := range names {
		pkgs = append(pkgs, "../cmd/"+n)
	}
	if err := controlplane.GoBuild(".", dir, pkgs...); err != nil {
		return err
	}
	for _, n := range names {
		binaries[n] = filepath.Join(dir, n)
	}
	return nil
}
