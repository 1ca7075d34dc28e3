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
