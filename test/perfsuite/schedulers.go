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

package perfsuite

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// Scheduler names the two schedulers the suite compares.
type Scheduler string

const (
	KubeScheduler  Scheduler = "kube-scheduler"
	BatchScheduler Scheduler = "batch-scheduler"
)

// SchedulerSpec says how to start one scheduler for one workload.
type SchedulerSpec struct {
	Which Scheduler
	// Binary is the scheduler's executable.
	Binary string
	// Kubeconfig reaches the control plane as an admin.
	Kubeconfig string
	// Gates are the workload's feature gates (kube-scheduler's flag;
	// batch-scheduler has none).
	Gates map[string]bool
	// ConfigPath is the test case's scheduler configuration, or "".
	ConfigPath string
	// QPS and Burst are the client's limits, the same for both.
	QPS, Burst int
	// Dir holds the configuration, certificates and log.
	Dir string
	// Verbosity is the process's -v; 0 means 1.
	Verbosity int
}

// RunningScheduler is a started scheduler process.
type RunningScheduler struct {
	Spec    SchedulerSpec
	cmd     *exec.Cmd
	exited  chan error
	logPath string
	addr    string
	https   bool
	client  *http.Client
	// histogram is the decision-time histogram's family name, and
	// result the value its result label must have ("" for none).
	histogram, result string
}

// kubeSchedulerBase is the part of kube-scheduler's configuration the
// runner owns: the kubeconfig, no leader election, the client's limits.
// batchingGate is the feature gate both schedulers know: kube-scheduler's
// opportunistic batching and our reuse of rankings (pkg/scheduler).
const batchingGate = "OpportunisticBatching"

func kubeSchedulerConfig(spec SchedulerSpec) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion": "kubescheduler.config.k8s.io/v1",
		"kind":       "KubeSchedulerConfiguration",
	}
	if spec.ConfigPath != "" {
		data, err := os.ReadFile(spec.ConfigPath)
		if err != nil {
			return nil, fmt.Errorf("reading the test case's scheduler configuration: %w", err)
		}
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", spec.ConfigPath, err)
		}
	}
	cfg["clientConnection"] = map[string]any{"kubeconfig": spec.Kubeconfig, "qps": spec.QPS, "burst": spec.Burst}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	return yaml.Marshal(cfg)
}

// Start starts the scheduler and waits for its /readyz.
func Start(ctx context.Context, spec SchedulerSpec) (*RunningScheduler, error) {
	addr, err := freeAddress()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	r := &RunningScheduler{Spec: spec, addr: addr, exited: make(chan error, 1), logPath: filepath.Join(spec.Dir, string(spec.Which)+".log")}
	var args []string
	switch spec.Which {
	case KubeScheduler:
		data, err := kubeSchedulerConfig(spec)
		if err != nil {
			return nil, err
		}
		cfgPath := filepath.Join(spec.Dir, "kube-scheduler.yaml")
		if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing kube-scheduler's configuration: %w", err)
		}
		// /metrics joins the paths kube-scheduler serves without
		// credentials; its certificate is self-signed into --cert-dir.
		args = []string{"--config", cfgPath, "--bind-address=127.0.0.1", "--secure-port", port,
			"--cert-dir", filepath.Join(spec.Dir, "certs"),
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*"}
		if g := GateFlag(spec.Gates); g != "" {
			args = append(args, "--feature-gates="+g)
		}
		// Its attempt histogram runs to the end of the bind; the
		// algorithm's (filter, score, pick) is its decision.
		r.https, r.histogram = true, "scheduler_scheduling_algorithm_duration_seconds"
	case BatchScheduler:
		// The suite's pods name no scheduler, so they are
		// default-scheduler's: batch-scheduler takes that name, as a
		// user replacing kube-scheduler would run it.
		args = []string{"--kubeconfig", spec.Kubeconfig, "--scheduler-name", "default-scheduler",
			"--secure-port=0", "--insecure-bind-address=127.0.0.1", "--insecure-port", port,
			"--leader-elect=false", "--kube-api-qps", strconv.Itoa(spec.QPS), "--kube-api-burst", strconv.Itoa(spec.Burst)}
		if spec.ConfigPath != "" {
			args = append(args, "--config-path", spec.ConfigPath)
		}
		// Of the workload's gates it knows one: a workload that turns
		// kube-scheduler's opportunistic batching off turns off our
		// reuse of rankings too, so that the row compares like with like.
		if on, ok := spec.Gates[batchingGate]; ok {
			args = append(args, "--feature-gates="+GateFlag(map[string]bool{batchingGate: on}))
		}
		// Its attempt histogram runs from pop to decision, before
		// the bind.
		r.histogram, r.result = "batch_scheduler_scheduling_attempt_duration_seconds", "scheduled"
	default:
		return nil, fmt.Errorf("unknown scheduler %q", spec.Which)
	}
	logFile, err := os.Create(r.logPath)
	if err != nil {
		return nil, fmt.Errorf("creating %s's log: %w", spec.Which, err)
	}
	r.cmd = exec.Command(spec.Binary, append(args, fmt.Sprintf("-v=%d", max(1, spec.Verbosity)))...)
	r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", spec.Binary, err)
	}
	go func() {
		r.exited <- r.cmd.Wait()
		_ = logFile.Close()
	}()
	r.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // its own self-signed certificate, on loopback
	}}
	if err := r.waitReady(ctx, 3*time.Minute); err != nil {
		r.Stop()
		return nil, fmt.Errorf("%s: %w\n%s", spec.Which, err, r.LogTail(3000))
	}
	return r, nil
}

func (r *RunningScheduler) url(path string) string {
	if r.https {
		return "https://" + r.addr + path
	}
	return "http://" + r.addr + path
}

func (r *RunningScheduler) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-r.exited:
			r.exited <- err
			return fmt.Errorf("exited before it was ready: %v", err)
		case <-ctx.Done():
			return context.Cause(ctx)
		default:
		}
		if resp, err := r.client.Get(r.url("/readyz")); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("/readyz not ready within %s", timeout)
}

// Decisions scrapes the scheduler's histogram of decision times, summed
// over its labels: kube-scheduler's scheduling_algorithm_duration_seconds
// and batch-scheduler's successful attempts (result="scheduled", one per
// cycle; a gang's cycle decides every member).
func (r *RunningScheduler) Decisions() (histogram, error) {
	resp, err := r.client.Get(r.url("/metrics"))
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", r.Spec.Which, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", r.Spec.Which, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s's metrics: %w", r.Spec.Which, err)
	}
	h := histogram{math.Inf(1): 0}
	fam, ok := families[r.histogram]
	if !ok {
		return h, nil
	}
	for _, m := range fam.GetMetric() {
		if r.result != "" && !hasLabel(m.GetLabel(), "result", r.result) || m.GetHistogram() == nil {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			// The +Inf bucket, which the text format lists, is the
			// sample count, added below.
			if !math.IsInf(b.GetUpperBound(), 1) {
				h[b.GetUpperBound()] += float64(b.GetCumulativeCount())
			}
		}
		h[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
	}
	return h, nil
}

func hasLabel[L interface {
	GetName() string
	GetValue() string
}](labels []L, name, value string) bool {
	for _, l := range labels {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// Profile takes a CPU profile of the scheduler for d and writes it to
// path (both schedulers serve /debug/pprof; the runner's own port lets
// it in without credentials).
func (r *RunningScheduler) Profile(path string, d time.Duration) error {
	client := &http.Client{Timeout: d + 30*time.Second, Transport: r.client.Transport}
	resp, err := client.Get(r.url(fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds()))))
	if err != nil {
		return fmt.Errorf("profiling %s: %w", r.Spec.Which, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiling %s: %s", r.Spec.Which, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// CPU is the process's user + system time so far.
func (r *RunningScheduler) CPU() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// Exited reports whether the process has ended, and how.
func (r *RunningScheduler) Exited() (bool, error) {
	select {
	case err := <-r.exited:
		r.exited <- err
		return true, err
	default:
		return false, nil
	}
}

// Stop stops the process: SIGTERM, then SIGKILL after 20s.
func (r *RunningScheduler) Stop() {
	if done, _ := r.Exited(); done {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.exited:
		r.exited <- err
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// LogTail returns the last n bytes of the process's log.
func (r *RunningScheduler) LogTail(n int) string {
	data, err := os.ReadFile(r.logPath)
	if err != nil {
		return ""
	}
	return string(data[max(0, len(data)-n):])
}

// KeepLog copies the process's log to path.
func (r *RunningScheduler) KeepLog(path string) error {
	data, err := os.ReadFile(r.logPath)
	if err != nil {
		return fmt.Errorf("reading %s's log: %w", r.Spec.Which, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("keeping %s's log: %w", r.Spec.Which, err)
	}
	return nil
}

func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
