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

// Package benchmark measures the scheduling throughput of the real
// batch-scheduler command against a real kube-apiserver and etcd
// (test/controlplane), next to the API server's raw binding ceiling
// measured in the same run.
//
// Plain `go test ./...` (and make test) runs no benchmark, only the small
// tests: TestHistogramQuantile, and TestColdStart (coldstart_test.go),
// TestSchedulingAtScaleSmall and TestSchedulingHybridSmall, which start a
// control plane and are skipped with -short (make test runs this package
// with -short; CI runs them in hack/test-benchmarks.sh, which also runs
// every benchmark once with -short, at a tiny size: see smoke).
// Run the benchmarks with hack/bench-scheduling.sh, hack/bench-coldstart.sh, or:
//
//	go test -run '^$' -bench Scheduling -benchtime 1x -timeout 60m ./test/benchmark
//
// See BenchmarkScheduling for what is measured and the BENCH_* variables.
package benchmark

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

const (
	// poolLabel marks the benchmark's nodes; the scheduler runs with
	// --node-selector poolLabel=poolValue.
	poolLabel = "bench-pool"
	poolValue = "scheduling"

	// schedulerName is the scheduler of the pods the scheduler places.
	schedulerName = "batch-scheduler"
	// noSchedulerName is the scheduler of the pods bound by the ceiling
	// phases: nobody serves it, so the scheduler never touches them even
	// while they are pending.
	noSchedulerName = "bench-no-scheduler"
)

// Node capacity: far more than the pods need, so placement never fails for
// lack of room. podsPerNode is above the kubelet's default (110) so that
// the phases of one run (a ceiling per binder count, the scheduler, ...)
// fit on 500 nodes; 32 CPUs hold 320 pods of 100m.
var (
	nodeCPU    = "32"
	nodeMemory = "128Gi"
	podCPU     = "100m"
	podMemory  = "128Mi"
)

const podsPerNode = 250

// settings are the knobs, from BENCH_* environment variables.
type settings struct {
	nodes, pods int
	// qps and burst are the client rate limits of the scheduler
	// (--kube-api-qps, --kube-api-burst) and of the ceiling's binder. The
	// default, 5000, is several times what the API server sustains here
	// (700 to 1400 binds/s on 2 cores), so the API server, not the client's
	// limiter, sets the ceiling; the scheduler's default (50 QPS) would
	// measure the limiter instead.
	qps   float32
	burst int
	// binders are the concurrencies of the ceiling's binder, one ceiling
	// phase each (BENCH_BINDERS, default 16,64,128): the ceiling is the
	// best of them, the API server's limit rather than one client's.
	binders []int
	// bindConcurrency is the scheduler's --bind-concurrency
	// (BENCH_BIND_CONCURRENCY); 0 leaves the command's default.
	bindConcurrency int
	// timeout bounds the wait for all binds of one phase.
	timeout time.Duration
	// cpuProfile, if set, is where the CPU profile of this process during
	// the scheduler phase (sync barrier to last bind) is written.
	cpuProfile string
	// apiserverProfile, if set, is the prefix of CPU profiles of the API
	// server taken during ceiling-1 and the scheduler phase
	// (PREFIX-ceiling-1.pprof, PREFIX-scheduler.pprof), each over the
	// first apiserverProfileSeconds of the phase.
	apiserverProfile        string
	apiserverProfileSeconds int
	// eventsCeiling adds a diagnostic phase before ceiling-2: the ceiling's
	// binds plus one "Scheduled" event per pod, recorded as the scheduler
	// does. Not part of the reported ceiling. On unless
	// BENCH_EVENTS_CEILING=0.
	eventsCeiling bool
	// verbosity is the scheduler's -v.
	verbosity int
}

func loadSettings(b testing.TB) settings {
	b.Helper()
	s := loadCommonSettings(b)
	s.nodes = envInt(b, "BENCH_NODES", smoke(500, 20))
	s.pods = envInt(b, "BENCH_PODS", smoke(10000, 160))
	s.eventsCeiling = os.Getenv("BENCH_EVENTS_CEILING") != "0"
	if s.nodes <= 0 || s.pods <= 0 {
		b.Fatalf("BENCH_NODES (%d) and BENCH_PODS (%d) must be positive", s.nodes, s.pods)
	}
	// The warm-up and the full sets of pods end up on the nodes (a ceiling
	// phase per binder count, the scheduler phase, the ceiling again);
	// keep them well inside the pod capacity.
	sets := len(s.binders) + 2
	if s.eventsCeiling {
		sets++
	}
	if total := sets*s.pods + warmupPods(s.pods); total > s.nodes*podsPerNode*8/10 {
		b.Fatalf("BENCH_PODS=%d is too many for BENCH_NODES=%d: the run binds %d pods and nodes hold %d pods each; keep BENCH_PODS ≤ %d",
			s.pods, s.nodes, total, podsPerNode, (s.nodes*podsPerNode*8/10*5)/(5*sets+1))
	}
	return s
}

// loadCommonSettings reads the settings every benchmark of the scheduler
// shares: all but the sizes.
func loadCommonSettings(b testing.TB) settings {
	b.Helper()
	s := settings{
		qps:        float32(envInt(b, "BENCH_QPS", 5000)),
		binders:    envInts(b, "BENCH_BINDERS", []int{16, 64, 128}),
		timeout:    time.Duration(envInt(b, "BENCH_TIMEOUT_SECONDS", 900)) * time.Second,
		cpuProfile: os.Getenv("BENCH_CPUPROFILE"),
		// The default fits inside both phases at the default size.
		apiserverProfile:        os.Getenv("BENCH_APISERVER_PROFILE"),
		apiserverProfileSeconds: envInt(b, "BENCH_APISERVER_PROFILE_SECONDS", 5),
		verbosity:               envInt(b, "BENCH_V", 0),
		bindConcurrency:         envInt(b, "BENCH_BIND_CONCURRENCY", 0),
	}
	s.burst = envInt(b, "BENCH_BURST", int(s.qps))
	if s.qps <= 0 || s.burst <= 0 {
		b.Fatalf("BENCH_QPS (%v) and BENCH_BURST (%d) must be positive", s.qps, s.burst)
	}
	return s
}

// warmupPods is the size of the untimed warm-up round.
func warmupPods(pods int) int { return max(1, pods/5) }

// envInts reads a comma-separated list of positive integers.
func envInts(b testing.TB, name string, def []int) []int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: %q is not a positive integer", name, v, f)
		}
		out = append(out, n)
	}
	return out
}

// smoke returns full, or small when the test binary runs with -short. A
// benchmark takes its default size from it: hack/test-benchmarks.sh (CI)
// runs every benchmark once with -short, to check that it still works, at
// a size that takes seconds; make bench and hack/bench-*.sh run without
// -short, at full size. The BENCH_* variables override either.
func smoke[T any](full, small T) T {
	if testing.Short() {
		return small
	}
	return full
}

func envInt(b testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s=%q: not an integer", name, v)
	}
	return n
}

// phase is the outcome of binding one namespace's pods.
type phase struct {
	name string
	// binders is the concurrency of a ceiling phase's binder (0 for a
	// scheduler).
	binders int
	// elapsed is from the start of the phase (first bind call for the
	// ceiling; the scheduler's sync barrier for the scheduler) to the last
	// bind seen by the watch.
	elapsed time.Duration
	pods    int
	// cpu is the CPU time used during the phase, by process.
	cpu cpuTimes
	// quarters is when 25%, 50%, 75% and 100% of the pods were bound,
	// from the start of the phase.
	quarters []time.Duration
	// requests counts the API server's requests during the phase (from
	// its apiserver_request_total), by "VERB resource[/subresource]", and
	// its garbage collections under apiServerGCKey.
	requests map[string]float64
}

func (p phase) podsPerSecond() float64 { return float64(p.pods) / p.elapsed.Seconds() }

// schedulerRun adds what only the scheduler phase has.
type schedulerRun struct {
	phase
	// startup is from starting the command to its sync barrier (/readyz).
	startup time.Duration
	// firstBind is from the sync barrier to the first bind seen.
	firstBind time.Duration
	// p99Attempt is the 99th percentile of the scheduler's
	// scheduling-attempt histogram (0 for kube-scheduler).
	p99Attempt time.Duration
	metrics    map[string]float64
}

// BenchmarkScheduling measures how fast the real batch-scheduler binds a
// backlog of pending pods, and compares it with the API server's raw
// binding ceiling in the same run, on one fresh control plane per
// iteration:
//
//  1. Setup (not timed): BENCH_NODES nodes (default 500) labeled
//     bench-pool=scheduling, and namespaces of BENCH_PODS identical pods
//     each (default 10000; one container, 100m CPU, 128Mi): one per
//     ceiling phase (spec.schedulerName bench-no-scheduler, which nobody
//     serves) and sched (spec.schedulerName batch-scheduler), plus a
//     fifth of that in warmup. Then an untimed warm-up round binds the
//     warmup pods as the ceiling does: the first phase after the bulk
//     creation runs markedly slower than later ones.
//  2. Ceiling, once per binder concurrency of BENCH_BINDERS (default
//     16,64,128; namespaces ceiling-16, ceiling-64, ceiling-128): that
//     many workers POST pods/binding for every pod of the namespace,
//     round-robin over the nodes, with a client limited to the same QPS
//     and burst as the scheduler (BENCH_QPS, default 5000; BENCH_BURST,
//     default BENCH_QPS). No decisions, no events. Timed from the first
//     bind call to the last bind seen by a watch.
//  3. Scheduler: the real command runs in this process (--leader-elect=false,
//     --node-selector bench-pool=scheduling, the same --kube-api-qps and
//     --kube-api-burst, --bind-concurrency BENCH_BIND_CONCURRENCY if set)
//     with the sched pods already pending. Timed from its sync barrier
//     (the first 200 of /readyz, polled every 5ms; the scheduling loop
//     starts right behind the same barrier) to the last bind seen by the
//     watch. Start-up (informer lists) is reported apart.
//  4. Ceiling again (namespace ceiling-again), with the concurrency that
//     did best in step 2, after the scheduler stopped (and after the
//     diagnostic phase below). Each concurrency's figure is the mean of
//     its phases, which evens out drift on a shared machine; the ceiling
//     is the best figure, so the ratio compares the scheduler with what
//     the API server sustains rather than with one choice of concurrency.
//
// The same watch (an informer on the phase's namespace) times every phase,
// so both sides pay the same watch latency and the API server the same
// fan-out. After the scheduler phase it checks that every pod was bound
// exactly once (the watch saw one transition to a node per pod and never a
// change of node; the scheduler's pods_bound_total equals BENCH_PODS) and
// that no node holds more than its allocatable CPU, memory and pods.
//
// Reported: pods/s (scheduler), ceiling-pods/s (the best concurrency),
// ceiling-N-pods/s per concurrency, ratio (goal ≥ 0.7) and p99-attempt-ms
// (the 99th percentile of the scheduler's scheduling-attempt histogram). A
// summary table, with the CPU time of kube-apiserver, etcd and this process
// per phase, goes to stdout. BENCH_CPUPROFILE=file writes a CPU profile of
// this process (the scheduler, plus the watch) over the timed window of the
// scheduler phase;
// BENCH_APISERVER_PROFILE=prefix writes CPU profiles of the API server
// during the first ceiling phase and the scheduler phase
// (BENCH_APISERVER_PROFILE_SECONDS long, default 5).
//
// A diagnostic phase runs between the scheduler and ceiling-again unless
// BENCH_EVENTS_CEILING=0: "ceil+events" (namespace ceiling-events) binds
// like the best ceiling and records one Scheduled event per pod as the
// scheduler does (an events.k8s.io broadcaster on the binder's client). It
// is not part of the reported ceiling; ratio-vs-events compares the
// scheduler with it, which separates the cost of the scheduler's events
// from the cost of its decisions.
func BenchmarkScheduling(b *testing.B) {
	s := loadSettings(b)
	var scheds []schedulerRun
	var runs []ceilings
	var withEvents []phase
	for b.Loop() {
		c, sr, ev := runOnce(b, s)
		scheds = append(scheds, sr)
		runs = append(runs, c)
		if ev != nil {
			withEvents = append(withEvents, *ev)
		}
	}
	var schedRate, p99 float64
	for _, r := range scheds {
		schedRate += r.podsPerSecond()
		p99 += r.p99Attempt.Seconds() * 1000
	}
	schedRate /= float64(len(scheds))
	p99 /= float64(len(scheds))
	b.ReportMetric(0, "ns/op") // one op is a whole run: meaningless here
	b.ReportMetric(schedRate, "pods/s")
	ceilRate := reportCeilings(b, runs)
	b.ReportMetric(schedRate/ceilRate, "ratio")
	b.ReportMetric(p99, "p99-attempt-ms")
	if len(withEvents) > 0 {
		var evRate float64
		for _, p := range withEvents {
			evRate += p.podsPerSecond()
		}
		evRate /= float64(len(withEvents))
		b.ReportMetric(evRate, "ceil+events-pods/s")
		b.ReportMetric(schedRate/evRate, "ratio-vs-events")
	}
}

// startControlPlane starts a fresh control plane for one run; stop stops
// it (also on SIGINT, through StopOnSignal).
func startControlPlane(b testing.TB) (cp *controlplane.ControlPlane, stop func()) {
	b.Helper()
	cp, err := controlplane.Start()
	if err != nil {
		b.Fatal(err)
	}
	cancelSignal := cp.StopOnSignal()
	return cp, func() {
		cancelSignal()
		if err := cp.Stop(); err != nil {
			b.Errorf("stopping the control plane: %v", err)
		}
	}
}

// runOnce does one full run on a fresh control plane.
func runOnce(b testing.TB, s settings) (ceils ceilings, sched schedulerRun, eventsPhase *phase) {
	runStart := time.Now()
	cp, stop := startControlPlane(b)
	defer stop()
	procs := controlPlaneProcesses()

	// The admin client for setup and watches: no client-side limit worth
	// the name, so setup is quick.
	admin := clientFor(b, cp.Config, 100000, 100000)
	ctx := b.Context()

	setupStart := time.Now()
	nodes := createNodes(b, ctx, admin, s.nodes)
	createPods(b, ctx, admin, "warmup", noSchedulerName, warmupPods(s.pods))
	namespaces := append(s.ceilingNamespaces(), "sched")
	if s.eventsCeiling {
		namespaces = append(namespaces, "ceiling-events")
	}
	for _, ns := range namespaces {
		name := noSchedulerName
		if ns == "sched" {
			name = schedulerName
		}
		createPods(b, ctx, admin, ns, name, s.pods)
	}
	logf("setup: %d nodes and %d+%d×%d pods in %s", s.nodes, warmupPods(s.pods), len(namespaces), s.pods, time.Since(setupStart).Round(time.Millisecond))

	// The first phase after the bulk creation runs markedly slower than
	// later ones (the API server and etcd are still settling); an untimed
	// warm-up round keeps that out of the first ceiling.
	warm := runCeiling(b, s, cp, admin, procs, "warmup", nodes, slices.Max(s.binders))
	logf("warm-up (untimed): %d pods in %s: %.0f pods/s", warm.pods, warm.elapsed.Round(time.Millisecond), warm.podsPerSecond())
	env := ceilingEnv{s: s, cp: cp, admin: admin, procs: procs, nodes: nodes}
	ceils = runCeilingsBefore(b, env)
	sched = runScheduler(b, s, cp, admin, procs, "sched", nodes, schedulerPhase{name: "scheduler", schedulerName: schedulerName})
	logf("scheduler: %d pods in %s: %.0f pods/s (start-up %s, first bind after %s, p99 attempt %s)", sched.pods,
		sched.elapsed.Round(time.Millisecond), sched.podsPerSecond(), sched.startup.Round(time.Millisecond), sched.firstBind.Round(time.Millisecond), sched.p99Attempt)
	if s.eventsCeiling {
		best, _ := ceils.best()
		p := runCeiling(b, s, cp, admin, procs, "ceiling-events", nodes, best)
		p.name = "ceil+events"
		eventsPhase = &p
		logf("ceiling+events: %d pods in %s: %.0f pods/s", p.pods, p.elapsed.Round(time.Millisecond), p.podsPerSecond())
	}
	ceils = ceils.runAgain(b, env)

	printSummary(os.Stdout, s, ceils, sched, eventsPhase, time.Since(runStart))
	return ceils, sched, eventsPhase
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench-scheduling] "+format+"\n", args...)
}

func clientFor(b testing.TB, cfg *rest.Config, qps float32, burst int) kubernetes.Interface {
	b.Helper()
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = qps, burst
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// parallel runs fn(i) for i in [0, n) on workers goroutines and returns the
// first error.
func parallel(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { firstErr = err })
					next.Store(int64(n)) // stop the others early
					return
				}
			}
		})
	}
	wg.Wait()
	return firstErr
}

const setupWorkers = 32

func createNodes(b testing.TB, ctx context.Context, client kubernetes.Interface, n int) []string {
	b.Helper()
	names := make([]string, n)
	err := parallel(n, setupWorkers, func(i int) error {
		names[i] = fmt.Sprintf("bench-node-%05d", i)
		node := st.MakeNode().Name(names[i]).Label(poolLabel, poolValue).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: nodeCPU, v1.ResourceMemory: nodeMemory, v1.ResourcePods: strconv.Itoa(podsPerNode),
		}).Obj()
		node.UID = ""
		_, err := controlplane.CreateNode(ctx, client, node)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return names
}

func createPods(b testing.TB, ctx context.Context, client kubernetes.Interface, ns, scheduler string, n int) {
	b.Helper()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatalf("creating namespace %s: %v", ns, err)
	}
	err := parallel(n, setupWorkers, func(i int) error {
		pod := st.MakePod().Namespace(ns).Name(fmt.Sprintf("pod-%05d", i)).Scheduler(scheduler).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: podCPU, v1.ResourceMemory: podMemory}).Obj()
		pod.UID = ""
		_, err := controlplane.CreatePod(ctx, client, pod)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// bindWatch watches the pods of one namespace and records when each gets
// a node.
type bindWatch struct {
	want int

	mu        sync.Mutex
	nodes     map[string]string // pod name → node
	first     time.Time
	last      time.Time
	times     []time.Time // of each first bind, in order seen
	preBound  []string    // pods already bound in the initial list
	rebinds   []string    // pods whose node changed
	allBound  chan struct{}
	closeOnce sync.Once
	// stop ends the watch: an open watch would hold up the API server's
	// shutdown.
	stop context.CancelFunc
}

// watchBinds starts a watch on ns, whose want pods are all pending, and
// returns once it has listed them.
func watchBinds(b testing.TB, client kubernetes.Interface, ns string, want int) *bindWatch {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	w := &bindWatch{want: want, nodes: map[string]string{}, allBound: make(chan struct{}), stop: cancel}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName != "" {
				w.mu.Lock()
				w.preBound = append(w.preBound, pod.Name)
				w.mu.Unlock()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			now := time.Now()
			oldPod, ok1 := oldObj.(*v1.Pod)
			newPod, ok2 := newObj.(*v1.Pod)
			if !ok1 || !ok2 || newPod.Spec.NodeName == oldPod.Spec.NodeName {
				return
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if oldPod.Spec.NodeName != "" {
				w.rebinds = append(w.rebinds, fmt.Sprintf("%s: %s → %s", newPod.Name, oldPod.Spec.NodeName, newPod.Spec.NodeName))
			}
			if _, seen := w.nodes[newPod.Name]; !seen {
				if len(w.nodes) == 0 {
					w.first = now
				}
				w.last = now
				w.times = append(w.times, now)
			}
			w.nodes[newPod.Name] = newPod.Spec.NodeName
			if len(w.nodes) == w.want {
				w.closeOnce.Do(func() { close(w.allBound) })
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	b.Cleanup(func() { cancel(); factory.Shutdown() })
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			b.Fatalf("watch of %s in %s did not sync", typ, ns)
		}
	}
	if n := len(inf.GetStore().ListKeys()); n != want {
		b.Fatalf("watch of %s: listed %d pods, want %d", ns, n, want)
	}
	return w
}

// wait waits until every pod is bound and returns the time of the first
// and the last bind.
func (w *bindWatch) wait(b testing.TB, what string, timeout time.Duration) (first, last time.Time) {
	b.Helper()
	select {
	case <-w.allBound:
	case <-time.After(timeout):
		w.mu.Lock()
		n := len(w.nodes)
		w.mu.Unlock()
		b.Fatalf("%s: only %d of %d pods bound after %s", what, n, w.want, timeout)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first, w.last
}

// progress returns when, after start, each quarter of the pods was bound.
func (w *bindWatch) progress(start time.Time) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for _, q := range []int{1, 2, 3, 4} {
		if i := len(w.times)*q/4 - 1; i >= 0 {
			out = append(out, w.times[i].Sub(start))
		}
	}
	return out
}

// check verifies that each pod was bound exactly once.
func (w *bindWatch) check(b testing.TB, what string) {
	b.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.preBound) > 0 {
		b.Errorf("%s: %d pods were bound before the phase started, e.g. %s", what, len(w.preBound), w.preBound[0])
	}
	if len(w.rebinds) > 0 {
		b.Errorf("%s: %d pods changed node after being bound, e.g. %s", what, len(w.rebinds), w.rebinds[0])
	}
	if len(w.nodes) != w.want {
		b.Errorf("%s: %d pods bound, want %d", what, len(w.nodes), w.want)
	}
}

// runCeiling binds every pod of ns round-robin over nodes with the
// scheduler's client limits, binders calls in flight, and no decisions.
func runCeiling(b testing.TB, s settings, cp *controlplane.ControlPlane, admin kubernetes.Interface, procs map[string]int, ns string, nodes []string, binders int) phase {
	b.Helper()
	ctx := b.Context()
	list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pods := list.Items
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	w := watchBinds(b, admin, ns, len(pods))
	binder := clientFor(b, cp.Config, s.qps, s.burst)
	var recorder events.EventRecorder
	if ns == "ceiling-events" {
		// As the scheduler does: an events.k8s.io broadcaster on the
		// binder's client, one Normal "Scheduled" event per bound pod.
		evCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		broadcaster := events.NewEventBroadcasterAdapterWithContext(evCtx, binder)
		broadcaster.StartRecordingToSink(evCtx.Done())
		defer broadcaster.Shutdown()
		recorder = broadcaster.NewRecorder("batch-scheduler")
	}

	var profileDone <-chan struct{}
	if ns == ceilingNamespace(s.binders[0]) {
		profileDone = profileAPIServer(b, s, admin, ns)
	}
	req0 := apiRequests(b, admin)
	cpu0 := readCPU(procs)
	start := time.Now()
	err = parallel(len(pods), binders, func(i int) error {
		pod := &pods[i]
		binding := &v1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Target:     v1.ObjectReference{Kind: "Node", Name: nodes[i%len(nodes)]},
		}
		if err := binder.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("binding pod %s/%s: %w", ns, pod.Name, err)
		}
		if recorder != nil {
			recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %s/%s to %s", ns, pod.Name, binding.Target.Name)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	_, last := w.wait(b, ns, s.timeout)
	cpu := readCPU(procs).sub(cpu0)
	reqs := subCounts(apiRequests(b, admin), req0)
	w.check(b, ns)
	if profileDone != nil {
		<-profileDone
	}
	return phase{name: ns, binders: binders, elapsed: last.Sub(start), pods: len(pods), cpu: cpu, requests: reqs, quarters: w.progress(start)}
}

// schedulerPhase says how runScheduler runs the command.
type schedulerPhase struct {
	// name names the phase in errors and the summary.
	name string
	// schedulerName is the command's --scheduler-name: the
	// spec.schedulerName of the pods of the phase's namespace.
	schedulerName string
	// args are more flags for the command (an event handler and its
	// configuration file, say).
	args []string
	// during, if set, runs beside the timed window: it is called once
	// the command is ready, before the phase's counters are read, and
	// the function it returns once the last bind is seen (VMs placed
	// while the pods are, say). Both must return promptly.
	during func() (stop func())
}

// runScheduler starts the real command on the pending pods of ns and
// times it until the last bind.
func runScheduler(b testing.TB, s settings, cp *controlplane.ControlPlane, admin kubernetes.Interface, procs map[string]int, ns string, nodes []string, sp schedulerPhase) schedulerRun {
	b.Helper()
	ctx := b.Context()
	w := watchBinds(b, admin, ns, s.pods)
	addr := freeAddress(b)

	started := time.Now()
	schedCtx, cancel := context.WithCancel(context.Background())
	cmd := app.NewSchedulerCommand()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	args := []string{
		"--kubeconfig", cp.KubeconfigPath,
		"--scheduler-name", sp.schedulerName,
		// Plain HTTP on loopback: the benchmark polls /readyz every 5ms
		// and scrapes /metrics without credentials.
		"--secure-port=0", "--insecure-bind-address=127.0.0.1", "--insecure-port", port,
		"--leader-elect=false",
		"--node-selector", poolLabel + "=" + poolValue,
		"--kube-api-qps", strconv.FormatFloat(float64(s.qps), 'f', -1, 32),
		"--kube-api-burst", strconv.Itoa(s.burst),
		"-v", strconv.Itoa(s.verbosity),
	}
	if s.bindConcurrency > 0 {
		args = append(args, "--bind-concurrency", strconv.Itoa(s.bindConcurrency))
	}
	cmd.SetArgs(append(args, sp.args...))
	cmd.SetContext(schedCtx)
	var stderr st.SyncBuffer
	cmd.SetErr(&stderr)
	done := make(chan int, 1)
	go func() { done <- app.Execute(cmd) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				b.Errorf("batch-scheduler exited with %d: %s", code, stderr.String())
			}
		case <-time.After(60 * time.Second):
			b.Errorf("batch-scheduler did not stop within 60s of being cancelled")
		}
	}
	defer stop()

	ready := waitReady(b, addr, done, &stderr)
	stopDuring := func() {}
	if sp.during != nil {
		stopDuring = sp.during()
	}
	// Counted, like the time, from the sync barrier: the informers'
	// initial lists are start-up.
	req0 := apiRequests(b, admin)
	cpu0 := readCPU(procs)
	profileDone := profileAPIServer(b, s, admin, sp.name)
	stopProfile := startCPUProfile(b, s.cpuProfile)
	defer stopProfile()
	first, last := w.wait(b, sp.name, s.timeout)
	stopDuring()
	stopProfile()
	cpu := readCPU(procs).sub(cpu0)
	reqs := subCounts(apiRequests(b, admin), req0)
	// Give the binds' bookkeeping a moment to reach the metrics, then
	// read them before stopping the scheduler.
	metrics := scrapeMetrics(b, addr)
	stop()
	<-profileDone

	w.check(b, sp.name)
	if got := metrics["batch_scheduler_pods_bound_total"]; int(got) != s.pods {
		b.Errorf("%s: pods_bound_total = %v, want %d", sp.name, got, s.pods)
	}
	checkCapacity(b, ctx, admin, nodes)

	return schedulerRun{
		phase:      phase{name: sp.name, elapsed: last.Sub(ready), pods: s.pods, cpu: cpu, requests: reqs, quarters: w.progress(ready)},
		startup:    ready.Sub(started),
		firstBind:  first.Sub(ready),
		p99Attempt: attemptP99(metrics),
		metrics:    metrics,
	}
}

// startCPUProfile starts a CPU profile of this process into path, if set,
// and returns the function that stops it.
func startCPUProfile(b testing.TB, path string) (stop func()) {
	b.Helper()
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatalf("BENCH_CPUPROFILE: %v (do not combine it with -cpuprofile)", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				b.Error(err)
			}
			logf("CPU profile of the scheduler phase (ready to last bind) written to %s", path)
		})
	}
}

// waitReady polls /readyz every 5ms and returns when it first answered
// 200: the cache's sync barrier, behind which the scheduling loop starts.
func waitReady(b testing.TB, addr string, done chan int, stderr *st.SyncBuffer) time.Time {
	b.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case code := <-done:
			b.Fatalf("batch-scheduler exited with %d before it was ready: %s", code, stderr.String())
		default:
		}
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now()
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.Fatalf("batch-scheduler: /readyz not ready within 5 minutes")
	return time.Time{}
}

// scrapeMetrics reads the batch_scheduler_* samples of /metrics, keyed by
// name and labels as printed.
func scrapeMetrics(b testing.TB, addr string) map[string]float64 {
	b.Helper()
	// The watch can see a bind before the binder goroutine counted it.
	time.Sleep(200 * time.Millisecond)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatalf("GET /metrics: %v", err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "batch_scheduler_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out
}

// checkCapacity verifies that no benchmark node holds more than its
// allocatable CPU, memory and pod count.
func checkCapacity(b testing.TB, ctx context.Context, client kubernetes.Interface, nodes []string) {
	b.Helper()
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	type usage struct {
		cpu, mem resource.Quantity
		pods     int64
	}
	used := map[string]*usage{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" {
			continue
		}
		u := used[p.Spec.NodeName]
		if u == nil {
			u = &usage{}
			used[p.Spec.NodeName] = u
		}
		u.pods++
		for _, c := range p.Spec.Containers {
			u.cpu.Add(c.Resources.Requests[v1.ResourceCPU])
			u.mem.Add(c.Resources.Requests[v1.ResourceMemory])
		}
	}
	nodeList, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: poolLabel + "=" + poolValue})
	if err != nil {
		b.Fatal(err)
	}
	if len(nodeList.Items) != len(nodes) {
		b.Errorf("capacity check: %d nodes, want %d", len(nodeList.Items), len(nodes))
	}
	minPods, maxPods := int64(math.MaxInt64), int64(0)
	for _, n := range nodeList.Items {
		u := used[n.Name]
		if u == nil {
			u = &usage{}
		}
		alloc := n.Status.Allocatable
		if u.cpu.Cmp(alloc[v1.ResourceCPU]) > 0 || u.mem.Cmp(alloc[v1.ResourceMemory]) > 0 || u.pods > alloc.Pods().Value() {
			b.Errorf("node %s over its allocatable: cpu %s/%s, memory %s/%s, pods %d/%d", n.Name,
				u.cpu.String(), alloc.Cpu().String(), u.mem.String(), alloc.Memory().String(), u.pods, alloc.Pods().Value())
		}
		minPods, maxPods = min(minPods, u.pods), max(maxPods, u.pods)
	}
	logf("capacity check: %d nodes, none over allocatable; pods per node %d..%d", len(nodeList.Items), minPods, maxPods)
}

// profileAPIServer starts a CPU profile of the API server over
// s.apiserverProfileSeconds, written to PREFIX-phase.pprof, if
// BENCH_APISERVER_PROFILE is set. The channel closes when it is written.
func profileAPIServer(b testing.TB, s settings, client kubernetes.Interface, phase string) <-chan struct{} {
	done := make(chan struct{})
	if s.apiserverProfile == "" {
		close(done)
		return done
	}
	path := s.apiserverProfile + "-" + phase + ".pprof"
	go func() {
		defer close(done)
		data, err := client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(s.apiserverProfileSeconds)).
			Timeout(time.Duration(s.apiserverProfileSeconds+30) * time.Second).DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		if err != nil {
			logf("API server profile for %s: %v", phase, err)
			return
		}
		logf("API server CPU profile of the first %ds of %s written to %s", s.apiserverProfileSeconds, phase, path)
	}()
	return done
}

// apiRequests reads the API server's apiserver_request_total, summed by
// "VERB resource[/subresource]" (plus " code N" for codes other than 2xx),
// and the count of its garbage collections, under apiServerGCKey.
func apiRequests(b testing.TB, client kubernetes.Interface) map[string]float64 {
	b.Helper()
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(b.Context())
	if err != nil {
		b.Fatalf("reading the API server's /metrics: %v", err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go_gc_duration_seconds_count "); ok {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				out[apiServerGCKey] = n
			}
			continue
		}
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "apiserver_request_total{")
		if !ok {
			continue
		}
		labelText, valueText, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(valueText, 64)
		if err != nil {
			continue
		}
		labels := map[string]string{}
		for kv := range strings.SplitSeq(labelText, ",") {
			k, val, _ := strings.Cut(kv, "=")
			labels[k] = strings.Trim(val, `"`)
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		if c := labels["code"]; !strings.HasPrefix(c, "2") {
			key += " code " + c
		}
		out[key] += v
	}
	return out
}

func subCounts(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		if d := v - b[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// formatRequests lists the requests of p that number at least 1% of its
// pods (so not the benchmark's own reads of /metrics), and all failed ones,
// most first, with their count per pod.
func formatRequests(p phase) string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	for k, v := range p.requests {
		if k == apiServerGCKey {
			continue
		}
		if v >= float64(p.pods)/100 || strings.Contains(k, "code") {
			list = append(list, kv{k, v})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v || list[i].v == list[j].v && list[i].k < list[j].k })
	var parts []string
	for _, e := range list {
		parts = append(parts, fmt.Sprintf("%s %.0f (%.2f/pod)", e.k, e.v, e.v/float64(p.pods)))
	}
	if len(parts) == 0 {
		parts = append(parts, "-")
	}
	out := strings.Join(parts, ", ")
	// A cycle of the API server's collector marks its whole heap (all the
	// pods of the cluster): a phase with one more than another pays
	// seconds of its CPU for it, whoever binds.
	return out + fmt.Sprintf("; kube-apiserver GC cycles %.0f", p.requests[apiServerGCKey])
}

// apiServerGCKey is where apiRequests counts the API server's garbage
// collections (go_gc_duration_seconds_count) among the requests.
const apiServerGCKey = "kube-apiserver GC cycles"

func freeAddress(b testing.TB) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func printSummary(out io.Writer, s settings, ceils ceilings, sched schedulerRun, events *phase, total time.Duration) {
	_, ceiling := ceils.best()
	fmt.Fprintf(out, "\nscheduling throughput: %d nodes, %d pods per phase, client QPS %.0f burst %d, scheduler %s\n",
		s.nodes, s.pods, s.qps, s.burst, bindConcurrencyText(s))
	procs := []string{"kube-apiserver", "etcd", "self"}
	printPhaseHeader(out, procs...)
	phases := []phase{}
	for _, c := range ceils[:len(ceils)-1] {
		printPhaseRow(out, c, "", procs...)
		phases = append(phases, c)
	}
	printPhaseRow(out, sched.phase, fmt.Sprintf("%.2f", sched.podsPerSecond()/ceiling), procs...)
	phases = append(phases, sched.phase)
	if events != nil {
		printPhaseRow(out, *events, fmt.Sprintf("(%.2f)", events.podsPerSecond()/ceiling), procs...)
		phases = append(phases, *events)
	}
	again := ceils[len(ceils)-1]
	printPhaseRow(out, again, "", procs...)
	phases = append(phases, again)
	fmt.Fprintf(out, "%s; scheduler %.0f pods/s; ratio %.2f (goal ≥ 0.70); p99 scheduling attempt %s\n",
		ceils.describe(), sched.podsPerSecond(), sched.podsPerSecond()/ceiling, sched.p99Attempt)
	if events != nil {
		fmt.Fprintf(out, "ceil+events (binds plus one event per pod, as the scheduler does; diagnostic): %.0f pods/s; scheduler/ceil+events %.2f\n",
			events.podsPerSecond(), sched.podsPerSecond()/events.podsPerSecond())
	}
	printSchedulerLine(out, sched)
	printQuarters(out, phases)
	fmt.Fprintf(out, "CPU columns: seconds of CPU used during the phase (self = this process: the ceiling's binder or the scheduler, plus the watch); cpu-ms/pod: all three per pod, steadier than time on a shared machine; run time %s\n\n", total.Round(time.Second))
}

// bindConcurrencyText says how the scheduler's binds were bounded.
func bindConcurrencyText(s settings) string {
	if s.bindConcurrency > 0 {
		return fmt.Sprintf("--bind-concurrency=%d", s.bindConcurrency)
	}
	return "default --bind-concurrency"
}

// printSchedulerLine prints the scheduler's start-up, cycles and binds.
func printSchedulerLine(out io.Writer, sched schedulerRun) {
	m := sched.metrics
	// Summed over profiles: the histogram is labelled by profile and
	// result.
	var sum, cnt float64
	for k, v := range m {
		if !strings.Contains(k, `result="scheduled"`) {
			continue
		}
		switch {
		case strings.HasPrefix(k, "batch_scheduler_scheduling_attempt_duration_seconds_sum{"):
			sum += v
		case strings.HasPrefix(k, "batch_scheduler_scheduling_attempt_duration_seconds_count{"):
			cnt += v
		}
	}
	fmt.Fprintf(out, "scheduler: start-up (command to /readyz) %s; first bind %s after ready; ", sched.startup.Round(time.Millisecond), sched.firstBind.Round(time.Millisecond))
	if cnt > 0 {
		fmt.Fprintf(out, "%.0f cycles, mean %.3fms, p99 %s, loop busy %.0f%% of the phase; ", cnt, 1000*sum/cnt, sched.p99Attempt, 100*sum/sched.elapsed.Seconds())
	}
	fmt.Fprintf(out, "pods_bound_total %.0f, bind_errors_total %.0f\n", m["batch_scheduler_pods_bound_total"], m["batch_scheduler_bind_errors_total"])
}
