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
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// Environment of the cold start (see TestColdStart and BenchmarkColdStart).
const (
	// coldChildEnv, when set, makes this test binary run batch-scheduler
	// itself (TestMain) with the flags it was given, profiled into the
	// directory the variable names: BENCH_COLDSTART_PROFILE re-executes
	// the test binary this way instead of starting the real binary.
	coldChildEnv = "BENCH_COLDSTART_CHILD_PROFILE_DIR"
	// coldNamespace holds the pending pods of the cold start phases.
	coldNamespace = "coldstart"
	// coldLabel marks the nodes of the cold start.
	coldLabel = "bench-pool"
	coldValue = "coldstart"
)

// TestMain runs the tests and benchmarks, or, in a child re-executed by a
// profiled cold start (coldChildEnv set), batch-scheduler itself.
func TestMain(m *testing.M) {
	if dir := os.Getenv(coldChildEnv); dir != "" {
		os.Exit(runProfiledScheduler(dir, os.Args[1:]))
	}
	// The command applies its process-wide logging settings (-v) when it
	// first runs in a process; applied while an earlier test's informers
	// or watches still run, they would race with those goroutines' reads
	// of klog's settings. Apply them once, before any test, with the
	// verbosity the benchmarks give the command (BENCH_V).
	v := os.Getenv("BENCH_V")
	if v == "" {
		v = "0"
	}
	if err := app.ApplyLogging("-v", v); err != nil {
		fmt.Fprintf(os.Stderr, "applying the command's logging settings: %v\n", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// runProfiledScheduler runs the batch-scheduler command with args in this
// process under a CPU profile (dir/cpu.pprof, from the start to the end of
// the command) and writes a heap profile (dir/heap.pprof, after a GC) when
// it receives SIGUSR1. It returns the command's exit code.
func runProfiledScheduler(dir string, args []string) int {
	f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cold start child: %v\n", err)
		return 1
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "cold start child: starting the CPU profile: %v\n", err)
		return 1
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			if err := writeHeapProfile(filepath.Join(dir, "heap.pprof")); err != nil {
				fmt.Fprintf(os.Stderr, "cold start child: %v\n", err)
			}
		}
	}()
	cmd := app.NewSchedulerCommand()
	cmd.SetArgs(args)
	code := app.Execute(cmd)
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "cold start child: writing the CPU profile: %v\n", err)
	}
	return code
}

// writeHeapProfile writes the heap profile after a GC to path, through a
// temporary file so that a reader never sees half of it.
func writeHeapProfile(path string) error {
	runtime.GC()
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("heap profile %s: %w", path, err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("heap profile %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}

// coldSettings are the knobs of the cold start, from BENCH_* variables.
type coldSettings struct {
	nodes, pods int
	// namespaces spread the bound pods.
	namespaces int
	// seedClients are separate clients (each with its own connection)
	// and seedWorkers the goroutines that create the objects.
	seedClients, seedWorkers int
	// podStatus sets a running pod's status on every bound pod (a second
	// request per pod), as kubelets would have.
	podStatus bool
	// leaderElect runs both schedulers with leader election, as they are
	// deployed.
	leaderElect bool
	// timeout bounds each scheduler's wait for its pending pod.
	timeout time.Duration
	// binary is batch-scheduler's binary; empty: built by the test.
	binary string
	// before, if set, is another batch-scheduler binary (say, of the main
	// branch) measured in the same run, for a before/after comparison
	// on one seeded cluster.
	before string
	// profileDir, if set, runs batch-scheduler as a re-executed test
	// binary that writes CPU and heap profiles there.
	profileDir string
	// logDir, if set, keeps the schedulers' logs (else in a temporary
	// directory removed at the end).
	logDir    string
	verbosity int
}

func loadColdSettings(tb testing.TB, defNodes, defPods int) coldSettings {
	tb.Helper()
	s := coldSettings{
		nodes:       envIntTB(tb, "BENCH_NODES", defNodes),
		pods:        envIntTB(tb, "BENCH_PODS", defPods),
		namespaces:  envIntTB(tb, "BENCH_NAMESPACES", 50),
		seedClients: envIntTB(tb, "BENCH_SEED_CLIENTS", 8),
		seedWorkers: envIntTB(tb, "BENCH_SEED_WORKERS", 96),
		podStatus:   os.Getenv("BENCH_POD_STATUS") != "0",
		leaderElect: os.Getenv("BENCH_LEADER_ELECT") != "0",
		timeout:     time.Duration(envIntTB(tb, "BENCH_TIMEOUT_SECONDS", 600)) * time.Second,
		binary:      os.Getenv("BENCH_BATCH_SCHEDULER"),
		before:      os.Getenv("BENCH_BATCH_SCHEDULER_BEFORE"),
		profileDir:  os.Getenv("BENCH_COLDSTART_PROFILE"),
		logDir:      os.Getenv("BENCH_COLDSTART_LOGS"),
		verbosity:   envIntTB(tb, "BENCH_V", 0),
	}
	if s.nodes <= 0 || s.pods < 0 || s.namespaces <= 0 || s.seedClients <= 0 || s.seedWorkers <= 0 {
		tb.Fatalf("BENCH_NODES (%d), BENCH_NAMESPACES (%d), BENCH_SEED_CLIENTS (%d) and BENCH_SEED_WORKERS (%d) must be positive, BENCH_PODS (%d) not negative",
			s.nodes, s.namespaces, s.seedClients, s.seedWorkers, s.pods)
	}
	// Every node keeps room for the pending pods.
	if perNode := (s.pods + s.nodes - 1) / s.nodes; perNode > coldPodsPerNode-10 {
		tb.Fatalf("BENCH_PODS=%d on BENCH_NODES=%d is %d pods per node; keep it at most %d", s.pods, s.nodes, perNode, coldPodsPerNode-10)
	}
	return s
}

func envIntTB(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		tb.Fatalf("%s=%q: not an integer", name, v)
	}
	return n
}

// coldRun is one scheduler's cold start.
type coldRun struct {
	name string
	// ready is from the process start to its /readyz first answering 200
	// (0 if it never did before the pod was bound).
	ready time.Duration
	// bound is from the process start to its pending pod bound, as seen
	// by a watch.
	bound time.Duration
	// peakRSS is VmHWM of the process when the pod was bound, in bytes;
	// rss its VmRSS then.
	peakRSS, rss int64
	// cpu is the CPU time the process used until then.
	cpu time.Duration
}

// coldResult is one cold start run: both schedulers on one control plane.
type coldResult struct {
	seed, seedNodes time.Duration
	// batch are batch-scheduler's runs (before and after kube-scheduler,
	// or only before with BENCH_COLDSTART_PROFILE), kube kube-scheduler's,
	// profiled the profiled run of batch-scheduler after kube-scheduler
	// (BENCH_COLDSTART_PROFILE), if any.
	batch    []coldRun
	kube     coldRun
	profiled *coldRun
	// before are the runs of BENCH_BATCH_SCHEDULER_BEFORE, if set.
	before []coldRun
}

func (r coldResult) batchMean() coldRun { return meanRun("batch-scheduler (mean)", r.batch) }

// meanRun is the mean of runs, named name.
func meanRun(name string, runs []coldRun) coldRun {
	m := coldRun{name: name}
	n := len(runs)
	for _, b := range runs {
		m.ready += b.ready / time.Duration(n)
		m.bound += b.bound / time.Duration(n)
		m.cpu += b.cpu / time.Duration(n)
		m.peakRSS += b.peakRSS / int64(n)
		m.rss += b.rss / int64(n)
	}
	return m
}

// TestColdStart is the cold start at a small size (BENCH_NODES=200,
// BENCH_PODS=3000 unless set): see runColdStart. It checks that both
// schedulers start on a populated cluster and bind their pending pod to a
// seeded node, and logs the figures; the goals are checked by
// hack/bench-coldstart.sh at full size, where they mean something.
// Skipped with -short: make test runs this package with -short, and CI
// runs it in hack/test-benchmarks.sh, without -short.
func TestColdStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and two schedulers")
	}
	s := loadColdSettings(t, 200, 3000)
	r := runColdStart(t, s)
	printColdSummary(os.Stdout, s, r)
}

// BenchmarkColdStart is the cold start at full size (BENCH_NODES=5000,
// BENCH_PODS=150000 unless set; with -short, the smoke run of
// hack/test-benchmarks.sh, 20 and 200), once per b.N: see runColdStart.
// Reported: the time to the first pending pod bound of both schedulers,
// their peak RSS, and the ratios (goals of issue 38: time ≤ 0.4 of
// kube-scheduler's, peak RSS ≤ 400 MiB without a soft limit).
func BenchmarkColdStart(b *testing.B) {
	s := loadColdSettings(b, smoke(5000, 20), smoke(150000, 200))
	var results []coldResult
	for b.Loop() {
		r := runColdStart(b, s)
		printColdSummary(os.Stdout, s, r)
		results = append(results, r)
	}
	var bound, kubeBound, rss, kubeRSS float64
	for _, r := range results {
		m := r.batchMean()
		bound += m.bound.Seconds()
		rss += float64(m.peakRSS)
		kubeBound += r.kube.bound.Seconds()
		kubeRSS += float64(r.kube.peakRSS)
	}
	n := float64(len(results))
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(bound/n, "first-bind-s")
	b.ReportMetric(kubeBound/n, "kube-first-bind-s")
	b.ReportMetric(bound/kubeBound, "time-ratio")
	b.ReportMetric(rss/n/(1<<20), "peak-rss-MiB")
	b.ReportMetric(kubeRSS/n/(1<<20), "kube-peak-rss-MiB")
}

// runColdStart measures the cold start of both schedulers on one fresh
// control plane:
//
//  1. Seed (timed, reported apart): BENCH_NODES nodes shaped like a cloud
//     provider's (labels, addresses, conditions, 20 images) and BENCH_PODS
//     pods already bound (spec.nodeName set at creation) spread over the
//     nodes and BENCH_NAMESPACES namespaces, each like a Deployment's pod:
//     labels, an ownerReference to a ReplicaSet, two containers with
//     requests and limits, a service account token volume, and a running
//     status (unless BENCH_POD_STATUS=0). BENCH_SEED_CLIENTS clients (own
//     connections, protobuf) and BENCH_SEED_WORKERS goroutines create them.
//  2. batch-scheduler: one pending pod of its own is created, then the
//     binary starts as a process with its defaults (leader election on,
//     unless BENCH_LEADER_ELECT=0; client QPS 50). Timed from the process
//     start to the pod bound, as a watch sees it; its peak RSS is VmHWM
//     of /proc/PID/status then.
//  3. kube-scheduler (bin/kube-scheduler, default profile and client
//     settings, leader election as above) the same way, on a pending pod
//     of its own.
//  4. batch-scheduler again, so that drift on a shared machine shows; its
//     figures are the mean of 2 and 4. With BENCH_COLDSTART_PROFILE=DIR
//     this run is this test binary re-executed as batch-scheduler under a
//     CPU profile (DIR/batch-scheduler-2/cpu.pprof, from the start to the
//     stop) that writes a heap profile when its pod is bound
//     (DIR/batch-scheduler-2/heap.pprof); its figures are printed apart
//     and batch-scheduler's are those of 2.
//
// With BENCH_BATCH_SCHEDULER_BEFORE=PATH, that binary (say, built from
// the main branch) runs too, as "before", in the order batch-scheduler,
// before, kube-scheduler, batch-scheduler, before, for a before/after
// comparison on one seeded cluster.
//
// Each pending pod must land on a seeded node.
func runColdStart(tb testing.TB, s coldSettings) coldResult {
	tb.Helper()
	runStart := time.Now()
	batchBin := s.binary
	if batchBin == "" {
		batchBin = buildBatchScheduler(tb)
	}
	assets, err := controlplane.AssetsDir()
	if err != nil {
		tb.Fatal(err)
	}
	kubeBin := filepath.Join(assets, "kube-scheduler")
	if _, err := os.Stat(kubeBin); err != nil {
		tb.Fatalf("kube-scheduler binary missing (build it with 'make control-plane'): %v", err)
	}

	// etcd and kube-apiserver only. The seeded pods and the pending ones
	// name ReplicaSets that do not exist as their owners: the garbage
	// collector of kube-controller-manager would delete them, the
	// pending pods at once (nothing holds an unbound pod), before or
	// while a scheduler starts (a pending pod never bound), and bound
	// ones during the measurement. Nothing here needs a controller or a
	// simulated kubelet.
	cp, err := controlplane.Start(controlplane.WithoutCluster())
	if err != nil {
		tb.Fatal(err)
	}
	cancelSignal := cp.StopOnSignal()
	defer func() {
		cancelSignal()
		if err := cp.Stop(); err != nil {
			tb.Errorf("stopping the control plane: %v", err)
		}
	}()
	ctx := tb.Context()

	var r coldResult
	seedStart := time.Now()
	clients := seedClients(tb, cp.Config, s.seedClients)
	nodes := seedNodes(tb, ctx, clients, s)
	r.seedNodes = time.Since(seedStart)
	seedPods(tb, ctx, clients, s, nodes)
	r.seed = time.Since(seedStart)
	coldLogf("seeded %d nodes and %d bound pods in %s (nodes %s; %.0f pods/s)", s.nodes, s.pods,
		r.seed.Round(time.Millisecond), r.seedNodes.Round(time.Millisecond), float64(s.pods)/(r.seed-r.seedNodes).Seconds())
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: coldNamespace}}, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("creating namespace %s: %v", coldNamespace, err)
	}
	nodeSet := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		nodeSet[n] = true
	}

	phases := []string{"batch-scheduler", "kube-scheduler", "batch-scheduler"}
	if s.before != "" {
		phases = []string{"batch-scheduler", "before", "kube-scheduler", "batch-scheduler", "before"}
	}
	// With BENCH_COLDSTART_PROFILE, the last batch-scheduler run is the
	// profiled one.
	lastBatch := 0
	for i, p := range phases {
		if p == "batch-scheduler" {
			lastBatch = i
		}
	}
	procs := controlPlaneProcesses()
	for i, which := range phases {
		// Each scheduler starts on a control plane at rest: right after
		// the seeding (or a scheduler's exit) kube-apiserver and etcd
		// may still be collecting and compacting, which would slow
		// whichever scheduler runs first.
		waited, busy := settleControlPlane(procs, coldSettleCPU, coldSettleMax)
		coldLogf("control plane at rest after %s, before %s (last second: %.0f%% of a core)",
			waited.Round(100*time.Millisecond), which, busy*100)
		var run coldRun
		switch {
		case which == "batch-scheduler" && i == lastBatch && s.profileDir != "":
			run = coldStartBatch(tb, s, cp, "", i, nodeSet)
			run.name = "batch-scheduler (profiled)"
			r.profiled = &run
		case which == "batch-scheduler":
			run = coldStartBatch(tb, s, cp, batchBin, i, nodeSet)
			r.batch = append(r.batch, run)
		case which == "before":
			run = coldStartBatch(tb, s, cp, s.before, i, nodeSet)
			run.name = "batch-scheduler before"
			r.before = append(r.before, run)
		default:
			run = coldStartKube(tb, s, cp, kubeBin, i, nodeSet)
			r.kube = run
		}
		coldLogf("%s: ready after %s, first pending pod bound after %s, peak RSS %.0f MiB, CPU %.1fs", run.name,
			run.ready.Round(time.Millisecond), run.bound.Round(time.Millisecond), float64(run.peakRSS)/(1<<20), run.cpu.Seconds())
	}
	coldLogf("run time %s", time.Since(runStart).Round(time.Second))
	return r
}

const (
	// coldSettleCPU is the share of one core kube-apiserver and etcd
	// together may use in a second for the control plane to count as at
	// rest, and coldSettleMax bounds the wait.
	coldSettleCPU = 0.15
	coldSettleMax = 90 * time.Second
)

// settleControlPlane waits until the processes of procs together used at
// most limit of a core over each of two consecutive seconds, or until
// maxWait has passed, and returns how long it waited (two seconds at least)
// and the last second's use. Without the processes (no /proc), it does
// not wait.
func settleControlPlane(procs map[string]int, limit float64, maxWait time.Duration) (time.Duration, float64) {
	if len(procs) == 0 {
		return 0, 0
	}
	total := func() time.Duration {
		var sum time.Duration
		for name, d := range readCPU(procs) {
			if name != "self" {
				sum += d
			}
		}
		return sum
	}
	start := time.Now()
	quiet, busy := 0, 0.0
	prev := total()
	for quiet < 2 && time.Since(start) < maxWait {
		time.Sleep(time.Second)
		cur := total()
		busy = (cur - prev).Seconds()
		prev = cur
		if busy <= limit {
			quiet++
		} else {
			quiet = 0
		}
	}
	return time.Since(start), busy
}

func coldLogf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench-coldstart] "+format+"\n", args...)
}

// buildBatchScheduler builds cmd/batch-scheduler into a temporary
// directory and returns the binary's path.
func buildBatchScheduler(tb testing.TB) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "batch-scheduler")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", out, "github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building batch-scheduler: %v\n%s", err, msg)
	}
	coldLogf("built batch-scheduler in %s", time.Since(start).Round(time.Millisecond))
	return out
}

// seedClients returns n clients, each on a connection of its own (a
// custom Dial makes client-go give each its own transport) and speaking
// protobuf, with no client-side rate limit worth the name.
func seedClients(tb testing.TB, cfg *rest.Config, n int) []kubernetes.Interface {
	tb.Helper()
	out := make([]kubernetes.Interface, n)
	for i := range out {
		c := rest.CopyConfig(cfg)
		c.QPS, c.Burst = 1e6, 1e6
		c.ContentType = apiruntime.ContentTypeProtobuf
		c.AcceptContentTypes = apiruntime.ContentTypeProtobuf + "," + apiruntime.ContentTypeJSON
		dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		c.Dial = dialer.DialContext
		c.WarningHandler = rest.NoWarnings{}
		client, err := kubernetes.NewForConfig(c)
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = client
	}
	return out
}

const (
	coldPodsPerNode = 110
	coldImages      = 20
)

// seedNodes creates s.nodes nodes with their status and returns their
// names.
func seedNodes(tb testing.TB, ctx context.Context, clients []kubernetes.Interface, s coldSettings) []string {
	tb.Helper()
	names := make([]string, s.nodes)
	for i := range names {
		names[i] = fmt.Sprintf("cold-node-%05d", i)
	}
	err := parallel(s.nodes, s.seedWorkers, func(i int) error {
		_, err := controlplane.CreateNode(ctx, clients[i%len(clients)], coldNode(i, names[i]))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return names
}

// coldNode is a node as a cloud provider's kubelet reports it.
func coldNode(i int, name string) *v1.Node {
	zone := []string{"a", "b", "c"}[i%3]
	capacity := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("32"),
		v1.ResourceMemory:           resource.MustParse("128Gi"),
		v1.ResourcePods:             *resource.NewQuantity(coldPodsPerNode, resource.DecimalSI),
		v1.ResourceEphemeralStorage: resource.MustParse("200Gi"),
	}
	allocatable := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("31850m"),
		v1.ResourceMemory:           resource.MustParse("125Gi"),
		v1.ResourcePods:             *resource.NewQuantity(coldPodsPerNode, resource.DecimalSI),
		v1.ResourceEphemeralStorage: resource.MustParse("180Gi"),
	}
	images := make([]v1.ContainerImage, coldImages)
	for j := range images {
		repo := fmt.Sprintf("registry.example.com/platform/component-%02d", j)
		images[j] = v1.ContainerImage{
			Names:     []string{repo + "@sha256:" + strings.Repeat(strconv.Itoa(j%10), 64), repo + ":v1." + strconv.Itoa(j)},
			SizeBytes: int64(20+j*7) << 20,
		}
	}
	now := metav1.Now()
	conditions := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	for j := range conditions {
		conditions[j].LastHeartbeatTime, conditions[j].LastTransitionTime = now, now
	}
	ip := fmt.Sprintf("10.%d.%d.%d", 10+i/65536, (i/256)%256, i%256)
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				coldLabel:                          coldValue,
				v1.LabelHostname:                   name,
				v1.LabelOSStable:                   "linux",
				v1.LabelArchStable:                 "amd64",
				v1.LabelInstanceTypeStable:         "m6i.8xlarge",
				v1.LabelTopologyZone:               "region-1" + zone,
				v1.LabelTopologyRegion:             "region-1",
				"node.kubernetes.io/pool":          fmt.Sprintf("pool-%d", i%4),
				"node-role.kubernetes.io/worker":   "",
				"example.com/hardware-generation":  "6",
				"example.com/maintenance-schedule": "weekly",
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: v1.NodeSpec{
			PodCIDR:    fmt.Sprintf("100.%d.%d.0/24", 64+i/256, i%256),
			PodCIDRs:   []string{fmt.Sprintf("100.%d.%d.0/24", 64+i/256, i%256)},
			ProviderID: "example://region-1" + zone + "/i-" + fmt.Sprintf("%016x", i),
		},
		Status: v1.NodeStatus{
			Capacity:        capacity,
			Allocatable:     allocatable,
			Phase:           v1.NodeRunning,
			Conditions:      conditions,
			Addresses:       []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}, {Type: v1.NodeHostName, Address: name}},
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10250}},
			NodeInfo: v1.NodeSystemInfo{
				MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("ec2%029x", i), BootID: fmt.Sprintf("%032x", i+1),
				KernelVersion: "6.8.0-1019-aws", OSImage: "Ubuntu 24.04.1 LTS", ContainerRuntimeVersion: "containerd://1.7.22",
				KubeletVersion: "v1.37.1", OperatingSystem: "linux", Architecture: "amd64",
			},
			Images: images,
		},
	}
}

// seedPods creates s.pods pods bound round-robin to nodes, with a running
// status unless s.podStatus is off.
func seedPods(tb testing.TB, ctx context.Context, clients []kubernetes.Interface, s coldSettings, nodes []string) {
	tb.Helper()
	for i := range s.namespaces {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: coldPodNamespace(i)}}
		if _, err := clients[0].CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			tb.Fatalf("creating namespace %s: %v", ns.Name, err)
		}
	}
	var mu sync.Mutex
	lastLog := time.Now()
	var done int
	start := time.Now()
	err := parallel(s.pods, s.seedWorkers, func(i int) error {
		client := clients[i%len(clients)]
		pod := coldPod(i, s.namespaces, nodes[i%len(nodes)])
		created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if s.podStatus {
			created.Status = runningStatus(created, i)
			if _, err := client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("setting the status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
		}
		mu.Lock()
		done++
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			coldLogf("seeding: %d/%d pods (%.0f pods/s)", done, s.pods, float64(done)/time.Since(start).Seconds())
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func coldPodNamespace(i int) string { return fmt.Sprintf("team-%03d", i) }

// coldPod is the i-th bound pod: a replica of one of 500 Deployments.
func coldPod(i, namespaces int, node string) *v1.Pod {
	app := i % 500
	appName := fmt.Sprintf("service-%03d", app)
	hash := fmt.Sprintf("%09x", app*7919)[:9]
	rsName := appName + "-" + hash
	tokenVolume := "kube-api-access-" + fmt.Sprintf("%05x", i%(1<<20))[:5]
	labels := map[string]string{
		"app.kubernetes.io/name":     appName,
		"app.kubernetes.io/instance": appName + "-prod",
		"app.kubernetes.io/part-of":  fmt.Sprintf("product-%02d", app%40),
		"pod-template-hash":          hash,
		"tier":                       []string{"frontend", "backend", "worker"}[app%3],
	}
	container := func(name, image string, cpu, mem, cpuLimit, memLimit string, port int32) v1.Container {
		return v1.Container{
			Name:  name,
			Image: image,
			Ports: []v1.ContainerPort{{Name: name, ContainerPort: port, Protocol: v1.ProtocolTCP}},
			Env: []v1.EnvVar{
				{Name: "APP_NAME", Value: appName},
				{Name: "LOG_LEVEL", Value: "info"},
				{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			},
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuLimit), v1.ResourceMemory: resource.MustParse(memLimit)},
			},
			VolumeMounts: []v1.VolumeMount{{Name: tokenVolume, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
			ReadinessProbe: &v1.Probe{
				ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(port)}},
				PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
			},
			TerminationMessagePath:   v1.TerminationMessagePathDefault,
			TerminationMessagePolicy: v1.TerminationMessageReadFile,
			ImagePullPolicy:          v1.PullIfNotPresent,
		}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    coldPodNamespace(i % namespaces),
			Name:         fmt.Sprintf("%s-%05d", rsName, i),
			GenerateName: rsName + "-",
			Labels:       labels,
			Annotations:  map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName,
				UID:        types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", app)),
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1.PodSpec{
			NodeName: node,
			Containers: []v1.Container{
				container("app", "registry.example.com/apps/"+appName+":2.14.3", "100m", "128Mi", "500m", "256Mi", 8080),
				container("proxy", "registry.example.com/platform/proxy:1.31.0", "50m", "64Mi", "200m", "128Mi", 15001),
			},
			Volumes: []v1.Volume{{Name: tokenVolume, VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
						{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				},
				DefaultMode: ptr.To[int32](0o644),
			}}}},
			ServiceAccountName:            "default",
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     v1.DNSClusterFirst,
			SecurityContext:               &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](2000)},
			Tolerations: []v1.Toleration{
				{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		},
	}
}

// runningStatus is the status a kubelet reports for a running pod.
func runningStatus(pod *v1.Pod, i int) v1.PodStatus {
	start := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	podIP := fmt.Sprintf("100.%d.%d.%d", 64+i/65536, (i/256)%256, i%256)
	st := v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue, LastTransitionTime: start},
			{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: start},
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start},
			{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: start},
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: start},
		},
		HostIP:    "10.0.0.1",
		HostIPs:   []v1.HostIP{{IP: "10.0.0.1"}},
		PodIP:     podIP,
		PodIPs:    []v1.PodIP{{IP: podIP}},
		StartTime: &start,
		QOSClass:  v1.PodQOSBurstable,
	}
	for j, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{
			Name:         c.Name,
			Ready:        true,
			Started:      ptr.To(true),
			Image:        c.Image,
			ImageID:      c.Image + "@sha256:" + strings.Repeat(strconv.Itoa(j), 64),
			ContainerID:  "containerd://" + fmt.Sprintf("%064x", i*2+j),
			State:        v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: start}},
			RestartCount: 0,
		})
	}
	return st
}

// pendingPod is the pending pod a scheduler phase waits for: a pod like
// the seeded ones, for schedulerName.
func pendingPod(name, schedulerName string) *v1.Pod {
	pod := coldPod(0, 1, "")
	pod.Namespace, pod.Name, pod.GenerateName = coldNamespace, name, ""
	pod.Spec.SchedulerName = schedulerName
	return pod
}

// bindWatcher reports when a pod gets a node.
type bindWatcher struct {
	bound chan struct{}
	// at and node are set before bound closes.
	at   time.Time
	node string
}

// watchBind creates pod and watches it until it gets a node.
func watchBind(tb testing.TB, client kubernetes.Interface, pod *v1.Pod) *bindWatcher {
	tb.Helper()
	ctx, cancel := context.WithCancel(tb.Context())
	tb.Cleanup(cancel)
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("creating pending pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	selector := fields.OneTermEqualSelector("metadata.name", pod.Name).String()
	lw := &toolscache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = selector
		return client.CoreV1().Pods(pod.Namespace).Watch(ctx, o)
	}}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, created.ResourceVersion, lw)
	if err != nil {
		tb.Fatalf("watching pending pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	w := &bindWatcher{bound: make(chan struct{})}
	go func() {
		defer rw.Stop()
		for ev := range rw.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if ok && p.Spec.NodeName != "" {
				w.at, w.node = time.Now(), p.Spec.NodeName
				close(w.bound)
				return
			}
		}
	}()
	return w
}

// process is a program running as a child process (harness.Process),
// with its exit error delivered once on exited.
type process struct {
	*harness.Process
	exited  chan error
	stopped bool
}

// startProcess starts the program of spec (Name, Bin, Args, Dir, and Env
// when set) and fails tb if it cannot.
func startProcess(tb testing.TB, spec harness.ProcessSpec) *process {
	tb.Helper()
	hp, err := harness.StartProcess(context.Background(), spec)
	if err != nil {
		tb.Fatal(err)
	}
	p := &process{Process: hp, exited: make(chan error, 1)}
	go func() {
		<-hp.Done()
		p.exited <- hp.ExitError()
	}()
	return p
}

// stop sends SIGTERM and waits up to harness.StopTimeout before it kills
// the process.
func (p *process) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	_ = p.Stop()
}

// logTail is the end of the process's log, for failures.
func (p *process) logTail() string {
	data, _ := os.ReadFile(p.LogPath)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// measureColdStart waits for w's pod to be bound by p, started at
// started, polling its /readyz (HTTPS on addr) meanwhile, and returns the
// figures; beforeStop, if set, runs after the measurement and before the
// process is stopped.
func measureColdStart(tb testing.TB, s coldSettings, name string, p *process, started time.Time, addr string, w *bindWatcher, nodes map[string]bool, beforeStop func()) coldRun {
	tb.Helper()
	defer p.stop()
	readyCh := make(chan time.Time, 1)
	readyCtx, cancelReady := context.WithCancel(tb.Context())
	defer cancelReady()
	go func() {
		// Errors (the process exited, the timeout) show below; a ready
		// that never comes is reported as 0.
		at, err := waitKubeSchedulerReadyCtx(readyCtx, addr, s.timeout)
		if err == nil {
			readyCh <- at
		}
	}()
	select {
	case <-w.bound:
	case err := <-p.exited:
		p.stopped = true
		tb.Fatalf("%s exited before binding its pending pod: %v\n%s log (end):\n%s", name, err, name, p.logTail())
	case <-time.After(s.timeout):
		p.stop()
		tb.Fatalf("%s: pending pod not bound within %s\n%s log (end):\n%s", name, s.timeout, name, p.logTail())
	}
	pid := p.Pid()
	run := coldRun{name: name, bound: w.at.Sub(started)}
	var err error
	if run.peakRSS, run.rss, err = memoryOf(pid); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	if _, _, run.cpu, err = procStat(pid); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	cancelReady()
	select {
	case at := <-readyCh:
		run.ready = at.Sub(started)
	default:
	}
	if !nodes[w.node] {
		tb.Errorf("%s bound its pending pod to %q, not a seeded node", name, w.node)
	}
	if beforeStop != nil {
		beforeStop()
	}
	return run
}

// waitKubeSchedulerReadyCtx is waitKubeSchedulerReady that also ends with
// ctx.
func waitKubeSchedulerReadyCtx(ctx context.Context, addr string, timeout time.Duration) (time.Time, error) {
	exited := make(chan error, 1)
	go func() {
		<-ctx.Done()
		exited <- ctx.Err()
	}()
	return waitKubeSchedulerReady(addr, exited, timeout)
}

// memoryOf reads VmHWM (peak resident set) and VmRSS of pid, in bytes.
func memoryOf(pid int) (peak, rss int64, err error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	for line := range strings.Lines(string(data)) {
		key, value, ok := strings.Cut(line, ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		f := strings.Fields(value)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("reading the memory of process %d: unexpected %s line %q", pid, key, strings.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("reading the memory of process %d: %s: %w", pid, key, err)
		}
		if key == "VmHWM" {
			peak = kb << 10
		} else {
			rss = kb << 10
		}
	}
	if peak == 0 {
		return 0, 0, fmt.Errorf("reading the memory of process %d: no VmHWM in /proc/%d/status", pid, pid)
	}
	return peak, rss, nil
}

// coldStartBatch runs the cold start of batch-scheduler (phase i).
func coldStartBatch(tb testing.TB, s coldSettings, cp *controlplane.ControlPlane, bin string, i int, nodes map[string]bool) coldRun {
	tb.Helper()
	dir := tb.TempDir()
	w := watchBind(tb, cp.Client, pendingPod(fmt.Sprintf("batch-pending-%d", i), "batch-scheduler"))
	addr := freeAddressTB(tb)
	_, port, _ := net.SplitHostPort(addr)
	args := []string{
		"--kubeconfig", cp.KubeconfigPath,
		"--bind-address=127.0.0.1", "--secure-port", port,
		"--leader-elect=" + strconv.FormatBool(s.leaderElect),
		"-v", strconv.Itoa(s.verbosity),
	}
	spec := harness.ProcessSpec{Name: fmt.Sprintf("batch-scheduler-%d", i), Bin: bin, Args: args, Dir: logDirOf(s, dir)}
	var profileDir string
	if bin == "" {
		profileDir = filepath.Join(s.profileDir, fmt.Sprintf("batch-scheduler-%d", i))
		if err := os.MkdirAll(profileDir, 0o755); err != nil {
			tb.Fatal(err)
		}
		spec.Bin, spec.Env = os.Args[0], append(os.Environ(), coldChildEnv+"="+profileDir)
	}
	started := time.Now()
	p := startProcess(tb, spec)
	var beforeStop func()
	if profileDir != "" {
		beforeStop = func() { requestHeapProfile(tb, p, filepath.Join(profileDir, "heap.pprof")) }
	}
	run := measureColdStart(tb, s, "batch-scheduler", p, started, addr, w, nodes, beforeStop)
	if profileDir != "" {
		coldLogf("profiles of batch-scheduler-%d in %s (cpu.pprof: start to stop; heap.pprof: at the first bind)", i, profileDir)
	}
	return run
}

// requestHeapProfile asks the profiled child for a heap profile (SIGUSR1)
// and waits until it is written.
func requestHeapProfile(tb testing.TB, p *process, path string) {
	tb.Helper()
	if err := p.Signal(syscall.SIGUSR1); err != nil {
		tb.Fatalf("asking for a heap profile: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		} else if !errors.Is(err, os.ErrNotExist) {
			tb.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("heap profile %s not written within a minute", path)
}

// coldKubeSchedulerConfig is kube-scheduler's configuration: its defaults
// but the kubeconfig and leader election.
const coldKubeSchedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: %t
`

// coldStartKube runs the cold start of kube-scheduler (phase i).
func coldStartKube(tb testing.TB, s coldSettings, cp *controlplane.ControlPlane, bin string, i int, nodes map[string]bool) coldRun {
	tb.Helper()
	dir := tb.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, coldKubeSchedulerConfig, cp.KubeconfigPath, s.leaderElect), 0o600); err != nil {
		tb.Fatal(err)
	}
	w := watchBind(tb, cp.Client, pendingPod(fmt.Sprintf("kube-pending-%d", i), v1.DefaultSchedulerName))
	addr := freeAddressTB(tb)
	_, port, _ := net.SplitHostPort(addr)
	args := []string{"--config", cfgPath,
		"--bind-address=127.0.0.1", "--secure-port", port, "--cert-dir", filepath.Join(dir, "certs"),
		"-v", strconv.Itoa(s.verbosity)}
	started := time.Now()
	p := startProcess(tb, harness.ProcessSpec{Name: fmt.Sprintf("kube-scheduler-%d", i), Bin: bin, Args: args, Dir: logDirOf(s, dir)})
	return measureColdStart(tb, s, "kube-scheduler", p, started, addr, w, nodes, nil)
}

// logDirOf is where the logs go: BENCH_COLDSTART_LOGS, or dir.
func logDirOf(s coldSettings, dir string) string {
	if s.logDir != "" {
		return s.logDir
	}
	return dir
}

func freeAddressTB(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// printColdSummary prints the figures of r, ready to paste.
func printColdSummary(out io.Writer, s coldSettings, r coldResult) {
	mib := func(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
	fmt.Fprintf(out, "\ncold start: %d nodes, %d bound pods in %d namespaces (pod status %t), leader election %t; seeded in %s (%.0f pods/s)\n",
		s.nodes, s.pods, s.namespaces, s.podStatus, s.leaderElect, r.seed.Round(time.Second), float64(s.pods)/(r.seed-r.seedNodes).Seconds())
	fmt.Fprintf(out, "| scheduler | ready | first pending pod bound | peak RSS (VmHWM) | RSS then | CPU |\n|---|---|---|---|---|---|\n")
	row := func(c coldRun) {
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %.1fs |\n", c.name, c.ready.Round(10*time.Millisecond), c.bound.Round(10*time.Millisecond),
			mib(c.peakRSS), mib(c.rss), c.cpu.Seconds())
	}
	for _, b := range r.batch {
		row(b)
	}
	row(r.kube)
	m := r.batchMean()
	if len(r.batch) > 1 {
		row(m)
	}
	if r.profiled != nil {
		// The test binary, under a CPU profile: not part of the figures.
		row(*r.profiled)
	}
	if len(r.before) > 0 {
		for _, b := range r.before {
			row(b)
		}
		bm := meanRun("batch-scheduler before (mean)", r.before)
		row(bm)
		fmt.Fprintf(out, "before: time ratio batch/kube %.2f, peak RSS %s; after ÷ before: time %.2f, peak RSS %.2f\n",
			bm.bound.Seconds()/r.kube.bound.Seconds(), mib(bm.peakRSS), m.bound.Seconds()/bm.bound.Seconds(), float64(m.peakRSS)/float64(bm.peakRSS))
	}
	timeRatio := m.bound.Seconds() / r.kube.bound.Seconds()
	rssRatio := float64(m.peakRSS) / float64(r.kube.peakRSS)
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	fmt.Fprintf(out, "time ratio batch/kube %.2f (goal ≤ 0.40: %s); peak RSS %s (goal ≤ 400 MiB: %s), ratio batch/kube %.2f\n\n",
		timeRatio, verdict(timeRatio <= 0.4), mib(m.peakRSS), verdict(m.peakRSS <= 400<<20), rssRatio)
}
