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

package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// Build builds the packages pkgs (as the go command names them, e.g.
// "./examples/vm-manager") into outDir with the go command of $GO (set by
// make) or the one on $PATH, run in dir. The binaries get the race
// detector exactly when the calling binary has it (see
// controlplane.GoBuild): a demo built with -race by its test builds its
// programs with -race too, reusing the packages already compiled.
func Build(ctx context.Context, dir, outDir string, pkgs ...string) error {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", outDir, err)
	}
	args := []string{"build", "-o", outDir + string(os.PathSeparator)}
	if controlplane.RaceEnabled {
		args = append(args, "-race")
	}
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s (in %q): %w\n%s", goCmd, strings.Join(args, " "), dir, err, out)
	}
	return nil
}
