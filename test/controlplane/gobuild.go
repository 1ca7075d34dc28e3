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

package controlplane

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// GoBuild builds the packages pkgs (as the go command names them, relative
// to dir) into outDir, running the go command in dir. The binaries get the
// race detector exactly when the calling test binary has it, so that the
// programs a test starts are checked as the test itself is, and so that
// their build reuses the packages the test build already compiled: a build
// with other flags compiles every dependency (client-go, component-base,
// ...) once more, which on a cold cache costs minutes of CPU.
func GoBuild(dir, outDir string, pkgs ...string) error {
	args := []string{"build", "-o", outDir + string(filepath.Separator)}
	if RaceEnabled {
		args = append(args, "-race")
	}
	args = append(args, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %q): %w\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}
