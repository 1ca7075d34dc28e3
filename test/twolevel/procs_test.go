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

package twolevel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// httpClient is used for every call to the programs.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// process is one of the built programs running as a child process
// (harness.Process), stopped when the test ends; its log is printed when
// the test fails.
type process struct{ *harness.Process }

// manage stops p (SIGTERM, then SIGKILL) when the test ends.
func manage(t *testing.T, p *harness.Process) process {
	t.Helper()
	t.Cleanup(func() {
		process{p}.terminate(t)
		if t.Failed() {
			process{p}.logTail(t, 60)
		}
	})
	return process{p}
}

// terminate stops the process (SIGTERM, then SIGKILL); it returns at once
// if the process has exited already.
func (p process) terminate(t *testing.T) {
	t.Helper()
	if p.Exited() {
		return
	}
	if err := p.Stop(); err != nil {
		t.Error(err)
	}
}

// kill sends SIGKILL and waits for the exit.
func (p process) kill() { p.Kill() }

// logTail logs the last n lines of the process's output.
func (p process) logTail(t *testing.T, n int) {
	t.Helper()
	t.Logf("last lines of %s's output:\n%s", p.Spec.Name, p.Tail(n))
}

// call sends method url with body (JSON, may be empty) and returns the
// status code and the answer.
func call(ctx context.Context, method, url, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s %s: reading the answer: %w", method, url, err)
	}
	return resp.StatusCode, b, nil
}

// mustCall is call that fails the test unless the status is one of want.
func mustCall(t *testing.T, method, url, body string, want ...int) []byte {
	t.Helper()
	code, b, err := call(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if code == w {
			return b
		}
	}
	t.Fatalf("%s %s %s: HTTP %d %s, want one of %v", method, url, body, code, b, want)
	return nil
}

// getJSON fetches url into v.
func getJSON(ctx context.Context, url string, v any) error {
	_, err := harness.CallJSON(ctx, http.MethodGet, url, nil, v)
	return err
}

// framework is one entry of the allocator's registry.
type framework = harness.Framework

// allocatorOptions are the flags of one allocator run.
type allocatorOptions struct {
	// listen is --listen; empty means a free port.
	listen string
	// frameworks are written to the --config file.
	frameworks []framework
	// stateFile is --state-file, if any.
	stateFile string
	// interval, idleTimeout and grantTTL are the flags of the same name;
	// zero leaves the program's default (interval defaults to 300ms here).
	interval, idleTimeout, grantTTL time.Duration
}

// allocatorProc is a running allocator.
type allocatorProc struct {
	process
	*harness.Allocator
	url  string
	opts allocatorOptions
}

// startAllocator runs the allocator binary against the control plane.
func startAllocator(t *testing.T, o allocatorOptions) *allocatorProc {
	t.Helper()
	if o.interval == 0 {
		o.interval = 300 * time.Millisecond
	}
	a, err := harness.StartAllocator(t.Context(), harness.AllocatorOptions{Bin: allocatorBin, Dir: t.TempDir(), Kubeconfig: cp.KubeconfigPath,
		Listen: o.listen, Frameworks: o.frameworks, StateFile: o.stateFile, Interval: o.interval, IdleTimeout: o.idleTimeout, GrantTTL: o.grantTTL})
	if err != nil {
		t.Fatal(err)
	}
	return &allocatorProc{process: manage(t, a.Process), Allocator: a, url: a.URL(), opts: o}
}

// grants lists the allocator's grants.
func (a *allocatorProc) grants(ctx context.Context) ([]bsv1.Grant, error) { return a.Grants(ctx) }

// liveGrant is the cpu (milli) of framework's live grant on node at now:
// zero when there is none or it is revoked or expired.
func liveGrantMilli(grants []bsv1.Grant, framework, node string, now time.Time) int64 {
	var sum int64
	for _, g := range grants {
		if g.Spec.Framework != framework || g.Spec.NodeName != node {
			continue
		}
		if g.Status.Phase != "" && g.Status.Phase != bsv1.GrantActive {
			continue
		}
		if g.Spec.ExpiresAt != nil && !now.Before(g.Spec.ExpiresAt.Time) {
			continue
		}
		sum += g.Spec.Resources.Cpu().MilliValue()
	}
	return sum
}

// waitGrants polls the grants until cond holds.
func (a *allocatorProc) waitGrants(t *testing.T, what string, timeout time.Duration, cond func([]bsv1.Grant) bool) []bsv1.Grant {
	t.Helper()
	var last []bsv1.Grant
	var lastErr error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		gs, err := a.grants(ctx)
		if lastErr = err; err != nil {
			return false, nil
		}
		last = gs
		return cond(last), nil
	})
	if err != nil {
		t.Fatalf("waiting for grants where %s: %v (last error %v); last grants:\n%s", what, err, lastErr, describeGrants(last))
	}
	return last
}

// describeGrants is one line per grant.
func describeGrants(gs []bsv1.Grant) string {
	var b strings.Builder
	for _, g := range gs {
		exp := ""
		if g.Spec.ExpiresAt != nil {
			exp = " expires " + g.Spec.ExpiresAt.Format(time.RFC3339Nano)
		}
		fmt.Fprintf(&b, "  %s: cpu %s memory %s phase %q%s\n", g.Name, g.Spec.Resources.Cpu(), g.Spec.Resources.Memory(), g.Status.Phase, exp)
	}
	return b.String()
}

// revoke revokes grant name ("<framework>.<node>").
func (a *allocatorProc) revoke(t *testing.T, name string) {
	t.Helper()
	if _, err := harness.CallJSON(t.Context(), http.MethodPost, a.url+"/grants/"+name+"/revoke", map[string]string{"message": "e2e revocation"}, nil); err != nil {
		t.Fatal(err)
	}
}

// putFramework registers or replaces a framework.
func (a *allocatorProc) putFramework(t *testing.T, f framework) {
	t.Helper()
	if err := a.Register(t.Context(), f); err != nil {
		t.Fatal(err)
	}
}

// vmManagerProc is a running VM manager.
type vmManagerProc struct {
	process
	m    *harness.VMManager
	url  string
	opts vmManagerOptions
}

// vmManagerOptions are the flags of one VM manager run.
type vmManagerOptions struct {
	// listen is --listen; empty means a free port (which a restart does
	// not keep).
	listen string
	// framework and grantsURL make it a framework under the allocator at
	// grantsURL (two-level); empty, it runs hybrid.
	framework, grantsURL string
	// stateFile is --state-file, if any.
	stateFile string
	// ledger runs it in ledger mode (hybrid only) on the nodes of
	// hostSelector, waiting for batch-scheduler to join.
	ledger       bool
	hostSelector string
}

// startVMManager runs the VM manager binary: hybrid when framework is
// empty, else two-level under the allocator at grantsURL.
func startVMManager(t *testing.T, listen, framework, grantsURL string) *vmManagerProc {
	t.Helper()
	return startVMManagerWith(t, vmManagerOptions{listen: listen, framework: framework, grantsURL: grantsURL})
}

// startVMManagerWith runs the VM manager binary with o.
func startVMManagerWith(t *testing.T, o vmManagerOptions) *vmManagerProc {
	t.Helper()
	m, err := harness.StartVMManager(t.Context(), harness.VMManagerOptions{Bin: vmManagerBin, Dir: t.TempDir(), Kubeconfig: cp.KubeconfigPath,
		Listen: o.listen, Framework: o.framework, GrantsURL: o.grantsURL, StateFile: o.stateFile, Ledger: o.ledger, HostSelector: o.hostSelector})
	if err != nil {
		t.Fatal(err)
	}
	return &vmManagerProc{process: manage(t, m.Process), m: m, url: m.URL(), opts: o}
}

// restart starts the manager again with the same flags, after it was
// killed; it keeps its URL only when its options name the address.
func (m *vmManagerProc) restart(t *testing.T) {
	t.Helper()
	n := startVMManagerWith(t, m.opts)
	if n.url != m.url {
		t.Fatalf("the restarted VM manager listens on %s, not %s: give it a fixed address", n.url, m.url)
	}
	m.process, m.m = n.process, n.m
}

// vmInfo is a VM as the manager's API shows it.
type vmInfo struct {
	Name    string `json:"name"`
	CPU     string `json:"cpu"`
	Memory  string `json:"memory"`
	Host    string `json:"host"`
	Phase   string `json:"phase"`
	Message string `json:"message"`
}

// createVM asks for a VM and returns the status code and the answer.
func (m *vmManagerProc) createVM(ctx context.Context, name, cpu, memory, host string) (int, string, error) {
	b, err := json.Marshal(map[string]string{"name": name, "cpu": cpu, "memory": memory, "host": host})
	if err != nil {
		return 0, "", err
	}
	if host == "" {
		b, _ = json.Marshal(map[string]string{"name": name, "cpu": cpu, "memory": memory})
	}
	code, body, err := call(ctx, http.MethodPost, m.url+"/vms", string(b))
	return code, string(body), err
}

// vms lists the manager's VMs.
func (m *vmManagerProc) vms(ctx context.Context) ([]vmInfo, error) {
	var l struct {
		Items []vmInfo `json:"items"`
	}
	if err := getJSON(ctx, m.url+"/vms", &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// waitHostPods waits until the manager counts podCPU (a quantity) of pods
// on node: it sees pods through its own informer, which may lag behind
// what the test read from the API server.
func (m *vmManagerProc) waitHostPods(t *testing.T, node, podCPU string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		hosts, err := m.m.Hosts(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, h := range hosts {
			if h.Name == node {
				last = "pods use " + h.Pods.Cpu().String() + " cpu"
				return h.Pods.Cpu().Cmp(resource.MustParse(podCPU)) == 0, nil
			}
		}
		last = "no such host"
		return false, nil
	})
	if err != nil {
		t.Fatalf("the VM manager never counted %s cpu of pods on %s: %s", podCPU, node, last)
	}
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := controlplane.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// scheduler is a batch-scheduler command running in this process
// (harness.Scheduler) with its endpoints on a plain HTTP loopback port
// (--insecure-port).
type scheduler struct {
	*harness.Scheduler
	name string
	url  string
}

// twoLevelConfig writes the configuration of a two-level scheduler of
// framework reading grants from allocatorURL and, unless vmURL is empty,
// the VM manager's ExternalWorkloads from vmURL (as docs/two-level.md
// sets it up), and returns its path.
func twoLevelConfig(t *testing.T, framework, allocatorURL, vmURL string, evictOnRevoke bool) string {
	t.Helper()
	body := fmt.Sprintf(`eventHandlers:
- name: two-level
  args: {framework: %s, evictOnRevoke: %t}
customInformers:
- name: allocator
  resource: Grant
  source: {http: {url: %q}}
`, framework, evictOnRevoke, allocatorURL)
	if vmURL != "" {
		body += fmt.Sprintf(`- name: vms
  resource: ExternalWorkload
  source: {http: {url: %q}}
`, vmURL)
	}
	return writeConfig(t, body)
}

// writeConfig writes a scheduler configuration file with body.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	content := "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n" + body
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startScheduler runs batch-scheduler named name on the nodes of pool,
// with its endpoints on port, until the test ends, and waits for /readyz.
func startScheduler(t *testing.T, name, pool string, port int, args ...string) *scheduler {
	t.Helper()
	s := launchScheduler(t, name, pool, port, args...)
	s.waitReady(t)
	return s
}

// launchScheduler is startScheduler without the wait for /readyz.
func launchScheduler(t *testing.T, name, pool string, port int, args ...string) *scheduler {
	t.Helper()
	hs, err := harness.StartScheduler(context.Background(), harness.SchedulerOptions{Kubeconfig: cp.KubeconfigPath,
		InsecureAddr: "127.0.0.1:" + strconv.Itoa(port),
		Args:         append([]string{"--scheduler-name", name, "--node-selector", poolLabel + "=" + pool}, args...)})
	if err != nil {
		t.Fatal(err)
	}
	s := &scheduler{Scheduler: hs, name: name, url: hs.URL}
	t.Cleanup(func() {
		if code := s.stop(t); code != 0 {
			t.Errorf("batch-scheduler %s exited with %d: %s", name, code, s.Stderr())
		}
	})
	return s
}

// schedulerSpec is one two-level scheduler of startTwoLevel.
type schedulerSpec struct {
	name, framework string
	port            int
	// vmURL, if set, is the VM manager whose ExternalWorkloads the
	// scheduler counts.
	vmURL string
	// evictOnRevoke is the handler's arg of that name.
	evictOnRevoke bool
}

// startTwoLevel starts the two-level schedulers, waits until each serves
// its /demand (it does before it syncs), then starts the allocator with
// o, and waits until the schedulers are ready. The order matters: a
// framework whose demand report the allocator cannot read in its first
// round gets no share of the nodes (examples/allocator: only readable
// frameworks take part in the baseline split, and a latecomer gets
// capacity only from idle grants once it reports unmet demand).
func startTwoLevel(t *testing.T, o allocatorOptions, specs ...schedulerSpec) (*allocatorProc, []*scheduler) {
	t.Helper()
	return startTwoLevelWith(t, o, nil, specs...)
}

// startTwoLevelWith is startTwoLevel calling then, if not nil, once the
// allocator runs and before waiting for the schedulers to be ready (to
// start what they read besides the grants).
func startTwoLevelWith(t *testing.T, o allocatorOptions, then func(*allocatorProc), specs ...schedulerSpec) (*allocatorProc, []*scheduler) {
	t.Helper()
	return startFrameworks(t, o, then, func(sp schedulerSpec, args ...string) *scheduler {
		return launchScheduler(t, sp.name, poolName(t), sp.port, args...)
	}, specs...)
}

// twoLevelScheduler is a launched batch-scheduler, in-process or a child
// process.
type twoLevelScheduler interface {
	demandURL() string
	waitReady(t *testing.T)
}

// startFrameworks launches a two-level scheduler per spec with launch,
// waits until each serves its /demand (it does before it syncs), then
// starts the allocator with o, calls then, and waits until the schedulers
// are ready (see startTwoLevel for why in this order).
func startFrameworks[S twoLevelScheduler](t *testing.T, o allocatorOptions, then func(*allocatorProc), launch func(sp schedulerSpec, args ...string) S, specs ...schedulerSpec) (*allocatorProc, []S) {
	t.Helper()
	if o.listen == "" {
		o.listen = "127.0.0.1:" + strconv.Itoa(freePort(t))
	}
	allocatorURL := "http://" + o.listen
	var scheds []S
	for _, sp := range specs {
		scheds = append(scheds, launch(sp, "--event-handler=two-level", "--config-path",
			twoLevelConfig(t, sp.framework, allocatorURL, sp.vmURL, sp.evictOnRevoke)))
	}
	for i, s := range scheds {
		waitDemand(t, specs[i].name, s.demandURL())
	}
	a := startAllocator(t, o)
	if then != nil {
		then(a)
	}
	for _, s := range scheds {
		s.waitReady(t)
	}
	return a, scheds
}

// start runs the command again with its flags and waits until it is
// ready.
func (s *scheduler) start(t *testing.T) {
	t.Helper()
	s.Start(context.Background())
	s.waitReady(t)
}

// waitReady polls /readyz until it answers 200.
func (s *scheduler) waitReady(t *testing.T) {
	t.Helper()
	if err := s.WaitReady(t.Context(), 60*time.Second); err != nil {
		t.Fatalf("batch-scheduler %s never became ready: %v", s.name, err)
	}
}

// stop cancels the command and returns its exit code: 0 when it stopped
// cleanly or was not running, 1 otherwise (Stderr says why).
func (s *scheduler) stop(t *testing.T) int {
	t.Helper()
	if err := s.Stop(); err != nil {
		t.Log(err)
		return 1
	}
	return 0
}

// restart stops the scheduler and starts it again with the same flags.
func (s *scheduler) restart(t *testing.T) {
	t.Helper()
	if code := s.stop(t); code != 0 {
		t.Fatalf("batch-scheduler %s exited with %d on stop: %s", s.name, code, s.Stderr())
	}
	s.start(t)
}

// demandURL is where the allocator reads the scheduler's demand.
func (s *scheduler) demandURL() string { return s.DemandURL() }

// demand fetches the scheduler's demand report.
func (s *scheduler) demand(ctx context.Context) (*demand.Report, error) { return s.Demand(ctx) }

// dump fetches /debug/cache.
func (s *scheduler) dump(ctx context.Context) (*cache.Dump, error) { return s.Dump(ctx) }
