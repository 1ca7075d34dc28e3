package kueue

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/inproc"
)

// scheduler is one of the two schedulers a Job is run under.
type scheduler struct {
	// name names it in messages, namespaces and nodes.
	name string
	// schedulerName is the spec.schedulerName it serves.
	schedulerName string
	// start runs it until the test ends; stop stops it sooner.
	start func(t *testing.T) (stop func())
}

var (
	kubeScheduler  = scheduler{name: "kube-scheduler", schedulerName: v1.DefaultSchedulerName, start: startKubeScheduler}
	batchScheduler = scheduler{name: "batch-scheduler", schedulerName: "batch-scheduler", start: startBatchScheduler}
)

// kubeSchedulerConfig: the default profile (default-scheduler), the test's
// admin kubeconfig, no leader election.
const kubeSchedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
`

// startKubeScheduler runs bin/kube-scheduler (v1.37.1) as a child process;
// its log is shown if the test fails.
func startKubeScheduler(t *testing.T) (stop func()) {
	t.Helper()
	assets, err := controlplane.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(assets, "kube-scheduler")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kube-scheduler binary missing (build it with 'make control-plane'): %v", err)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, kubeSchedulerConfig, cp.KubeconfigPath), 0o600); err != nil {
		t.Fatalf("writing kube-scheduler's configuration: %v", err)
	}
	logPath := filepath.Join(dir, "kube-scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("creating kube-scheduler's log: %v", err)
	}
	cmd := exec.Command(bin, "--config", cfgPath, "--secure-port=0", "-v=2")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
			_ = logFile.Close()
			if t.Failed() {
				if data, err := os.ReadFile(logPath); err == nil {
					if len(data) > 4000 {
						data = data[len(data)-4000:]
					}
					t.Logf("kube-scheduler log (last 4000 bytes):\n%s", data)
				}
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// startBatchScheduler runs the batch-scheduler command in this process,
// with its default profile.
func startBatchScheduler(t *testing.T) (stop func()) {
	t.Helper()
	return inproc.StartScheduler(t, cp.KubeconfigPath)
}
