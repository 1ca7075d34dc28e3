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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// ListenTimeout bounds the wait for a program to write its address
	// file (it does once it listens).
	ListenTimeout = 60 * time.Second
	// StopTimeout bounds a process's graceful stop after SIGTERM; then
	// it is killed.
	StopTimeout = 20 * time.Second
)

// ProcessSpec says how to start a child process.
type ProcessSpec struct {
	// Name names it in errors and its files.
	Name string
	// Bin and Args are the program and its flags.
	Bin  string
	Args []string
	// Dir holds its log, <Name>.log (output appended across restarts),
	// and its address file.
	Dir string
	// AddressFile adds --address-file <Dir>/<Name>.addr to Args and makes
	// Start wait until the program wrote the host:port it listens on
	// there (the example programs do once they are ready).
	AddressFile bool
	// Env is the program's environment, as exec.Cmd.Env: nil inherits
	// this process's, an empty (non-nil) slice starts it with none. To
	// add variables, pass append(os.Environ(), ...).
	Env []string
}

// Process is a program started as a child process in its own process
// group (so that Ctrl-C in a terminal reaches the parent only, which stops
// its children in order; on Linux the kernel kills it if the parent
// dies).
type Process struct {
	Spec ProcessSpec
	// LogPath receives its output; Addr is the host:port it wrote to its
	// address file, if it was asked to.
	LogPath, Addr string

	// r is the current run, replaced by Restart.
	r *run
}

// run is one start of a Process's program.
type run struct {
	cmd *exec.Cmd
	// done is closed when the program has exited, with Wait's error in
	// err.
	done chan struct{}
	err  error
	// killed is set by Kill, before the exit it causes.
	killed atomic.Bool
}

// children are the processes started and not yet stopped, for KillAll.
// The lock guards the map only.
var children = struct {
	sync.Mutex
	all map[*Process]bool
}{all: map[*Process]bool{}}

// StartProcess starts the program of spec and, with spec.AddressFile,
// waits (at most ListenTimeout) until it listens.
func StartProcess(ctx context.Context, spec ProcessSpec) (*Process, error) {
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the directory of %s: %w", spec.Name, err)
	}
	p := &Process{Spec: spec, LogPath: filepath.Join(spec.Dir, spec.Name+".log"), r: &run{done: make(chan struct{})}}
	args := spec.Args
	addrFile := filepath.Join(spec.Dir, spec.Name+".addr")
	if spec.AddressFile {
		if err := os.Remove(addrFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("removing the old address file of %s: %w", spec.Name, err)
		}
		args = append(append([]string(nil), args...), "--address-file", addrFile)
	}
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the log file of %s: %w", spec.Name, err)
	}
	defer logFile.Close() // the child keeps its own descriptor
	p.r.cmd = exec.Command(spec.Bin, args...)
	p.r.cmd.Stdout, p.r.cmd.Stderr = logFile, logFile
	p.r.cmd.Env = spec.Env
	p.r.cmd.SysProcAttr = childProcAttr()
	if err := p.r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", spec.Name, spec.Bin, err)
	}
	children.Lock()
	children.all[p] = true
	children.Unlock()
	r := p.r
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	if !spec.AddressFile {
		return p, nil
	}
	err = Poll(ctx, ListenTimeout, spec.Name+" to listen", p.Alive, func() (bool, error) {
		b, err := os.ReadFile(addrFile)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			return false, nil
		}
		p.Addr = strings.TrimSpace(string(b))
		return true, nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%w; see %s", err, p.LogPath), p.Stop())
	}
	return p, nil
}

// Restart starts the program again with the same spec, after it exited
// or was killed.
func (p *Process) Restart(ctx context.Context) error {
	n, err := StartProcess(ctx, p.Spec)
	if err != nil {
		return err
	}
	children.Lock()
	delete(children.all, n)
	*p = *n
	children.all[p] = true
	children.Unlock()
	return nil
}

// URL is the base URL of the process's HTTP listener.
func (p *Process) URL() string { return "http://" + p.Addr }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.r.done:
		return true
	default:
		return false
	}
}

// Alive is nil while the process runs, and says how it ended once it
// exited: the alive function of Poll.
func (p *Process) Alive() error {
	if !p.Exited() {
		return nil
	}
	return fmt.Errorf("%s exited (%v); see %s", p.Spec.Name, p.r.err, p.LogPath)
}

// Stop sends SIGTERM, waits up to StopTimeout for a clean exit, then
// kills the process. A process that had exited on its own, or that does
// not exit with status 0 after SIGTERM, is an error naming its log;
// stopping a process Kill ended is not.
func (p *Process) Stop() error {
	defer forget(p)
	if p.r.killed.Load() {
		<-p.r.done
		return nil
	}
	if p.Exited() {
		return fmt.Errorf("%s had exited on its own (%v); see %s", p.Spec.Name, p.r.err, p.LogPath)
	}
	if err := p.r.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending SIGTERM to %s: %w", p.Spec.Name, err)
	}
	select {
	case <-p.r.done:
	case <-time.After(StopTimeout):
		_ = p.r.cmd.Process.Kill()
		<-p.r.done
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed; see %s", p.Spec.Name, StopTimeout, p.LogPath)
	}
	if p.r.err != nil {
		return fmt.Errorf("%s exited after SIGTERM: %w; see %s", p.Spec.Name, p.r.err, p.LogPath)
	}
	return nil
}

// Done is closed once the process has exited; ExitError then says how.
func (p *Process) Done() <-chan struct{} { return p.r.done }

// ExitError is what waiting for the process returned (nil for status 0),
// once Done is closed; nil while it runs.
func (p *Process) ExitError() error {
	if !p.Exited() {
		return nil
	}
	return p.r.err
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.r.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.r.cmd.Process.Signal(sig) }

// Kill sends SIGKILL and waits for the exit.
func (p *Process) Kill() {
	defer forget(p)
	p.r.killed.Store(true)
	_ = p.r.cmd.Process.Kill()
	<-p.r.done
}

// Tail is the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", p.LogPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func forget(p *Process) {
	children.Lock()
	delete(children.all, p)
	children.Unlock()
}

// KillAll kills every child process still running, for a program that
// must exit at once.
func KillAll() {
	children.Lock()
	defer children.Unlock()
	for p := range children.all {
		_ = p.r.cmd.Process.Kill()
	}
}
