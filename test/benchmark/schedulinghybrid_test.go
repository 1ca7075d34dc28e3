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

package benchmark

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/nodeledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// The hybrid cluster of BenchmarkSchedulingHybrid.
const (
	// hybridLabel=hybridShared marks the hosts shared with the VM
	// manager: every other benchmark node. The VM manager's
	// --host-selector and the NodeLedger plugin's nodeSelector name it.
	hybridLabel  = "bench-shared"
	hybridShared = "vms"
	// hybridNoHost is the plugin's nodeSelector in the ledger-unshared
	// phase: a valid selector no node matches.
	hybridNoHost = hybridLabel + "=none"

	// vmsPerHost VMs of vmCPU and vmMemory run on each shared host:
	// an eighth of the host, so that every pod fits beside them.
	vmsPerHost = 2
	vmCPU      = "2"
	vmMemory   = "8Gi"

	// vmPlacer and vmKind are the VM manager's defaults for its name in
	// the ledgers (--ledger-placer) and the kind of its entries
	// (examples/vm-manager, README "Ledger mode").
	vmPlacer = "vm-manager"
	vmKind   = "vm"

	// ballastNamespace holds, on each host the VM manager does not use,
	// bound pods as large as the VMs of a shared host, so that the
	// scheduler's LeastAllocated scoring spreads the pods evenly over
	// both kinds of host.
	ballastNamespace = "ballast"

	// churnWorkers is how many VM placements may be in flight at once.
	churnWorkers = 4
)

// hybridMode says how a phase runs the scheduler and the VM manager.
type hybridMode int

const (
	// hybridToday: the scheduler reads the VMs through its
	// ExternalWorkload informer, no NodeLedger plugin; the VM manager
	// places without a ledger.
	hybridToday hybridMode = iota
	// hybridLedger: the NodeLedger plugin on the shared hosts and the
	// VM manager with --ledger.
	hybridLedger
	// hybridUnshared: the NodeLedger plugin on, selecting no node; the
	// VM manager as today.
	hybridUnshared
)

// hybridPhases are the phases of one run, in order: each phase under
// test sits between two today phases.
var hybridPhases = []struct {
	name string
	mode hybridMode
}{
	{"today-1", hybridToday},
	{"ledger", hybridLedger},
	{"today-2", hybridToday},
	{"ledger-unshared", hybridUnshared},
	{"today-3", hybridToday},
}

// hybridSettings size BenchmarkSchedulingHybrid.
type hybridSettings struct {
	// settings are BenchmarkScheduling's: nodes and pods are BENCH_NODES
	// and BENCH_PODS (pods per phase).
	settings
	// vmsPerMinute is how many VMs the VM manager is asked to place per
	// minute during each phase, each after deleting the oldest VM of its
	// host once the host holds vmsPerHost (BENCH_VMS_PER_MINUTE).
	vmsPerMinute int
}

// loadHybridSettings reads the BENCH_* variables, with def's sizes when
// they are unset.
func loadHybridSettings(tb testing.TB, def hybridSettings) hybridSettings {
	tb.Helper()
	s := hybridSettings{settings: loadCommonSettings(tb)}
	s.nodes = envInt(tb, "BENCH_NODES", def.nodes)
	s.pods = envInt(tb, "BENCH_PODS", def.pods)
	s.vmsPerMinute = envInt(tb, "BENCH_VMS_PER_MINUTE", def.vmsPerMinute)
	if s.nodes < 2 || s.pods <= 0 || s.vmsPerMinute <= 0 {
		tb.Fatalf("BENCH_NODES (%d) must be at least 2, BENCH_PODS (%d) and BENCH_VMS_PER_MINUTE (%d) positive", s.nodes, s.pods, s.vmsPerMinute)
	}
	if total := len(hybridPhases)*s.pods + warmupPods(s.pods) + vmsPerHost*s.nodes; total > s.nodes*podsPerNode*8/10 {
		tb.Fatalf("BENCH_PODS=%d is too many for BENCH_NODES=%d: the run binds %d pods and nodes hold %d each", s.pods, s.nodes, total, podsPerNode)
	}
	return s
}

// fullHybrid is the default size: 500 nodes, half of them shared, 10,000
// pods per phase, 30 VMs placed per minute: what the VM manager sustains
// in ledger mode at this size (see BenchmarkSchedulingHybrid).
var fullHybrid = hybridSettings{settings: settings{nodes: 500, pods: 10000}, vmsPerMinute: 30}

// smallHybrid is TestSchedulingHybridSmall's size; smokeHybrid is the
// benchmark's with -short (hack/test-benchmarks.sh), smaller still.
var (
	smallHybrid = hybridSettings{settings: settings{nodes: 20, pods: 200}, vmsPerMinute: 600}
	smokeHybrid = hybridSettings{settings: settings{nodes: 10, pods: 80}, vmsPerMinute: 600}
)

// hybridRun is the outcome of one phase.
type hybridRun struct {
	schedulerRun
	mode hybridMode
	// sharedPods is how many of the phase's pods went to shared hosts.
	sharedPods int
	// bind is the Bind extension point (every Bind plugin: the ledger
	// commit, if any, and the binding); ledgerBind the NodeLedger
	// plugin's Bind alone, in the sampled cycles (no count without the
	// plugin).
	bind, ledgerBind latency
	// vms is what the VM churn did during the timed window.
	vms churnStats
	// vmMetrics are the VM manager's vm_manager_* counters over the
	// phase.
	vmMetrics map[string]float64
}

// BenchmarkSchedulingHybrid measures what the NodeLedger costs: the
// scheduling throughput of the real batch-scheduler on a hybrid cluster,
// pods and VMs placed together, with and without the ledger, in the same
// run on one fresh control plane per b.N iteration:
//
//  1. Setup (not timed): the NodeLedger CRD; BENCH_NODES nodes (500) as
//     in BenchmarkScheduling, every other one labelled bench-shared=vms
//     (the shared hosts); on each other node bound "ballast" pods as
//     large as a shared host's VMs, so that the pods spread evenly over
//     both kinds; BENCH_PODS pods (10000) per phase, each phase's with
//     its own spec.schedulerName; the untimed warm-up round.
//  2. Five phases: today-1, ledger, today-2, ledger-unshared, today-3.
//     Each starts the VM manager (examples/vm-manager, built once per
//     benchmark, run as a process) with --host-selector bench-shared=vms
//     and a state file of 2 VMs (2 CPU, 8Gi) on every shared host, then
//     the real command in this process with a configuration file whose
//     custom informer reads the manager's ExternalWorkloads. From the
//     command's sync barrier to the last bind, the VM churn asks the
//     manager for BENCH_VMS_PER_MINUTE VMs per minute (30), each on the
//     next shared host in turn after deleting that host's oldest VM, so
//     the VMs' placements race the pods' on the same hosts.
//     - today: no NodeLedger plugin, the manager without --ledger.
//     - ledger: the NodeLedger plugin (nodeSelector bench-shared=vms),
//     the manager with --ledger. Every bind and VM placement on a shared
//     host is committed to its NodeLedger first.
//     - ledger-unshared: the plugin with a selector no node matches, the
//     manager as today: what hosts without VMs pay.
//  3. After each phase: every pod bound once, pods_bound_total, no node
//     over its allocatable by its pods (as BenchmarkScheduling), and no
//     shared host over its allocatable CPU or memory by its pods and the
//     VMs the manager runs there (GET /vms); after the ledger phase,
//     every shared host's ledger lists both placers, records every pod
//     of the phase bound there and exactly the VMs running there.
//
// The ledgers of the shared hosts are created before the ledger phase as
// the placers would have left them: both placers joined and the VMs of
// the state file recorded. The VM manager's client runs at client-go's
// default limit (5 requests per second), at which joining 250 ledgers
// takes it a minute and a half; a restart onto joined ledgers is the
// steady state measured here. The same limit bounds its placements in
// ledger mode (each costs a ledger write or more, and a conflict a read):
// asked for 2 VMs per second at the default size it placed fewer than
// one, hence the default of 30 per minute, which every phase sustains.
// The command's first pass over the shared ledgers (one read each, as
// after any restart) is inside the timed window.
//
// Each phase is timed as BenchmarkScheduling's scheduler phase (sync
// barrier to the last bind seen by the watch). ratio is ledger ÷ the mean
// of today-1 and today-2, unshared-ratio ledger-unshared ÷ the mean of
// today-2 and today-3: the phases around each bracket it, so that drift
// on a shared machine evens out.
//
// Reported: today-pods/s (mean of the three), ledger-pods/s,
// unshared-pods/s, ratio, unshared-ratio, the Bind extension point's p99
// per kind of phase (today-bind-p99-ms, ledger-bind-p99-ms,
// unshared-bind-p99-ms; a p99 beyond the histogram's largest finite
// bucket reads as that bucket, 819.2ms), its mean (today-bind-mean-ms,
// ledger-bind-mean-ms, unshared-bind-mean-ms: exact) and self-cpu-ratio
// (this process's CPU per pod, ledger ÷ today-1 and today-2: the
// scheduler, the watch and the VM churn's client). A table per run gives
// each phase's CPU (kube-apiserver, etcd, the VM manager, this process),
// the share of pods bound to shared hosts, the Bind latencies, the VMs
// placed, the ledger conflicts (409s on NodeLedger updates, from either
// placer) and the API requests.
//
// Full size: hack/bench-scheduling.sh hybrid (make bench-scheduling-hybrid).
// With -short it runs at smokeHybrid. A small version runs as
// TestSchedulingHybridSmall; CI runs both (hack/test-benchmarks.sh).
func BenchmarkSchedulingHybrid(b *testing.B) {
	s := loadHybridSettings(b, smoke(fullHybrid, smokeHybrid))
	vmBin := buildVMManager(b)
	var runs [][]hybridRun
	for b.Loop() {
		runs = append(runs, runHybridOnce(b, s, vmBin))
	}
	var today, led, unshared, ratio, unsharedRatio, cpuRatio float64
	var todayP99, ledP99, unsharedP99, todayMean, ledMean, unsharedMean float64
	n := float64(len(runs))
	for _, r := range runs {
		t1, l, t2, u, t3 := r[0], r[1], r[2], r[3], r[4]
		today += (t1.podsPerSecond() + t2.podsPerSecond() + t3.podsPerSecond()) / 3 / n
		led += l.podsPerSecond() / n
		unshared += u.podsPerSecond() / n
		ratio += l.podsPerSecond() / ((t1.podsPerSecond() + t2.podsPerSecond()) / 2) / n
		unsharedRatio += u.podsPerSecond() / ((t2.podsPerSecond() + t3.podsPerSecond()) / 2) / n
		todayP99 += (ms(t1.bind.p99) + ms(t2.bind.p99) + ms(t3.bind.p99)) / 3 / n
		ledP99 += ms(l.bind.p99) / n
		unsharedP99 += ms(u.bind.p99) / n
		todayMean += (ms(t1.bind.mean) + ms(t2.bind.mean) + ms(t3.bind.mean)) / 3 / n
		ledMean += ms(l.bind.mean) / n
		unsharedMean += ms(u.bind.mean) / n
		if d := meanSelfCPU([]schedulerRun{t1.schedulerRun, t2.schedulerRun}); d > 0 {
			cpuRatio += meanSelfCPU([]schedulerRun{l.schedulerRun}) / d / n
		}
	}
	b.ReportMetric(0, "ns/op") // one op is a whole run
	b.ReportMetric(today, "today-pods/s")
	b.ReportMetric(led, "ledger-pods/s")
	b.ReportMetric(unshared, "unshared-pods/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(unsharedRatio, "unshared-ratio")
	b.ReportMetric(todayP99, "today-bind-p99-ms")
	b.ReportMetric(ledP99, "ledger-bind-p99-ms")
	b.ReportMetric(unsharedP99, "unshared-bind-p99-ms")
	b.ReportMetric(todayMean, "today-bind-mean-ms")
	b.ReportMetric(ledMean, "ledger-bind-mean-ms")
	b.ReportMetric(unsharedMean, "unshared-bind-mean-ms")
	if cpuRatio > 0 {
		b.ReportMetric(cpuRatio, "self-cpu-ratio")
	}
}

// TestSchedulingHybridSmall runs BenchmarkSchedulingHybrid's run at a
// small size (20 nodes, 200 pods per phase, 600 VMs per minute; the BENCH_*
// variables override it), so that CI checks that the benchmark works: the
// checks of every phase (each pod bound once, no host over-committed by
// pods and VMs, the ledgers' contents) and that each phase measured what
// it claims. It checks no rate. Skipped with -short: make test runs this
// package with -short, and CI runs it in hack/test-benchmarks.sh, without
// -short.
func TestSchedulingHybridSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and the VM manager; skipped with -short")
	}
	s := loadHybridSettings(t, smallHybrid)
	runs := runHybridOnce(t, s, buildVMManager(t))
	if len(runs) != len(hybridPhases) {
		t.Fatalf("%d phases measured, want %d", len(runs), len(hybridPhases))
	}
	for _, r := range runs {
		if r.pods != s.pods || r.elapsed <= 0 {
			t.Errorf("%s: %d pods in %s, want %d in a positive time", r.name, r.pods, r.elapsed, s.pods)
		}
		if r.bind.count < float64(r.pods) || r.bind.p99 <= 0 {
			t.Errorf("%s: Bind %s over %v runs: the extension point's histogram was not read", r.name, r.bind, r.bind.count)
		}
		if r.sharedPods == 0 || r.sharedPods == r.pods {
			t.Errorf("%s: %d of %d pods on shared hosts, want some on each kind", r.name, r.sharedPods, r.pods)
		}
		if r.vms.attempts() == 0 || len(r.vms.errors) > 0 {
			t.Errorf("%s: VM churn: %d attempts, errors %v; want at least one attempt and no error", r.name, r.vms.attempts(), r.vms.errors)
		}
		committed := r.vmMetrics[`vm_manager_ledger_commits_total{result="committed"}`]
		switch {
		case r.mode == hybridLedger && r.vms.placed > 0 && committed == 0:
			t.Errorf("%s: %d VMs placed and no ledger commit counted by the VM manager", r.name, r.vms.placed)
		case r.mode != hybridLedger && committed > 0:
			t.Errorf("%s: the VM manager committed %v VMs to ledgers without --ledger", r.name, committed)
		}
		if r.mode == hybridLedger && r.ledgerBind.count == 0 {
			t.Errorf("%s: no NodeLedger Bind timing: was the plugin enabled?", r.name)
		}
		if r.mode != hybridLedger && r.requests["PUT nodeledgers"]+r.requests["POST nodeledgers"] > 0 {
			t.Errorf("%s: ledgers were written in a phase without shared hosts: %s", r.name, formatRequests(r.phase))
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// buildVMManager builds examples/vm-manager into a temporary directory and
// returns the binary's path.
func buildVMManager(tb testing.TB) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	start := time.Now()
	if err := controlplane.GoBuild(root, dir, "./examples/vm-manager"); err != nil {
		tb.Fatal(err)
	}
	logf("built the VM manager in %s", time.Since(start).Round(time.Millisecond))
	return filepath.Join(dir, "vm-manager")
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// hybridEnv is what the phases of one run share.
type hybridEnv struct {
	s      hybridSettings
	cp     *controlplane.ControlPlane
	admin  kubernetes.Interface
	ledger versioned.Interface
	procs  map[string]int
	nodes  []string
	// shared are the shared hosts, in name order; isShared says whether
	// a node is one.
	shared   []string
	isShared map[string]bool
	vmBin    string
	dir      string
}

// runHybridOnce does one full run on a fresh control plane and returns its
// phases in the order of hybridPhases.
func runHybridOnce(tb testing.TB, s hybridSettings, vmBin string) []hybridRun {
	tb.Helper()
	runStart := time.Now()
	cp, stop := startControlPlane(tb)
	defer stop()
	ctx := tb.Context()
	env := hybridEnv{s: s, cp: cp, procs: controlPlaneProcesses(), vmBin: vmBin, dir: tb.TempDir(), isShared: map[string]bool{}}
	env.admin = clientFor(tb, cp.Config, 100000, 100000)
	lc, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		tb.Fatal(err)
	}
	env.ledger = lc

	setupStart := time.Now()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		tb.Fatal(err)
	}
	if err := controlplane.InstallCRDFile(ctx, dyn, filepath.Join(root, "deploy", "crds", "batch-scheduler.io_nodeledgers.yaml")); err != nil {
		tb.Fatal(err)
	}
	env.nodes = createNodes(tb, ctx, env.admin, s.nodes)
	env.shared = labelSharedHosts(tb, ctx, env.admin, env.nodes)
	for _, n := range env.shared {
		env.isShared[n] = true
	}
	var unshared []string
	for _, n := range env.nodes {
		if !env.isShared[n] {
			unshared = append(unshared, n)
		}
	}
	createBallast(tb, ctx, env.admin, unshared)
	createPods(tb, ctx, env.admin, "warmup", noSchedulerName, warmupPods(s.pods))
	for _, p := range hybridPhases {
		createPods(tb, ctx, env.admin, "hyb-"+p.name, "bench-"+p.name, s.pods)
	}
	logf("setup: %d nodes (%d shared), %d ballast pods, %d+%d×%d pods in %s", s.nodes, len(env.shared), vmsPerHost*len(unshared),
		warmupPods(s.pods), len(hybridPhases), s.pods, time.Since(setupStart).Round(time.Millisecond))

	warm := runCeiling(tb, s.settings, cp, env.admin, env.procs, "warmup", env.nodes, slices.Max(s.binders))
	logf("warm-up (untimed): %d pods in %s: %.0f pods/s", warm.pods, warm.elapsed.Round(time.Millisecond), warm.podsPerSecond())

	runs := make([]hybridRun, len(hybridPhases))
	for i, p := range hybridPhases {
		runs[i] = runHybridPhase(tb, env, p.name, p.mode)
		r := runs[i]
		logf("%s: %d pods in %s: %.0f pods/s (%d on shared hosts; start-up %s; Bind %s); VMs: %s", r.name, r.pods,
			r.elapsed.Round(time.Millisecond), r.podsPerSecond(), r.sharedPods, r.startup.Round(time.Millisecond), r.bind, r.vms)
	}
	printHybridSummary(os.Stdout, s, len(env.shared), runs, time.Since(runStart))
	return runs
}

// labelSharedHosts labels every other node (the even indexes) as shared
// and returns them.
func labelSharedHosts(tb testing.TB, ctx context.Context, client kubernetes.Interface, nodes []string) []string {
	tb.Helper()
	var shared []string
	for i := 0; i < len(nodes); i += 2 {
		shared = append(shared, nodes[i])
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, hybridLabel, hybridShared)
	err := parallel(len(shared), setupWorkers, func(i int) error {
		_, err := client.CoreV1().Nodes().Patch(ctx, shared[i], types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		tb.Fatalf("labelling the shared hosts: %v", err)
	}
	return shared
}

// createBallast binds, on each of nodes, vmsPerHost pods of the VMs' size.
func createBallast(tb testing.TB, ctx context.Context, client kubernetes.Interface, nodes []string) {
	tb.Helper()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ballastNamespace}}, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("creating namespace %s: %v", ballastNamespace, err)
	}
	err := parallel(len(nodes)*vmsPerHost, setupWorkers, func(i int) error {
		pod := st.MakePod().Namespace(ballastNamespace).Name(fmt.Sprintf("ballast-%05d", i)).Scheduler(noSchedulerName).
			Node(nodes[i/vmsPerHost]).Req(map[v1.ResourceName]string{v1.ResourceCPU: vmCPU, v1.ResourceMemory: vmMemory}).Obj()
		pod.UID = ""
		_, err := controlplane.CreatePod(ctx, client, pod)
		return err
	})
	if err != nil {
		tb.Fatalf("creating the ballast pods: %v", err)
	}
}

// vmName names the gen-th VM of the shared host of index host.
func vmName(host, gen int) string { return fmt.Sprintf("vm-%05d-%d", host, gen) }

// runHybridPhase runs one phase: the VM manager in the phase's mode, then
// the command beside the VM churn, then the checks.
func runHybridPhase(tb testing.TB, env hybridEnv, name string, mode hybridMode) hybridRun {
	tb.Helper()
	ctx := tb.Context()
	dir := filepath.Join(env.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if mode == hybridLedger {
		createJoinedLedgers(tb, ctx, env.ledger, env.shared)
	}
	vm := startVMManager(tb, env.vmBin, dir, env.cp.KubeconfigPath, env.shared, mode == hybridLedger)
	defer vm.proc.stop()
	procs := maps.Clone(env.procs)
	procs["vm-manager"] = vm.proc.Pid()

	cfg := filepath.Join(dir, "batch-scheduler.yaml")
	if err := os.WriteFile(cfg, []byte(hybridConfig(vm.url, "bench-"+name, mode)), 0o600); err != nil {
		tb.Fatal(err)
	}
	churn := newVMChurn(vm.url, env.shared, env.s.vmsPerMinute)
	vm0 := vm.metrics(tb)
	sp := schedulerPhase{name: name, schedulerName: "bench-" + name, args: []string{"--config-path", cfg},
		during: func() func() { return churn.start(ctx) }}
	ns := "hyb-" + name
	r := hybridRun{mode: mode}
	ps := env.s.settings
	if ps.cpuProfile != "" {
		ps.cpuProfile += "-" + name + ".pprof"
	}
	r.schedulerRun = runScheduler(tb, ps, env.cp, env.admin, procs, ns, env.nodes, sp)
	r.vms = churn.stats()
	r.vmMetrics = subCounts(vm.metrics(tb), vm0)
	r.bind = extensionPointLatency(r.metrics, "Bind")
	r.ledgerBind = pluginLatency(r.metrics, nodeledger.Name, "Bind")

	pods, err := env.admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range pods.Items {
		if env.isShared[p.Spec.NodeName] {
			r.sharedPods++
		}
	}
	checkHybridHosts(tb, ctx, env.admin, name, env.isShared, vm.list(tb))
	if mode == hybridLedger {
		checkLedgers(tb, ctx, env.ledger, vm, name, env.shared, pods.Items)
	}
	return r
}

// hybridConfig is the command's configuration file in mode: the custom
// informer of the VM manager's ExternalWorkloads at url and, in every
// mode but today, the NodeLedger plugin in the profile of schedulerName.
func hybridConfig(url, schedulerName string, mode hybridMode) string {
	cfg := fmt.Sprintf(`apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
customInformers:
- name: vm-manager
  resource: ExternalWorkload
  source: {http: {url: %q}}
`, url)
	selector := hybridLabel + "=" + hybridShared
	switch mode {
	case hybridToday:
		return cfg
	case hybridUnshared:
		selector = hybridNoHost
	}
	return cfg + fmt.Sprintf(`profiles:
- schedulerName: %s
  plugins:
    multiPoint: {enabled: [{name: %s}]}
  pluginConfig:
  - name: %s
    args: {nodeSelector: %q}
`, schedulerName, nodeledger.Name, nodeledger.Name, selector)
}

// vmResources is what one VM uses.
func vmResources() resources.Resource {
	return resources.FromList(v1.ResourceList{v1.ResourceCPU: resource.MustParse(vmCPU), v1.ResourceMemory: resource.MustParse(vmMemory)})
}

// createJoinedLedgers creates the ledger of each shared host as the two
// placers leave it once joined: both listed, the VMs of the VM manager's
// state file (writeVMState) recorded.
func createJoinedLedgers(tb testing.TB, ctx context.Context, client versioned.Interface, shared []string) {
	tb.Helper()
	now := time.Now()
	err := parallel(len(shared), setupWorkers, func(i int) error {
		l := &v1alpha1.NodeLedger{ObjectMeta: metav1.ObjectMeta{Name: shared[i]}}
		ledger.Join(l, vmPlacer, now)
		ledger.Join(l, nodeledger.DefaultPlacer, now)
		for g := range vmsPerHost {
			ledger.Put(l, v1alpha1.LedgerEntry{Placer: vmPlacer, Kind: vmKind, Name: vmName(i, g), Resources: vmResources().ToList()})
		}
		if errs := v1alpha1.ValidateNodeLedger(l); len(errs) > 0 {
			return fmt.Errorf("ledger %s: %w", l.Name, errs.ToAggregate())
		}
		_, err := client.BatchSchedulerV1alpha1().NodeLedgers().Create(ctx, l, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		tb.Fatalf("creating the shared hosts' ledgers: %v", err)
	}
}

// vmManager is a running examples/vm-manager.
type vmManager struct {
	proc   *process
	url    string
	client *http.Client
}

// startVMManager writes the state file (vmsPerHost VMs on each shared
// host) and starts the VM manager on the shared hosts, with --ledger if
// ledgerMode, logging to dir/vm-manager.log; it returns once the manager
// serves (after its informers synced and its VMs were published).
func startVMManager(tb testing.TB, bin, dir, kubeconfig string, shared []string, ledgerMode bool) *vmManager {
	tb.Helper()
	state := filepath.Join(dir, "vm-state.json")
	writeVMState(tb, state, shared)
	addrFile := filepath.Join(dir, "vm-manager.address")
	args := []string{"--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "--address-file", addrFile,
		"--host-selector", hybridLabel + "=" + hybridShared, "--state-file", state}
	if ledgerMode {
		args = append(args, "--ledger", "--ledger-require", nodeledger.DefaultPlacer)
	}
	p := startProcess(tb, harness.ProcessSpec{Name: "vm-manager", Bin: bin, Args: args, Dir: dir})
	tb.Cleanup(p.stop)
	var addr string
	err := harness.Poll(tb.Context(), 3*time.Minute, "the VM manager to serve", p.Alive, func() (bool, error) {
		data, err := os.ReadFile(addrFile)
		addr = string(bytes.TrimSpace(data))
		return err == nil && addr != "", nil
	})
	if err != nil {
		p.stop()
		tb.Fatalf("%v\n%s", err, p.logTail())
	}
	return &vmManager{proc: p, url: "http://" + addr,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: churnWorkers + 2}}}
}

// vmStateFile is the VM manager's state file (examples/vm-manager,
// README "The state file").
type vmStateFile struct {
	Version int       `json:"version"`
	VMs     []vmState `json:"vms"`
}

type vmState struct {
	Name   string `json:"name"`
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
	Host   string `json:"host"`
	Phase  string `json:"phase"`
	Create string `json:"created"`
	Placed string `json:"placed"`
}

// writeVMState writes a state file of vmsPerHost Running VMs on each
// shared host, named vmName(host index, 0..vmsPerHost-1).
func writeVMState(tb testing.TB, path string, shared []string) {
	tb.Helper()
	now := time.Now().UTC().Format(time.RFC3339)
	f := vmStateFile{Version: 1}
	for i, host := range shared {
		for g := range vmsPerHost {
			f.VMs = append(f.VMs, vmState{Name: vmName(i, g), CPU: vmCPU, Memory: vmMemory, Host: host, Phase: "Running", Create: now, Placed: now})
		}
	}
	data, err := json.Marshal(f)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// metrics reads the vm_manager_* samples of the manager's /metrics, keyed
// by name and labels as printed.
func (m *vmManager) metrics(tb testing.TB) map[string]float64 {
	tb.Helper()
	body := m.get(tb, "/metrics")
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "vm_manager_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// vmInfo is a VM as GET /vms lists it.
type vmInfo struct {
	Name   string            `json:"name"`
	Host   string            `json:"host"`
	Phase  string            `json:"phase"`
	CPU    resource.Quantity `json:"cpu"`
	Memory resource.Quantity `json:"memory"`
}

// list returns the manager's VMs.
func (m *vmManager) list(tb testing.TB) []vmInfo {
	tb.Helper()
	var out struct {
		Items []vmInfo `json:"items"`
	}
	if err := json.Unmarshal(m.get(tb, "/vms"), &out); err != nil {
		tb.Fatalf("GET /vms of the VM manager: %v", err)
	}
	return out.Items
}

func (m *vmManager) get(tb testing.TB, path string) []byte {
	tb.Helper()
	resp, err := m.client.Get(m.url + path)
	if err != nil {
		tb.Fatalf("GET %s of the VM manager: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s of the VM manager: %d %v: %s", path, resp.StatusCode, err, body)
	}
	return body
}

// vmChurn asks the VM manager for VMs at a steady rate: each step goes to
// the next shared host in turn, deletes its oldest VM if it holds
// vmsPerHost, and creates one there. A host is stepped by one worker at a
// time, so a host never holds more than vmsPerHost VMs.
type vmChurn struct {
	url    string
	client *http.Client
	hosts  []string
	// perMinute is the rate asked for.
	perMinute int

	// hostMu[i] guards vms[i] and gens[i], host i's VMs (oldest first)
	// and the generation of its next VM.
	hostMu []sync.Mutex
	vms    [][]string
	gens   []int

	// wg counts the churn's goroutines.
	wg sync.WaitGroup
	// mu guards next and st.
	mu   sync.Mutex
	next int
	st   churnStats
}

// churnStats is what a churn did.
type churnStats struct {
	// placed and deleted count the VMs the manager created (201) and
	// deleted (200).
	placed, deleted int
	// refused counts the creations the manager refused, by reason.
	refused map[string]int
	// skipped counts the steps not taken because every worker was busy:
	// the manager did not keep up with the rate.
	skipped int
	// errors are the first failures other than refusals.
	errors []string
	// elapsed is how long the churn ran.
	elapsed time.Duration
}

func (c churnStats) attempts() int {
	n := c.placed
	for _, v := range c.refused {
		n += v
	}
	return n
}

func (c churnStats) String() string {
	s := fmt.Sprintf("%d placed (%.1f/s), %d deleted", c.placed, float64(c.placed)/c.elapsed.Seconds(), c.deleted)
	if len(c.refused) > 0 {
		keys := slices.Sorted(maps.Keys(c.refused))
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %d", k, c.refused[k]))
		}
		s += ", refused: " + strings.Join(parts, ", ")
	}
	if c.skipped > 0 {
		s += fmt.Sprintf(", %d steps skipped (manager busy)", c.skipped)
	}
	if len(c.errors) > 0 {
		s += fmt.Sprintf(", errors: %s", strings.Join(c.errors, "; "))
	}
	return s
}

// newVMChurn returns a churn of perMinute VMs per minute on hosts, which hold
// the VMs of writeVMState.
func newVMChurn(url string, hosts []string, perMinute int) *vmChurn {
	c := &vmChurn{url: url, hosts: hosts, perMinute: perMinute, hostMu: make([]sync.Mutex, len(hosts)),
		vms: make([][]string, len(hosts)), gens: make([]int, len(hosts)), st: churnStats{refused: map[string]int{}},
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: churnWorkers}}}
	for i := range hosts {
		for g := range vmsPerHost {
			c.vms[i] = append(c.vms[i], vmName(i, g))
		}
		c.gens[i] = vmsPerHost
	}
	return c
}

// start runs the churn until the returned function is called. That
// function returns at once; the steps in flight then finish (their
// requests are not cut, so that no placement is left half done), and
// stats waits for them.
func (c *vmChurn) start(ctx context.Context) (stop func()) {
	running, cancel := context.WithCancel(ctx)
	// Up to churnWorkers steps wait here while every worker is busy;
	// beyond them a step is skipped.
	steps := make(chan struct{}, churnWorkers)
	for range churnWorkers {
		c.wg.Go(func() {
			for range steps {
				if running.Err() == nil {
					c.step(ctx)
				}
			}
		})
	}
	began := time.Now()
	c.wg.Go(func() {
		defer close(steps)
		tick := time.NewTicker(time.Minute / time.Duration(c.perMinute))
		defer tick.Stop()
		for {
			select {
			case steps <- struct{}{}:
			default:
				c.count(func(s *churnStats) { s.skipped++ })
			}
			select {
			case <-tick.C:
			case <-running.Done():
				return
			}
		}
	})
	return func() {
		cancel()
		c.count(func(s *churnStats) { s.elapsed = time.Since(began) })
	}
}

// stats waits for the steps in flight once the churn is stopped and
// returns what it did.
func (c *vmChurn) stats() churnStats {
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.st
	out.refused = maps.Clone(c.st.refused)
	out.errors = slices.Clone(c.st.errors)
	return out
}

// step replaces the oldest VM of the next host.
func (c *vmChurn) step(ctx context.Context) {
	c.mu.Lock()
	i := c.next
	c.next = (c.next + 1) % len(c.hosts)
	c.mu.Unlock()
	c.hostMu[i].Lock()
	defer c.hostMu[i].Unlock()
	if len(c.vms[i]) >= vmsPerHost {
		code, _, err := c.call(ctx, http.MethodDelete, "/vms/"+c.vms[i][0], nil)
		switch {
		case err != nil:
			c.fail(err)
			return
		case code != http.StatusOK:
			c.fail(fmt.Errorf("DELETE VM %s: %d", c.vms[i][0], code))
			return
		}
		c.vms[i] = c.vms[i][1:]
		c.count(func(s *churnStats) { s.deleted++ })
	}
	name := vmName(i, c.gens[i])
	c.gens[i]++
	body, _ := json.Marshal(map[string]string{"name": name, "cpu": vmCPU, "memory": vmMemory, "host": c.hosts[i]})
	code, answer, err := c.call(ctx, http.MethodPost, "/vms", body)
	switch {
	case err != nil:
		c.fail(err)
	case code == http.StatusCreated:
		c.vms[i] = append(c.vms[i], name)
		c.count(func(s *churnStats) { s.placed++ })
	case code == http.StatusConflict || code == http.StatusServiceUnavailable:
		var refusal struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(answer, &refusal)
		c.count(func(s *churnStats) { s.refused[refusal.Reason]++ })
	default:
		c.fail(fmt.Errorf("POST VM %s: %d: %s", name, code, bytes.TrimSpace(answer)))
	}
}

// call sends one request to the VM manager and returns its answer.
func (c *vmChurn) call(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}

func (c *vmChurn) count(f func(*churnStats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.st)
}

// fail records err.
func (c *vmChurn) fail(err error) {
	c.count(func(s *churnStats) {
		if len(s.errors) < 5 {
			s.errors = append(s.errors, err.Error())
		}
	})
}

// checkHybridHosts fails tb if a node is over its allocatable CPU or
// memory by its pods (bound, not finished, as the API server lists them)
// and the Running VMs the manager lists there, or if a VM runs on a host
// that is not shared.
func checkHybridHosts(tb testing.TB, ctx context.Context, client kubernetes.Interface, phase string, isShared map[string]bool, vms []vmInfo) {
	tb.Helper()
	used := map[string]*resources.Resource{}
	add := func(node string, r resources.Resource) {
		u := used[node]
		if u == nil {
			u = &resources.Resource{}
			used[node] = u
		}
		u.Add(r)
	}
	running := 0
	for _, vm := range vms {
		if vm.Phase != "Running" {
			continue
		}
		running++
		if !isShared[vm.Host] {
			tb.Errorf("%s: VM %s runs on %q, not a shared host", phase, vm.Name, vm.Host)
		}
		add(vm.Host, resources.FromList(v1.ResourceList{v1.ResourceCPU: vm.CPU, v1.ResourceMemory: vm.Memory}))
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		add(p.Spec.NodeName, resources.PodRequests(p))
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: poolLabel + "=" + poolValue})
	if err != nil {
		tb.Fatal(err)
	}
	over := 0
	for _, n := range nodes.Items {
		u := used[n.Name]
		if u == nil {
			continue
		}
		alloc := resources.FromList(n.Status.Allocatable)
		if u.MilliCPU > alloc.MilliCPU || u.Memory > alloc.Memory {
			over++
			tb.Errorf("%s: host %s over-committed by its pods and VMs: %s of %s", phase, n.Name, u, alloc)
		}
	}
	logf("%s: host check: %d VMs running, %d hosts over their allocatable by pods and VMs", phase, running, over)
}

// checkLedgers fails tb unless the ledger of every shared host lists both
// placers, records each of pods (the ledger phase's) bound there, and
// records exactly the Running VMs the manager lists there. A VM's entry
// is removed after its deletion is answered, and the manager's reconcile
// repairs an entry whose write failed: the check is repeated for up to
// 30 seconds before it fails.
func checkLedgers(tb testing.TB, ctx context.Context, client versioned.Interface, vm *vmManager, phase string, shared []string, pods []v1.Pod) {
	tb.Helper()
	podsOn := map[string][]types.UID{}
	for _, p := range pods {
		podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p.UID)
	}
	var problems []string
	recorded := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		problems, recorded = ledgerProblems(tb, ctx, client, vm.list(tb), shared, podsOn)
		return len(problems) == 0, nil
	})
	if err != nil {
		tb.Errorf("%s: %d problems in the shared hosts' ledgers, e.g. %s", phase, len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
		return
	}
	logf("%s: ledger check: %d ledgers list both placers, record the phase's %d pods bound there and the VMs running there", phase, len(shared), recorded)
}

// ledgerProblems lists how the shared hosts' ledgers differ from what
// checkLedgers expects, and counts the pods of podsOn recorded.
func ledgerProblems(tb testing.TB, ctx context.Context, client versioned.Interface, vms []vmInfo, shared []string, podsOn map[string][]types.UID) (problems []string, recordedPods int) {
	tb.Helper()
	vmsOn := map[string][]string{}
	for _, vm := range vms {
		if vm.Phase == "Running" {
			vmsOn[vm.Host] = append(vmsOn[vm.Host], vm.Name)
		}
	}
	list, err := client.BatchSchedulerV1alpha1().NodeLedgers().List(ctx, metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	byName := map[string]*v1alpha1.NodeLedger{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	for _, host := range shared {
		l := byName[host]
		if l == nil {
			problems = append(problems, host+": no ledger")
			continue
		}
		if missing := ledger.Missing(l, []string{nodeledger.DefaultPlacer, vmPlacer}); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("%s: %v not joined", host, missing))
		}
		uids := ledger.PodUIDs(l)
		for _, uid := range podsOn[host] {
			if uids[uid] {
				recordedPods++
			} else {
				problems = append(problems, fmt.Sprintf("%s: pod %s bound there is not recorded", host, uid))
			}
		}
		var entries []string
		for _, e := range l.Spec.Entries {
			if e.Placer == vmPlacer && e.Kind == vmKind {
				entries = append(entries, e.Name)
			}
		}
		sort.Strings(entries)
		want := slices.Sorted(slices.Values(vmsOn[host]))
		if !slices.Equal(entries, want) {
			problems = append(problems, fmt.Sprintf("%s: VM entries %v, VMs running there %v", host, entries, want))
		}
	}
	return problems, recordedPods
}

// extensionPointHistogram is the framework's histogram of extension point
// runs (pkg/framework/runtime: Metrics.ExtensionPoint).
const extensionPointHistogram = "batch_scheduler_framework_extension_point_duration_seconds"

// pluginHistogram is the framework's histogram of single plugin calls,
// timed in a sample of the cycles (Metrics.Plugin).
const pluginHistogram = "batch_scheduler_plugin_execution_duration_seconds"

// samplesWith returns the samples of samples whose labels include every
// label of want (`name="value"` each).
func samplesWith(samples map[string]float64, want ...string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range samples {
		ok := true
		for _, w := range want {
			if !strings.Contains(k, w) {
				ok = false
				break
			}
		}
		if ok {
			out[k] = v
		}
	}
	return out
}

// latency summarises a latency histogram.
type latency struct {
	// count is the number of observations.
	count float64
	// mean is exact (the histogram's sum over its count); p50 and p99
	// are interpolated inside their buckets (histogramQuantile).
	mean, p50, p99 time.Duration
	// p99Beyond says the 99th percentile lies beyond the histogram's
	// largest finite bound, which p99 then is: the true value is higher.
	p99Beyond bool
}

// String prints the p99 (">" when beyond the histogram) and the mean.
func (l latency) String() string {
	if l.count == 0 {
		return "-"
	}
	p99 := l.p99.String()
	if l.p99Beyond {
		p99 = ">" + p99
	}
	return fmt.Sprintf("p99 %s, mean %s", p99, l.mean)
}

// histogramLatency summarises the histogram name in samples (summed over
// its other labels).
func histogramLatency(samples map[string]float64, name string) latency {
	var l latency
	var sum float64
	counts := map[float64]float64{}
	for k, v := range samples {
		switch {
		case strings.HasPrefix(k, name+"_sum"):
			sum += v
		case strings.HasPrefix(k, name+"_count"):
			l.count += v
		case strings.HasPrefix(k, name+"_bucket{"):
			if m := leLabel.FindStringSubmatch(k); m != nil {
				if le, err := strconv.ParseFloat(m[1], 64); err == nil {
					counts[le] += v
				}
			}
		}
	}
	if l.count == 0 {
		return l
	}
	seconds := func(v float64) time.Duration {
		return time.Duration(v * float64(time.Second)).Round(time.Microsecond)
	}
	l.mean = seconds(sum / l.count)
	l.p50 = seconds(histogramQuantile(samples, name, 0.5))
	l.p99 = seconds(histogramQuantile(samples, name, 0.99))
	// The largest finite bound holds fewer than 99% of the observations:
	// the quantile is in the +Inf bucket.
	var largest float64
	for le := range counts {
		if !math.IsInf(le, 1) && le > largest {
			largest = le
		}
	}
	l.p99Beyond = counts[largest] < 0.99*l.count
	return l
}

// extensionPointLatency summarises point's runs (every plugin there),
// over every status and profile.
func extensionPointLatency(samples map[string]float64, point string) latency {
	return histogramLatency(samplesWith(samples, `extension_point="`+point+`"`), extensionPointHistogram)
}

// pluginLatency summarises plugin's calls at point, in the sampled
// cycles.
func pluginLatency(samples map[string]float64, plugin, point string) latency {
	return histogramLatency(samplesWith(samples, `plugin="`+plugin+`"`, `extension_point="`+point+`"`), pluginHistogram)
}

// printHybridSummary prints one row per phase and the ratios.
func printHybridSummary(out io.Writer, s hybridSettings, shared int, runs []hybridRun, total time.Duration) {
	fmt.Fprintf(out, "\nscheduling throughput on a hybrid cluster, NodeLedger vs today: %d nodes (%d shared, %d VMs of %s CPU %s each), %d pods per phase, %d VMs per minute asked, client QPS %.0f burst %d\n",
		s.nodes, shared, vmsPerHost, vmCPU, vmMemory, s.pods, s.vmsPerMinute, s.qps, s.burst)
	fmt.Fprintf(out, "%-16s %9s %7s %7s %10s %7s %7s %7s %10s %11s %9s %10s %9s %10s %9s %9s %5s %5s\n",
		"phase", "time", "pods/s", "shared", "apiserver", "etcd", "vm-mgr", "self", "cpu-ms/pod", "self-ms/pod",
		"bind-p50", "bind-p99", "bind-mean", "ledger-p99", "ledger-mean", "attempt99", "VMs", "409s")
	p99 := func(l latency) string {
		switch {
		case l.count == 0:
			return "-"
		case l.p99Beyond:
			return ">" + l.p99.String()
		}
		return l.p99.String()
	}
	mean := func(l latency) string {
		if l.count == 0 {
			return "-"
		}
		return l.mean.String()
	}
	for _, r := range runs {
		var all time.Duration
		for _, v := range r.cpu {
			all += v
		}
		selfMS := "-"
		if v, ok := r.cpu["self"]; ok {
			selfMS = fmt.Sprintf("%.2f", float64(v.Microseconds())/1000/float64(r.pods))
		}
		fmt.Fprintf(out, "%-16s %9s %7.0f %6.0f%% %10s %7s %7s %7s %10.2f %11s %9s %10s %9s %10s %9s %9s %5d %5.0f\n", r.name, r.elapsed.Round(time.Millisecond),
			r.podsPerSecond(), 100*float64(r.sharedPods)/float64(r.pods), r.cpu.fmt("kube-apiserver"), r.cpu.fmt("etcd"), r.cpu.fmt("vm-manager"),
			r.cpu.fmt("self"), float64(all.Microseconds())/1000/float64(r.pods), selfMS,
			r.bind.p50, p99(r.bind), mean(r.bind), p99(r.ledgerBind), mean(r.ledgerBind), r.p99Attempt,
			r.vms.placed, r.requests["PUT nodeledgers code 409"])
	}
	rate := func(i int) float64 { return runs[i].podsPerSecond() }
	today12 := (rate(0) + rate(2)) / 2
	today23 := (rate(2) + rate(4)) / 2
	fmt.Fprintf(out, "ledger %.0f pods/s ÷ today (mean of today-1 and today-2) %.0f = ratio %.3f; ledger-unshared %.0f ÷ today (today-2, today-3) %.0f = %.3f",
		rate(1), today12, rate(1)/today12, rate(3), today23, rate(3)/today23)
	if d := meanSelfCPU([]schedulerRun{runs[0].schedulerRun, runs[2].schedulerRun}); d > 0 {
		fmt.Fprintf(out, "; scheduler CPU per pod ledger ÷ today %.3f, ledger-unshared ÷ today %.3f",
			meanSelfCPU([]schedulerRun{runs[1].schedulerRun})/d,
			meanSelfCPU([]schedulerRun{runs[3].schedulerRun})/meanSelfCPU([]schedulerRun{runs[2].schedulerRun, runs[4].schedulerRun}))
	}
	fmt.Fprintln(out)
	for _, r := range runs {
		fmt.Fprintf(out, "%s: %s, bind_errors_total %.0f; VMs %s; VM manager %s; API requests: %s\n", r.name, attempts(r.metrics),
			r.metrics["batch_scheduler_bind_errors_total"], r.vms, vmManagerCounters(r.vmMetrics), formatRequests(r.phase))
	}
	fmt.Fprintf(out, "shared: pods of the phase bound to shared hosts; CPU columns: seconds during the phase (self = this process: the scheduler, the watch and the VM churn's client); bind-*: the Bind extension point (ledger commit, if any, and binding); ledger-*: the NodeLedger plugin's Bind alone (sampled cycles); a p99 \">X\": beyond the histogram's largest bucket; 409s: conflicting NodeLedger updates, both placers; run time %s\n\n",
		total.Round(time.Second))
}

// vmManagerCounters lists the VM manager's ledger commits and refusals of
// a phase.
func vmManagerCounters(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.HasPrefix(k, "vm_manager_ledger_commits_total") || strings.HasPrefix(k, "vm_manager_refusals_total") ||
			strings.HasPrefix(k, "vm_manager_ledger_entries_removed_total") {
			parts = append(parts, fmt.Sprintf("%s %.0f", strings.TrimPrefix(k, "vm_manager_"), m[k]))
		}
	}
	if len(parts) == 0 {
		return "no ledger commit, no refusal"
	}
	return strings.Join(parts, ", ")
}
