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
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// The nodes of BenchmarkQueues: simulated kubelets (KWOK) that run the
// pods bound to them, of queueNodeCPU CPUs each; every pod requests CPU
// only.
const (
	queueNodeCPU    = 4
	queueNodeMemory = "16Gi"
	queueNodePods   = 110

	// queueRunForever is the run time of pods that must outlast their
	// phase.
	queueRunForever = "1h"

	queueFairNamespace    = "queues-fairness"
	queueReclaimNamespace = "queues-reclaim"

	// reclaimGangSize is the size and quorum of the gangs of the reclaim
	// phase.
	reclaimGangSize = 8
	// Queues of the reclaim phase.
	guaranteedQueue = "guaranteed"
	borrowerQueue   = "borrower"
)

var queueGVR = v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.QueuesResource)

// fairQueues are the queues of the fairness phase and their weights.
var fairQueues = []struct {
	name   string
	weight int64
}{{"fair-a", 1}, {"fair-b", 1}, {"fair-c", 2}, {"fair-d", 4}}

// Phases of BenchmarkQueues (BENCH_QUEUE_PHASES).
const (
	phaseFairness   = "fairness"
	phaseReclaim    = "reclaim"
	phaseThroughput = "throughput"
	// phaseBacklog is in queues_backlog_test.go.
	phaseBacklog = "backlog"
)

// queueSettings are BenchmarkQueues' knobs.
type queueSettings struct {
	// settings holds the knobs every scheduler benchmark shares (client
	// QPS and burst, BENCH_TIMEOUT_SECONDS, BENCH_V, the profiles);
	// nodes and pods are this benchmark's.
	settings
	fairFor, fairSkip time.Duration
	// backlog is the CPU (milli) of pending pods each queue of the
	// fairness phase keeps at least.
	backlog int64
	reps    int
	seed    uint64
	settle  time.Duration
	phases  map[string]bool
	// fairControl runs the fairness workload once more without queues
	// first (BENCH_QUEUE_FAIR_CONTROL, 1).
	fairControl bool
	// backlogFor and backlogSkip are the backlog phase's time per variant
	// and the part of it left out; backlogVariants its variants, in order.
	backlogFor, backlogSkip time.Duration
	backlogVariants         []string
}

func loadQueueSettings(b testing.TB) queueSettings {
	b.Helper()
	s := queueSettings{settings: loadCommonSettings(b)}
	// With -short (hack/test-benchmarks.sh's smoke run): 20 nodes, 160
	// pods, 10 s of fairness, 2 reclaims.
	s.nodes = envInt(b, "BENCH_QUEUE_NODES", smoke(500, 20))
	s.pods = envInt(b, "BENCH_QUEUE_PODS", smoke(10000, 160))
	s.fairFor = time.Duration(envInt(b, "BENCH_QUEUE_FAIR_SECONDS", smoke(120, 10))) * time.Second
	s.fairSkip = time.Duration(envInt(b, "BENCH_QUEUE_SKIP_SECONDS", smoke(30, 2))) * time.Second
	s.fairControl = envInt(b, "BENCH_QUEUE_FAIR_CONTROL", 1) != 0
	s.backlog = int64(envInt(b, "BENCH_QUEUE_BACKLOG_CPU", max(24, s.nodes*queueNodeCPU/10))) * 1000
	s.reps = envInt(b, "BENCH_QUEUE_RECLAIM_REPS", smoke(5, 2))
	s.seed = uint64(envInt(b, "BENCH_QUEUE_SEED", 1))
	s.settle = time.Duration(envInt(b, "BENCH_QUEUE_SETTLE_SECONDS", 10)) * time.Second
	loadBacklogSettings(b, &s)
	s.phases = map[string]bool{}
	phases := os.Getenv("BENCH_QUEUE_PHASES")
	if phases == "" {
		// The backlog phase is opt-in at full size (it doubles the run
		// time); the smoke run includes it.
		phases = strings.Join(smoke([]string{phaseFairness, phaseReclaim, phaseThroughput}, []string{phaseFairness, phaseReclaim, phaseThroughput, phaseBacklog}), ",")
	}
	for p := range strings.SplitSeq(phases, ",") {
		switch p = strings.TrimSpace(p); p {
		case phaseFairness, phaseReclaim, phaseThroughput, phaseBacklog:
			s.phases[p] = true
		default:
			b.Fatalf("BENCH_QUEUE_PHASES=%q: %q is not one of %s, %s, %s, %s", phases, p, phaseFairness, phaseReclaim, phaseThroughput, phaseBacklog)
		}
	}
	if s.nodes <= 0 || s.pods <= 0 || s.reps <= 0 || s.fairFor <= s.fairSkip {
		b.Fatalf("BENCH_QUEUE_NODES (%d), BENCH_QUEUE_PODS (%d) and BENCH_QUEUE_RECLAIM_REPS (%d) must be positive, BENCH_QUEUE_FAIR_SECONDS (%s) above BENCH_QUEUE_SKIP_SECONDS (%s)",
			s.nodes, s.pods, s.reps, s.fairFor, s.fairSkip)
	}
	// The throughput pods (100m each) must fit, with room to spare, so
	// that placement never fails for lack of CPU or pod slots.
	if s.phases[phaseThroughput] && (s.pods > s.nodes*queueNodeCPU*10*8/10 || s.pods > s.nodes*queueNodePods*8/10) {
		b.Fatalf("BENCH_QUEUE_PODS=%d is too many for BENCH_QUEUE_NODES=%d: keep it ≤ %d", s.pods, s.nodes, s.nodes*queueNodeCPU*10*8/10)
	}
	// The guaranteed queue's gangs stay within its guarantee (a quarter
	// of the cluster).
	if s.phases[phaseReclaim] && s.reps*reclaimGangSize > s.nodes*queueNodeCPU/4 {
		b.Fatalf("BENCH_QUEUE_RECLAIM_REPS=%d: %d gangs of %d do not fit in a guarantee of %d CPUs", s.reps, s.reps, reclaimGangSize, s.nodes*queueNodeCPU/4)
	}
	return s
}

// capacityMilli is the cluster's CPU in milli-CPU.
func (s queueSettings) capacityMilli() int64 { return int64(s.nodes) * queueNodeCPU * 1000 }

func qlogf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench-queues] "+format+"\n", args...)
}

// BenchmarkQueues measures tenant queues (the Queue CRD, the Capacity and
// Reclaim plugins, the cache's order of queues) on a real kube-apiserver
// and etcd with simulated kubelets (KWOK, started by test/controlplane:
// pods bound to its nodes turn Running, and succeed after their
// sim.batch-scheduler.io/run-for annotation), one fresh control plane per
// b.N iteration. The real command runs with BenchmarkScheduling's flags
// (client QPS and burst, --node-selector, no leader election), one
// instance per phase: in this process for the throughput phase (as
// BenchmarkScheduling's scheduler phase), and as a child process for the
// fairness, reclaim and backlog phases (this test binary re-executed, as the
// profiled cold start does, so under a CPU profile; or the binary
// BENCH_BATCH_SCHEDULER), so that a crash of the scheduler fails its
// phase, with the excerpt of its log, and the next phases still run
// (BENCH_QUEUE_LOGS=DIR keeps the logs and profiles:
// DIR/batch-scheduler-PHASE.log and DIR/batch-scheduler-PHASE/cpu.pprof).
// Setup: BENCH_QUEUE_NODES KWOK nodes (500) of 4 CPUs, the
// Queue CRD installed once. Pods are created directly (no Jobs), as gangs
// (scheduling.k8s.io/group-name and min-available) where gangs are said,
// naming their queue with the label batch-scheduler.io/queue, requesting
// CPU only. Queues are cluster-scoped: each phase deletes its queues,
// pods and namespace before the next starts.
//
//  1. Fairness: queues fair-a, fair-b, fair-c, fair-d of weights 1, 1,
//     2, 4 (borrow, no guarantee). Each keeps at least
//     BENCH_QUEUE_BACKLOG_CPU of gangs pending (default a tenth of the
//     cluster, at least 24 CPUs), and enough that its bound and pending
//     pods ask for 1.25 times its fair share, so that it always demands
//     more than its share: gangs of 1 to 8 pods of 1 CPU that run
//     5 to 15 s, drawn from an RNG seeded with BENCH_QUEUE_SEED and the
//     queue's index; finished pods are deleted, as a job controller
//     would. Every second the CPU of the running pods of each queue is
//     sampled from an informer; the first BENCH_QUEUE_SKIP_SECONDS (30)
//     of BENCH_QUEUE_FAIR_SECONDS (120) are left out. Reported per queue:
//     the time-averaged share of the cluster's CPU it ran against its
//     fair share from pkg/fairshare.Compute on the same inputs (capacity
//     nodes × 4 CPUs, every queue demanding more than the capacity);
//     fair-worst-dev is the worst |measured/fair - 1| (goal ≤ 0.05), and
//     utilization the time-averaged running CPU ÷ capacity (goal ≥ 0.95);
//     fair-worst-dev-bound and utilization-bound are the same for the
//     bound pods (the scheduler's side: the simulated kubelets start pods
//     seconds after their bind on a busy machine, tens of seconds at 500
//     nodes on 2 cores). The table adds each queue's part of the running
//     CPU (of-used), its pending CPU and demand, the pods evicted from
//     it, and the fair share the scheduler computed (its metrics). Unless
//     BENCH_QUEUE_FAIR_CONTROL=0, the same workload runs first with the
//     scheduler's queues disabled (disableQueues, no Queue object), the
//     baseline: control-utilization, control-fair-worst-dev and
//     utilization-vs-control (queues ÷ control).
//  2. Reclaim: queue "guaranteed" (spec.guaranteed cpu = a quarter of the
//     cluster) and queue "borrower" (weight 1 each). The borrower fills
//     the cluster with gangs of 8 pods of 1 CPU that run 1h (created
//     before the scheduler starts), and keeps 2 more pending. BENCH_QUEUE_RECLAIM_REPS times (5), once the cluster
//     is full again: the guaranteed queue creates a gang of 8 pods of 1
//     CPU (within its guarantee); timed from before its first create call
//     to the informer seeing its 8th pod Running. Reported:
//     reclaim-p50-s (goal < 5 s at 500 nodes) and reclaim-max-s. On every
//     pod event the live pods of each gang are counted (bound, not
//     finished, not being deleted: an evicted pod stops counting at its
//     deletion; see queueTracker): a gang left with some but fewer than
//     its quorum live for longer than BENCH_QUEUE_SETTLE_SECONDS (10), or
//     at the end of the phase after losing pods, fails the benchmark (the
//     fairness phase is judged the same way).
//  3. Throughput: BENCH_QUEUE_PODS (10000) single pods (not gangs: every
//     pod is a job of its own, so the per-job work of queues, their order
//     and the capacity check, is paid for each pod) of 100m that run 1h,
//     created pending before the command starts; timed from its sync
//     barrier to the last bind seen, as BenchmarkScheduling's scheduler
//     phase (runScheduler, with its checks). In the order a (no Queue
//     object; the pods name no queue), b (10 Queues of weight 1, the pods
//     spread over them), a again. Reported: noqueues-pods/s (the mean of
//     both a), queues-pods/s and queues-ratio = b ÷ a (goal ≥ 0.9).
//  4. Backlog (issue 36; queues_backlog_test.go, opt-in but in the -short
//     smoke run): queues big (weight 3, gangs of 4 to 32 pods, quorum the
//     size), small-a (weight 2, single pods and gangs of 1 to 4) and
//     small-b (weight 1, single pods), every pod 1 CPU running 5 to 60 s
//     and saying so (batch-scheduler.io/expected-runtime, so that it may
//     backfill), each queue backlogged as in the fairness phase. Run
//     BENCH_QUEUE_BACKLOG_VARIANTS (off,on), each with its own scheduler
//     and namespace for BENCH_QUEUE_BACKLOG_SECONDS (240), the first
//     BENCH_QUEUE_BACKLOG_SKIP_SECONDS (60) left out: on is the default
//     profile (Reservation first among the PostFilter plugins), off
//     leaves Reservation out (backlogNoReservationConfig). Reported per variant
//     (backlog-off-..., backlog-on-...): per queue the time-averaged bound
//     and running share ÷ fair share, worst-dev-bound, evictions/100pods
//     (evicted ÷ Succeeded in the window), utilization-bound, the wait
//     (first pod seen → quorum bound; single pods: → bound) of the jobs
//     started in the window, p50 and p99 of gangs ≥ 16 pods and p99 of
//     single pods (the table adds those still waiting at the end),
//     sched-cpu-ms/pod (the scheduler's CPU ÷ pods bound), and the error
//     of the start estimates of the scheduler's GET /debug/standing,
//     polled every second: per gang started in the window, real start −
//     the first and the last estimate seen before it, median and p90 of
//     |error| by basis (est-first-reservation-p50-s...; n/a where the
//     endpoint answers 404).
//
// They run in the order reclaim, throughput, fairness, backlog (the most
// churn last; each waits until the API server takes fewer than 10 pod
// status writes a second). BENCH_QUEUE_PHASES (fairness,reclaim,throughput;
// with -short backlog too) selects the phases. A summary table goes to
// stdout.
func BenchmarkQueues(b *testing.B) {
	s := loadQueueSettings(b)
	var runs []queueRun
	for b.Loop() {
		runs = append(runs, runQueuesOnce(b, s))
	}
	b.ReportMetric(0, "ns/op") // one op is a whole run
	mean := func(f func(r queueRun) float64) float64 {
		var sum float64
		for _, r := range runs {
			sum += f(r)
		}
		return sum / float64(len(runs))
	}
	// A phase whose scheduler crashed reports no figure (the run failed).
	crashed := func(f func(r queueRun) string) bool {
		return slices.ContainsFunc(runs, func(r queueRun) bool { return f(r) != "" })
	}
	if s.phases[phaseFairness] && !crashed(func(r queueRun) string { return r.fair.crash }) {
		b.ReportMetric(mean(func(r queueRun) float64 { return r.fair.worst }), "fair-worst-dev")
		b.ReportMetric(mean(func(r queueRun) float64 { return r.fair.utilization }), "utilization")
		b.ReportMetric(mean(func(r queueRun) float64 { return r.fair.worstBound }), "fair-worst-dev-bound")
		b.ReportMetric(mean(func(r queueRun) float64 { return r.fair.boundUtil }), "utilization-bound")
		for i, q := range fairQueues {
			b.ReportMetric(mean(func(r queueRun) float64 { return r.fair.queues[i].measured / r.fair.queues[i].fair }), q.name+"-share/fair")
		}
		if s.fairControl && !crashed(func(r queueRun) string { return r.control.crash }) {
			b.ReportMetric(mean(func(r queueRun) float64 { return r.control.worst }), "control-fair-worst-dev")
			b.ReportMetric(mean(func(r queueRun) float64 { return r.control.utilization }), "control-utilization")
			b.ReportMetric(mean(func(r queueRun) float64 { return r.fair.utilization / r.control.utilization }), "utilization-vs-control")
		}
	}
	if s.phases[phaseReclaim] && !crashed(func(r queueRun) string { return r.reclaim.crash }) {
		b.ReportMetric(mean(func(r queueRun) float64 { return r.reclaim.p50.Seconds() }), "reclaim-p50-s")
		b.ReportMetric(mean(func(r queueRun) float64 { return r.reclaim.max.Seconds() }), "reclaim-max-s")
	}
	if s.phases[phaseBacklog] {
		reportBacklog(b, s, runs)
	}
	if s.phases[phaseThroughput] {
		a := mean(func(r queueRun) float64 { return r.tput.noQueues() })
		q := mean(func(r queueRun) float64 { return r.tput.queues.podsPerSecond() })
		b.ReportMetric(a, "noqueues-pods/s")
		b.ReportMetric(q, "queues-pods/s")
		b.ReportMetric(mean(func(r queueRun) float64 { return r.tput.ratio() }), "queues-ratio")
	}
}

// queueRun is the outcome of one run.
type queueRun struct {
	// fair is the fairness phase, control the same workload without
	// queues (unless BENCH_QUEUE_FAIR_CONTROL=0).
	fair, control fairnessResult
	reclaim       reclaimResult
	tput          queueThroughput
	// backlog has one result per variant of the backlog phase.
	backlog []backlogResult
}

// queueEnv is what the phases of one run share.
type queueEnv struct {
	s     queueSettings
	cp    *controlplane.ControlPlane
	admin kubernetes.Interface
	// pods is a protobuf client on a connection of its own, for the bulk
	// work on pods (creations, deletions, the trackers' informers): less
	// of the API server's CPU than JSON.
	pods  kubernetes.Interface
	dyn   dynamic.Interface
	procs map[string]int
	nodes []string
	// bin is the batch-scheduler binary of the fairness and reclaim
	// phases; empty, this test binary runs the command (see
	// startQueueScheduler). logDir holds their logs.
	bin, logDir string
}

// withScheduler is e.procs plus the scheduler process of qs.
func (e queueEnv) withScheduler(qs *queueScheduler) map[string]int {
	out := map[string]int{"batch-scheduler": qs.p.Pid()}
	for k, v := range e.procs {
		out[k] = v
	}
	return out
}

func runQueuesOnce(b *testing.B, s queueSettings) queueRun {
	runStart := time.Now()
	cp, stop := startControlPlane(b)
	defer stop()
	admin := clientFor(b, cp.Config, 100000, 100000)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	setupStart := time.Now()
	if err := controlplane.InstallCRDFile(ctx, dyn, filepath.Join("..", "..", "deploy", "crds", "batch-scheduler.io_queues.yaml")); err != nil {
		b.Fatal(err)
	}
	e := queueEnv{s: s, cp: cp, admin: admin, pods: seedClients(b, cp.Config, 1)[0], dyn: dyn, procs: queueProcesses(), nodes: createKwokNodes(b, ctx, admin, s.nodes)}
	qlogf("setup: %d KWOK nodes of %d CPUs and the Queue CRD in %s", s.nodes, queueNodeCPU, time.Since(setupStart).Round(time.Millisecond))
	if s.phases[phaseFairness] || s.phases[phaseReclaim] || s.phases[phaseBacklog] {
		e.bin = os.Getenv("BENCH_BATCH_SCHEDULER")
		if e.logDir = os.Getenv("BENCH_QUEUE_LOGS"); e.logDir == "" {
			e.logDir = b.TempDir()
		} else if err := os.MkdirAll(e.logDir, 0o755); err != nil {
			b.Fatal(err)
		}
	}

	// The phase with the most churn runs last: the simulated kubelets
	// finish its pods' stages (on pods already deleted, too) for a while
	// after it, and the reclaim latency is the figure most sensitive to a
	// busy API server. Each phase waits for the API server to be quiet.
	var r queueRun
	if s.phases[phaseReclaim] {
		waitQuiet(b, admin)
		r.reclaim = runReclaim(b, e)
	}
	if s.phases[phaseThroughput] {
		r.tput = runQueueThroughput(b, e)
	}
	if s.phases[phaseFairness] {
		if s.fairControl {
			waitQuiet(b, admin)
			r.control = runFairness(b, e, true)
		}
		waitQuiet(b, admin)
		r.fair = runFairness(b, e, false)
	}
	if s.phases[phaseBacklog] {
		for _, v := range s.backlogVariants {
			waitQuiet(b, admin)
			r.backlog = append(r.backlog, runBacklog(b, e, v))
		}
	}
	printQueuesSummary(os.Stdout, s, r, time.Since(runStart))
	return r
}

// queueProcesses is controlPlaneProcesses plus the simulated kubelets
// (kwok), a child of this process too.
func queueProcesses() map[string]int {
	out := controlPlaneProcesses()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, ppid, _, err := procStat(pid); err == nil && ppid == os.Getpid() && comm == "kwok" {
			out["kwok"] = pid
		}
	}
	return out
}

// createKwokNodes creates n nodes of the simulated kubelets, labeled for
// the scheduler's --node-selector, and waits until each is Ready.
func createKwokNodes(b testing.TB, ctx context.Context, client kubernetes.Interface, n int) []string {
	b.Helper()
	names := make([]string, n)
	err := parallel(n, setupWorkers, func(i int) error {
		names[i] = fmt.Sprintf("queue-node-%05d", i)
		node := st.MakeNode().Name(names[i]).Label(poolLabel, poolValue).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: strconv.Itoa(queueNodeCPU), v1.ResourceMemory: queueNodeMemory, v1.ResourcePods: strconv.Itoa(queueNodePods),
		}).Obj()
		node.UID = ""
		_, err := controlplane.CreateKwokNode(ctx, client, node)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return names
}

// waitQuiet waits, at most 2 minutes, until the API server takes fewer
// than 10 pod status writes a second (over 2 s): the simulated kubelets
// have played the stages of the pods of the phase before (deleted ones
// included, which answer 404).
func waitQuiet(b testing.TB, client kubernetes.Interface) {
	b.Helper()
	start := time.Now()
	statusWrites := func() float64 {
		var n float64
		for k, v := range apiRequests(b, client) {
			if strings.HasPrefix(k, "PATCH pods/status") || strings.HasPrefix(k, "PUT pods/status") {
				n += v
			}
		}
		return n
	}
	last := statusWrites()
	for time.Since(start) < 2*time.Minute {
		time.Sleep(2 * time.Second)
		cur := statusWrites()
		if (cur-last)/2 < 10 {
			if waited := time.Since(start); waited > 3*time.Second {
				qlogf("waited %s for the API server to be quiet", waited.Round(time.Second))
			}
			return
		}
		last = cur
	}
	qlogf("the API server still takes more than 10 pod status writes a second after 2 minutes; going on")
}

// createQueue creates a Queue of this project.
func createQueue(b testing.TB, dyn dynamic.Interface, name string, spec map[string]any) {
	b.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "Queue",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := dyn.Resource(queueGVR).Create(b.Context(), u, metav1.CreateOptions{}); err != nil {
		b.Fatalf("creating Queue %s: %v", name, err)
	}
}

// deleteQueues deletes the Queues and waits until they are gone.
func deleteQueues(b testing.TB, dyn dynamic.Interface, names ...string) {
	b.Helper()
	ctx := b.Context()
	for _, name := range names {
		if err := dyn.Resource(queueGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			b.Fatalf("deleting Queue %s: %v", name, err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		list, err := dyn.Resource(queueGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d Queues still there a minute after their deletion", len(list.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// clearNamespace deletes every pod of ns (grace 0: the simulated kubelets
// would stop them one by one), waits until none is left, and
// deletes the namespace. It does not wait for the namespace controller,
// which takes tens of seconds to notice that an emptied namespace is
// empty: nothing of the namespace is left to disturb the next phase.
func clearNamespace(b testing.TB, client kubernetes.Interface, ns string) {
	b.Helper()
	start := time.Now()
	ctx := b.Context()
	grace := int64(0)
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	// One call per pod, in parallel: the API server deletes a collection
	// one pod at a time (--delete-collection-workers=1).
	err = parallel(len(list.Items), setupWorkers, func(i int) error {
		err := client.CoreV1().Pods(ns).Delete(ctx, list.Items[i].Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		b.Fatalf("deleting the pods of %s: %v", ns, err)
	}
	for {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(list.Items) == 0 {
			break
		}
		if time.Since(start) > 2*time.Minute {
			b.Fatalf("%d pods of %s left 2 minutes after their deletion", len(list.Items), ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		b.Fatalf("deleting namespace %s: %v", ns, err)
	}
	qlogf("the pods of namespace %s deleted in %s", ns, time.Since(start).Round(time.Millisecond))
}

func createNamespace(b testing.TB, client kubernetes.Interface, ns string) {
	b.Helper()
	if _, err := client.CoreV1().Namespaces().Create(b.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatalf("creating namespace %s: %v", ns, err)
	}
}

// queuePod is a pod of batch-scheduler in queue (none if empty) and gang
// (none if empty) of quorum, requesting cpu, running for runFor.
func queuePod(ns, name, queue, gang string, quorum int, cpu, runFor string) *v1.Pod {
	w := st.MakePod().Namespace(ns).Name(name).Scheduler(schedulerName).
		Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Annotation(controlplane.RunForAnnotation, runFor)
	if queue != "" {
		w = w.Label(framework.QueueLabel, queue)
	}
	if gang != "" {
		w = w.Group(gang).MinAvailable(strconv.Itoa(quorum))
	}
	pod := w.Obj()
	pod.UID, pod.ResourceVersion = "", ""
	return pod
}

// createGang creates the size pods of gang (quorum size, 1 CPU each) at
// once.
func createGang(ctx context.Context, client kubernetes.Interface, ns, queue, gang string, size int, runFor string) error {
	return createQueueJob(ctx, client, ns, queue, gang, queueJob{size: size, runFor: runFor})
}

// queueJob is one job of a generator: size pods of cpu each (1 CPU if
// empty) that run for runFor, a gang of quorum size; or, single, one pod
// that names no gang. With expected, its pods say runFor in
// framework.ExpectedRuntimeAnnotation too, so that they may backfill
// reserved room.
type queueJob struct {
	size             int
	cpu              string
	runFor           string
	single, expected bool
}

// milli is the job's CPU in milli-CPU.
func (j queueJob) milli() int64 {
	cpu := j.cpu
	if cpu == "" {
		cpu = "1"
	}
	q := resource.MustParse(cpu)
	return int64(j.size) * q.MilliValue()
}

// createQueueJob creates the pods of job name at once: name-0, name-1...
// for a gang, name for a single pod.
func createQueueJob(ctx context.Context, client kubernetes.Interface, ns, queue, name string, j queueJob) error {
	cpu := j.cpu
	if cpu == "" {
		cpu = "1"
	}
	return parallel(j.size, j.size, func(i int) error {
		var pod *v1.Pod
		if j.single {
			pod = queuePod(ns, name, queue, "", 0, cpu, j.runFor)
		} else {
			pod = queuePod(ns, fmt.Sprintf("%s-%d", name, i), queue, name, j.size, cpu, j.runFor)
		}
		if j.expected {
			pod.Annotations[framework.ExpectedRuntimeAnnotation] = j.runFor
		}
		_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

// queueScheduler is batch-scheduler running as a child process for the
// fairness, reclaim or backlog phase: a crash of the scheduler then fails that
// phase, with its log, and the benchmark goes on with the next phases.
type queueScheduler struct {
	name string
	p    *process
	addr string
	// exit is the error of the process once it exited on its own.
	exit    error
	exitAt  time.Time
	started time.Time
}

// startQueueScheduler starts the command with runScheduler's flags and
// returns once it is ready (/readyz answers 200).
func startQueueScheduler(b testing.TB, e queueEnv, name string, extra ...string) *queueScheduler {
	b.Helper()
	addr := freeAddress(b)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	args := []string{
		"--kubeconfig", e.cp.KubeconfigPath,
		"--scheduler-name", schedulerName,
		"--secure-port=0", "--insecure-bind-address=127.0.0.1", "--insecure-port", port,
		"--leader-elect=false",
		"--node-selector", poolLabel + "=" + poolValue,
		"--kube-api-qps", strconv.FormatFloat(float64(e.s.qps), 'f', -1, 32),
		"--kube-api-burst", strconv.Itoa(e.s.burst),
		"-v", strconv.Itoa(e.s.verbosity),
	}
	args = append(args, extra...)
	spec := harness.ProcessSpec{Name: name, Bin: e.bin, Args: args, Dir: e.logDir}
	if e.bin == "" {
		// This test binary re-executed runs the command (TestMain, as
		// the profiled cold start does): the code under test, with no
		// build, under a CPU profile written when it stops.
		dir := filepath.Join(e.logDir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		spec.Bin, spec.Env = os.Args[0], append(os.Environ(), coldChildEnv+"="+dir)
	}
	qs := &queueScheduler{name: name, addr: addr, started: time.Now()}
	qs.p = startProcess(b, spec)
	b.Cleanup(func() { qs.stop(b) })
	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if qs.crashed() {
			b.Fatalf("%s exited before it was ready (%v): %s", name, qs.exit, crashExcerpt(qs.p.logTail()))
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: /readyz not ready within 5 minutes", name)
		}
		resp, err := client.Get("http://" + addr + "/readyz")
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return qs
		}
	}
}

// crashed reports whether the process exited on its own.
func (qs *queueScheduler) crashed() bool {
	if qs.exitAt.IsZero() && !qs.p.stopped {
		select {
		case err := <-qs.p.exited:
			qs.exit, qs.exitAt, qs.p.stopped = err, time.Now(), true
		default:
		}
	}
	return !qs.exitAt.IsZero()
}

// stop reads the scheduler's metrics and stops it. It returns what its
// log says of its crash, if it crashed.
func (qs *queueScheduler) stop(b testing.TB) (metrics map[string]float64, crash string) {
	if qs.crashed() {
		return nil, fmt.Sprintf("%s exited (%v) %s after its start: %s", qs.name, qs.exit, qs.exitAt.Sub(qs.started).Round(time.Second), crashExcerpt(qs.p.logTail()))
	}
	if qs.p.stopped {
		return nil, ""
	}
	metrics = scrapeMetrics(b, qs.addr)
	qs.p.stop()
	return metrics, ""
}

// crashExcerpt is the panic or fatal error in a log, and what follows,
// or the end of the log.
func crashExcerpt(log string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return strings.Join(lines[i:min(len(lines), i+12)], "\n")
		}
	}
	return log
}

// generator keeps at least target milli-CPU of jobs of queue pending,
// and enough for the queue's bound and pending pods together to reach
// floor.
type generator struct {
	client kubernetes.Interface
	ns     string
	queue  string
	target int64
	floor  int64
	tr     *queueTracker
	rng    *rand.Rand
	// next draws a job: its size, CPU and run time, single pod or gang.
	next func(rng *rand.Rand) queueJob

	gangs int
	// asked is the milli-CPU of the pods asked for; base the milli-CPU of
	// the queue's pods the tracker had seen when run started (created by
	// others): what is on its way is asked - (seen - base).
	asked   atomic.Int64
	base    int64
	created atomic.Int64 // pods created
	errs    atomic.Int64
	errMu   sync.Mutex
	err     error
}

// run creates gangs, at most 8 at a time, until ctx ends, whenever what
// the queue has pending plus what is on its way falls below the target,
// or that plus what it has bound below the floor.
func (g *generator) run(ctx context.Context) {
	g.base = g.tr.seenMilli(g.queue)
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, 8)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for ctx.Err() == nil {
			if g.errs.Load() >= 20 {
				return // reported by the phase
			}
			pending, bound := g.tr.usage(g.queue)
			pending += g.asked.Load() - (g.tr.seenMilli(g.queue) - g.base) // on its way
			if pending >= g.target && bound+pending >= g.floor {
				break
			}
			job := g.next(g.rng)
			milli := job.milli()
			name := fmt.Sprintf("%s-%05d", g.queue, g.gangs)
			g.gangs++
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			g.asked.Add(milli)
			wg.Go(func() {
				defer func() { <-sem }()
				if err := createQueueJob(ctx, g.client, g.ns, g.queue, name, job); err != nil {
					if ctx.Err() != nil {
						return
					}
					g.errs.Add(1)
					g.errMu.Lock()
					if g.err == nil {
						g.err = err
					}
					g.errMu.Unlock()
					g.asked.Add(-milli)
					return
				}
				g.created.Add(int64(job.size))
			})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// terminalDeleter deletes finished pods of ns with a few workers, as a
// job controller cleaning up would.
type terminalDeleter struct {
	ch      chan string
	wg      sync.WaitGroup
	deleted atomic.Int64
	// gone counts the pods already gone when their deletion was asked.
	gone    atomic.Int64
	dropped atomic.Int64
}

func startTerminalDeleter(ctx context.Context, client kubernetes.Interface, ns string, workers int) *terminalDeleter {
	d := &terminalDeleter{ch: make(chan string, 1<<16)}
	for range workers {
		d.wg.Go(func() {
			for name := range d.ch {
				if ctx.Err() != nil {
					continue
				}
				switch err := client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); {
				case err == nil:
					d.deleted.Add(1)
				case apierrors.IsNotFound(err):
					d.gone.Add(1)
				}
			}
		})
	}
	return d
}

func (d *terminalDeleter) add(name string) {
	select {
	case d.ch <- name:
	default:
		d.dropped.Add(1) // left to the namespace's deletion
	}
}

func (d *terminalDeleter) close() {
	close(d.ch)
	d.wg.Wait()
}

// printQueuesSummary prints the tables of one run.
func printQueuesSummary(out io.Writer, s queueSettings, r queueRun, total time.Duration) {
	fmt.Fprintf(out, "\nqueues: %d KWOK nodes of %d CPUs (%d CPUs), client QPS %.0f burst %d, seed %d\n", s.nodes, queueNodeCPU, s.capacityMilli()/1000, s.qps, s.burst, s.seed)
	if s.phases[phaseFairness] {
		if s.fairControl {
			printFairness(out, s, "fairness (control: the same workload, queues disabled)", r.control)
		}
		printFairness(out, s, "fairness", r.fair)
		if s.fairControl && r.control.utilization > 0 {
			fmt.Fprintf(out, "fairness vs control: utilization %.3f vs %.3f (ratio %.3f), bound %.3f vs %.3f (ratio %.3f); worst |measured/fair - 1| %.3f vs %.3f\n",
				r.fair.utilization, r.control.utilization, r.fair.utilization/r.control.utilization,
				r.fair.boundUtil, r.control.boundUtil, r.fair.boundUtil/max(r.control.boundUtil, 1e-9), r.fair.worst, r.control.worst)
		}
	}
	if s.phases[phaseReclaim] {
		c := r.reclaim
		fmt.Fprintf(out, "\nreclaim: queue %s (guarantee %d CPUs) vs %s (filled the cluster in %s); gangs of %d × 1 CPU\n", guaranteedQueue, s.capacityMilli()/4000, borrowerQueue, c.fill.Round(time.Millisecond), reclaimGangSize)
		fmt.Fprintf(out, "%-4s %12s %12s %15s %8s %14s\n", "rep", "running-s", "bound-s", "1st-eviction-s", "evicted", "full-again-s")
		for i, rep := range c.reps {
			full := fmt.Sprintf("%.2f", rep.settle.Seconds())
			if !rep.full {
				full += " (not full)"
			}
			fmt.Fprintf(out, "%-4d %12.2f %12.2f %15.2f %8d %14s\n", i+1, rep.latency.Seconds(), rep.bound.Seconds(), rep.firstEviction.Seconds(), rep.evicted, full)
		}
		fmt.Fprintf(out, "reclaim p50 %.2fs max %.2fs (goal p50 < 5s at 500 nodes); borrower gangs that lost pods %d (%d pods), longest below quorum %s; gangs below quorum: %d; start lag p50 %s p99 %s\n",
			c.p50.Seconds(), c.max.Seconds(), c.gangsLost, c.podsLost, c.maxBelow.Round(time.Millisecond), len(c.violations), c.startLagP50.Round(time.Millisecond), c.startLag99.Round(time.Millisecond))
		fmt.Fprintf(out, "reclaim: %s; preemption attempts %.0f, victims %.0f%s; CPU s: kube-apiserver %s, etcd %s, kwok %s, batch-scheduler %s, self %s\n",
			attempts(c.metrics), sumMetric(c.metrics, "batch_scheduler_preemption_attempts_total"), sumMetric(c.metrics, "batch_scheduler_preemption_victims_total"),
			byLabel(c.metrics, "batch_scheduler_preemption_victims_total"),
			c.cpu.fmt("kube-apiserver"), c.cpu.fmt("etcd"), c.cpu.fmt("kwok"), c.cpu.fmt("batch-scheduler"), c.cpu.fmt("self"))
		if c.crash != "" {
			fmt.Fprintf(out, "reclaim: THE SCHEDULER CRASHED: %s\n", c.crash)
		}
		fmt.Fprintf(out, "reclaim: API requests per second over %s: %s\n", c.elapsed.Round(time.Second), requestRates(c.requests, c.elapsed))
	}
	if s.phases[phaseThroughput] {
		t := r.tput
		fmt.Fprintf(out, "\nthroughput: %d single pods of 100m pending, placed from the scheduler's sync barrier to the last bind\n", s.pods)
		fmt.Fprintf(out, "%-12s %10s %8s %12s %8s %8s %8s %11s %10s %10s\n", "phase", "time", "pods/s", "apiserver-s", "etcd-s", "kwok-s", "self-s", "self-ms/pod", "cycle-ms", "start-up")
		for _, p := range []schedulerRun{t.a1, t.queues, t.a2} {
			selfMS := "-"
			if v, ok := p.cpu["self"]; ok {
				selfMS = fmt.Sprintf("%.2f", float64(v.Microseconds())/1000/float64(p.pods))
			}
			fmt.Fprintf(out, "%-12s %10s %8.0f %12s %8s %8s %8s %11s %10s %10s\n", p.name, p.elapsed.Round(time.Millisecond), p.podsPerSecond(),
				p.cpu.fmt("kube-apiserver"), p.cpu.fmt("etcd"), p.cpu.fmt("kwok"), p.cpu.fmt("self"), selfMS, meanCycle(p.metrics), p.startup.Round(time.Millisecond))
		}
		fmt.Fprintf(out, "no queues (mean of both) %.0f pods/s; %d queues %.0f pods/s; ratio %.3f (goal ≥ 0.90)\n", t.noQueues(), tputQueues, t.queues.podsPerSecond(), t.ratio())
	}
	if s.phases[phaseBacklog] {
		printBacklog(out, s, r.backlog)
	}
	fmt.Fprintf(out, "run time %s\n\n", total.Round(time.Second))
}

// printFairness prints the table of one fairness run.
func printFairness(out io.Writer, s queueSettings, title string, f fairnessResult) {
	fmt.Fprintf(out, "\n%s: %s measured (%d samples, every second, after %s), gangs of 1-8 × 1 CPU running 5-15 s, backlog ≥ %d CPUs per queue\n",
		title, s.fairFor-s.fairSkip, f.samples, s.fairSkip, s.backlog/1000)
	fmt.Fprintf(out, "%-8s %6s %8s %9s %10s %8s %8s %10s %12s %13s %11s %8s %10s\n", "queue", "weight", "fair", "measured", "meas/fair", "bound", "of-used", "used/fair",
		"pending-min", "pending-mean", "demand-min", "evicted", "sched-fair")
	for _, q := range f.queues {
		sf := "-"
		if q.schedFair >= 0 {
			sf = fmt.Sprintf("%.0f", q.schedFair)
		}
		fmt.Fprintf(out, "%-8s %6d %8.3f %9.3f %10.3f %8.3f %8.3f %10.3f %12d %13d %11.2f %8d %10s\n", q.name, q.weight, q.fair, q.measured, q.measured/q.fair, q.bound,
			q.ofUsed, q.ofUsed/q.fair, q.minPending/1000, q.meanPending/1000, q.minDemand, q.evicted, sf)
	}
	fmt.Fprintf(out, "worst |measured/fair - 1| %.3f (goal ≤ 0.05), with the bound pods %.3f; utilization (running) %.3f (goal ≥ 0.95), bound %.3f; start lag (bound → Running seen) p50 %s p99 %s; finished pods deleted %d (%d already gone)\n",
		f.worst, f.worstBound, f.utilization, f.boundUtil, f.startLagP50.Round(time.Millisecond), f.startLagP99.Round(time.Millisecond), f.deleted, f.gone)
	fmt.Fprintf(out, "%s: %s; preemption attempts %.0f, victims %.0f%s; CPU s: kube-apiserver %s, etcd %s, kwok %s, batch-scheduler %s, self %s over %s; gangs below quorum: %d\n",
		title, attempts(f.metrics), sumMetric(f.metrics, "batch_scheduler_preemption_attempts_total"), sumMetric(f.metrics, "batch_scheduler_preemption_victims_total"),
		byLabel(f.metrics, "batch_scheduler_preemption_victims_total"),
		f.cpu.fmt("kube-apiserver"), f.cpu.fmt("etcd"), f.cpu.fmt("kwok"), f.cpu.fmt("batch-scheduler"), f.cpu.fmt("self"), f.elapsed.Round(time.Second), len(f.violations))
	if f.crash != "" {
		fmt.Fprintf(out, "%s: THE SCHEDULER CRASHED; the figures above are those of the samples before: %s\n", title, f.crash)
	}
	fmt.Fprintf(out, "%s: API requests per second: %s\n", title, requestRates(f.requests, f.elapsed))
}
