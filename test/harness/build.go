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
