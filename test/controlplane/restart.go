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
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// apiServerProcess is the kube-apiserver the control plane runs now:
// first the one envtest started, then the one RestartAPIServer started
// with the same command line (same ports, certificates and etcd, hence
// the same data and the same credentials for every client).
type apiServerProcess struct {
	// pid is the process id of the running kube-apiserver, 0 once it
	// was stopped or killed.
	pid int
	// args is its command line, without the program.
	args []string
	// cmd and exited are set for a process RestartAPIServer started;
	// exited is closed once cmd.Wait returned.
	cmd    *exec.Cmd
	exited chan struct{}
	// starts counts the restarts, to name their log files.
	starts int
}

// EtcdEndpoint returns the client URL of etcd, e.g. for an etcd client
// that compacts its history.
func (cp *ControlPlane) EtcdEndpoint() string {
	return cp.env.ControlPlane.Etcd.URL.String()
}

// APIServerAddress returns the host:port kube-apiserver serves on; it
// does not change across restarts.
func (cp *ControlPlane) APIServerAddress() string {
	return strings.TrimPrefix(cp.Config.Host, "https://")
}

// KillAPIServer sends SIGKILL to kube-apiserver and waits for it to exit:
// requests in flight and watches end without a response, as in a crash.
// RestartAPIServer starts it again.
func (cp *ControlPlane) KillAPIServer(ctx context.Context) error {
	return cp.signalAPIServer(ctx, syscall.SIGKILL)
}

// StopAPIServer sends SIGTERM to kube-apiserver and waits for it to exit
// (it drains its requests first). RestartAPIServer starts it again.
func (cp *ControlPlane) StopAPIServer(ctx context.Context) error {
	return cp.signalAPIServer(ctx, syscall.SIGTERM)
}

func (cp *ControlPlane) signalAPIServer(ctx context.Context, sig syscall.Signal) error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	if err := cp.findAPIServer(); err != nil {
		return err
	}
	p := &cp.api
	if p.pid == 0 {
		return errors.New("signalling kube-apiserver: it is not running")
	}
	if err := syscall.Kill(p.pid, sig); err != nil {
		return fmt.Errorf("sending %s to kube-apiserver (pid %d): %w", sig, p.pid, err)
	}
	if err := cp.waitAPIServerExit(ctx); err != nil {
		return fmt.Errorf("after %s: %w", sig, err)
	}
	p.pid = 0
	return nil
}

// waitAPIServerExit waits until the current kube-apiserver process is
// gone. envtest reaps the first one; this package reaps the others.
func (cp *ControlPlane) waitAPIServerExit(ctx context.Context) error {
	p := &cp.api
	if p.exited != nil {
		select {
		case <-p.exited:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-apiserver (pid %d) to exit: %w", p.pid, ctx.Err())
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", p.pid))
		return errors.Is(err, os.ErrNotExist), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-apiserver (pid %d) to exit: %w", p.pid, err)
	}
	return nil
}

// findAPIServer records the pid and command line of the kube-apiserver
// envtest started, the first time it is needed: the child of this process
// that runs the kube-apiserver binary. Only Linux (/proc) is supported.
func (cp *ControlPlane) findAPIServer() error {
	p := &cp.api
	if p.args != nil {
		return nil
	}
	want, err := filepath.EvalSymlinks(cp.env.ControlPlane.APIServer.Path)
	if err != nil {
		return fmt.Errorf("resolving the kube-apiserver binary %s: %w", cp.env.ControlPlane.APIServer.Path, err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("finding the kube-apiserver process (needs /proc): %w", err)
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || parentOf(pid) != self {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || exe != want {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			return fmt.Errorf("reading the command line of kube-apiserver (pid %d): %w", pid, err)
		}
		fields := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
		p.pid, p.args = pid, fields[1:]
		return nil
	}
	return fmt.Errorf("finding the kube-apiserver process: no child of pid %d runs %s", self, want)
}

// parentOf returns the parent pid of pid, or -1.
func parentOf(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name, in parentheses, may hold spaces: fields start
	// after its closing parenthesis (state, ppid, ...).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return -1
	}
	return ppid
}

// RestartAPIServer starts kube-apiserver again after KillAPIServer or
// StopAPIServer, with the same command line (same port, certificates and
// etcd data), and waits until it answers /readyz. Its output goes to
// apiserver-<n>.log in Dir.
//
// A kube-apiserver that exits while starting is started again, up to
// restartAttempts times in all: on a loaded machine its port can be held
// for a moment by another process's outgoing connection (the port is
// from the ephemeral range), or etcd can be slow to answer its first
// check. Each failure is logged with the end of its log; the last one is
// returned.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	p := &cp.api
	if p.args == nil {
		return errors.New("restarting kube-apiserver: it was never stopped")
	}
	if p.pid != 0 {
		return fmt.Errorf("restarting kube-apiserver: it is still running (pid %d)", p.pid)
	}
	const restartAttempts = 3
	var err error
	for attempt := 1; attempt <= restartAttempts; attempt++ {
		var exitedEarly bool
		exitedEarly, err = cp.startAPIServerLocked(ctx)
		if !exitedEarly {
			return err
		}
		klog.ErrorS(err, "kube-apiserver exited while starting", "attempt", attempt, "of", restartAttempts)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * time.Second):
		}
	}
	return err
}

// startAPIServerLocked starts one kube-apiserver with p.args and waits
// until it is ready. exitedEarly reports that it exited before (p.pid is
// then 0 again). cp.apiMu is held.
func (cp *ControlPlane) startAPIServerLocked(ctx context.Context) (exitedEarly bool, err error) {
	p := &cp.api
	p.starts++
	logPath := filepath.Join(cp.Dir, fmt.Sprintf("apiserver-%d.log", p.starts))
	out, err := os.Create(logPath)
	if err != nil {
		return false, fmt.Errorf("creating the kube-apiserver log %s: %w", logPath, err)
	}
	cmd := exec.Command(cp.env.ControlPlane.APIServer.Path, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return false, fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(exited)
	}()
	p.pid, p.cmd, p.exited = cmd.Process.Pid, cmd, exited
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			exitedEarly = true
			return false, fmt.Errorf("kube-apiserver exited while starting; its log %s ends with:\n%s", logPath, Tail(logPath, 20))
		default:
		}
		body, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
	if exitedEarly {
		p.pid = 0
	}
	if err != nil {
		return exitedEarly, fmt.Errorf("waiting for the restarted kube-apiserver to be ready: %w", err)
	}
	return false, nil
}

// stopRestartedAPIServer stops a kube-apiserver RestartAPIServer started,
// before envtest stops etcd and removes the directories it uses.
func (cp *ControlPlane) stopRestartedAPIServer() error {
	cp.apiMu.Lock()
	defer cp.apiMu.Unlock()
	p := &cp.api
	if p.cmd == nil || p.pid == 0 {
		return nil
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
		<-p.exited
	}
	p.pid = 0
	return nil
}
