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
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kubeSchedulerConfig is kube-scheduler's configuration: its default
// profile (default-scheduler), the admin kubeconfig, no leader election,
// and the client's rate limits.
const kubeSchedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %d
  burst: %d
leaderElection:
  leaderElect: false
`

// StartKubeScheduler runs kube-scheduler v1.37.1 (bin/kube-scheduler, from
// make control-plane) against the control plane with its default profile,
// no leader election and no serving port, its client limited to qps
// requests per second in bursts of 2×qps (50 is kube-scheduler's
// default), until the test ends. The
// returned stop stops it sooner; it may be called more than once. Its log
// is in the test's temporary directory; the last 4000 bytes are logged if
// the test failed. args are more flags, e.g. --feature-gates=....
func (cp *ControlPlane) StartKubeScheduler(t testing.TB, qps int, args ...string) (stop func()) {
	t.Helper()
	assets, err := AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(assets, "kube-scheduler")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kube-scheduler binary missing (build it with 'make control-plane'): %v", err)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, kubeSchedulerConfig, cp.KubeconfigPath, qps, 2*qps), 0o600); err != nil {
		t.Fatalf("writing kube-scheduler's configuration: %v", err)
	}
	logPath := filepath.Join(dir, "kube-scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("creating kube-scheduler's log: %v", err)
	}
	cmd := exec.Command(bin, append([]string{"--config", cfgPath, "--secure-port=0", "-v=2"}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
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
					t.Logf("kube-scheduler log (last 4000 bytes):\n%s", data[max(0, len(data)-4000):])
				}
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
