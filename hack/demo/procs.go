package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

const (
	// binDir is where the demo builds the example programs it runs as
	// separate processes, relative to the working directory.
	binDir = "_output/demo/bin"
	// processStopTimeout bounds a process's graceful stop after SIGTERM;
	// then it is killed.
	processStopTimeout = 10 * time.Second
)

// buildExamples builds the example programs the demo runs (pkgs, e.g.
// "./examples/vm-manager") into binDir with the go command of $GO (set by
// make) or the one on $PATH, and returns binDir. $DEMO_GO_BUILD_FLAGS,
// split on spaces, are added to go build's flags (test/demo sets -race
// when it has it, so that the build reuses the packages its own build
// compiled).
func buildExamples(ctx context.Context, pkgs ...string) (string, error) {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", binDir, err)
	}
	args := append([]string{"build", "-o", binDir + string(filepath.Separator)}, strings.Fields(os.Getenv("DEMO_GO_BUILD_FLAGS"))...)
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", goCmd, strings.Join(args, " "), err, out)
	}
	return binDir, nil
}

// process is an example program the demo started as a child process. It
// runs in its own process group, so that Ctrl-C in the terminal reaches
// the demo only, and the demo stops its children in order.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// addr is the host:port it wrote to its --address-file.
	addr string

	// done is closed when the process has exited, with Wait's error in
	// err.
	done chan struct{}
	err  error
}

// children are the processes started and not yet stopped, for
// killChildren.
var children = struct {
	sync.Mutex
	all map[*process]bool
}{all: map[*process]bool{}}

// startProcess starts bin with args plus --address-file, logging to
// _output/demo/<name>.log, and waits until it has written the address it
// listens on (the programs listen once they are ready).
func startProcess(ctx context.Context, name, bin string, args ...string) (*process, error) {
	dir := filepath.Dir(logPath)
	addrFile := filepath.Join(dir, name+".addr")
	if err := os.Remove(addrFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing the old address file of %s: %w", name, err)
	}
	p := &process{name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the log file of %s: %w", name, err)
	}
	defer logFile.Close() // the child keeps its own descriptor
	p.cmd = exec.Command(bin, append(args, "--address-file", addrFile)...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = childProcAttr()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	children.Lock()
	children.all[p] = true
	children.Unlock()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	err = wait.PollUntilContextTimeout(ctx, pollInterval, waitTimeout, true, func(context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("%s exited before listening (%v); see %s", name, p.err, p.logPath)
		default:
		}
		b, err := os.ReadFile(addrFile)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			return false, nil
		}
		p.addr = strings.TrimSpace(string(b))
		return true, nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("waiting for %s to listen: %w", name, err), p.stop())
	}
	return p, nil
}

// url is the base URL of the process's HTTP listener.
func (p *process) url() string { return "http://" + p.addr }

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to processStopTimeout for a clean exit,
// then kills the process. A process that exited on its own, or not with
// status 0 after SIGTERM, is an error naming its log.
func (p *process) stop() error {
	defer func() {
		children.Lock()
		delete(children.all, p)
		children.Unlock()
	}()
	if p.exited() {
		return fmt.Errorf("%s had exited on its own (%v); see %s", p.name, p.err, p.logPath)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending SIGTERM to %s: %w", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(processStopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed; see %s", p.name, processStopTimeout, p.logPath)
	}
	if p.err != nil {
		return fmt.Errorf("%s exited after SIGTERM: %w; see %s", p.name, p.err, p.logPath)
	}
	return nil
}

// killChildren kills every child process still running, for a demo that
// must exit at once.
func killChildren() {
	children.Lock()
	defer children.Unlock()
	for p := range children.all {
		_ = p.cmd.Process.Kill()
	}
}
