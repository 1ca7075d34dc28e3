package benchmark

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// gangSize is the size and the quorum of every gang of BenchmarkGang.
const gangSize = 8

// Gang dialects of the batch-scheduler phase (BENCH_GANG_DIALECT).
const (
	// dialectNative: a scheduling.k8s.io/v1beta1 PodGroup per gang with
	// spec.schedulingPolicy.gang.minCount, named by each pod's
	// spec.schedulingGroup.podGroupName, as kube-scheduler reads them.
	dialectNative = "native"
	// dialectAnnotation: the annotations scheduling.k8s.io/group-name and
	// scheduling.k8s.io/min-available on each pod.
	dialectAnnotation = "annotation"
)

// BenchmarkGang measures how fast gangs of 8 are placed, on one fresh
// control plane per b.N iteration (the API server with the feature gate
// GenericWorkload and scheduling.k8s.io/v1beta1 served):
//
//  1. Setup (not timed): BENCH_NODES nodes (500) as in BenchmarkScheduling;
//     BENCH_PODS pods (10000, a multiple of 8) in each of ceiling-1,
//     gang-batch, gang-kube and ceiling-2, plus the warm-up pods; then the
//     untimed warm-up round. gang-kube holds one PodGroup per 8 pods
//     (minCount 8), named by the pods' spec.schedulingGroup.podGroupName,
//     and its pods are kube-scheduler's (default-scheduler). gang-batch
//     holds the same gangs for batch-scheduler in the dialect
//     BENCH_GANG_DIALECT: native (the same PodGroups) or annotation
//     (scheduling.k8s.io/group-name and min-available "8"; the default).
//  2. ceiling-1: the raw binding ceiling, as in BenchmarkScheduling.
//  3. batch-scheduler: the real command schedules gang-batch, timed as
//     BenchmarkScheduling's scheduler phase (sync barrier to last bind).
//  4. kube-scheduler: bin/kube-scheduler v1.37.1 (make control-plane) with
//     --feature-gates=GenericWorkload=true, its default profile (which
//     then has the GangScheduling plugin), no leader election and the same
//     client QPS and burst, schedules gang-kube; timed from its /readyz
//     answering 200 (polled every 5ms) to the last bind.
//  5. ceiling-2: as ceiling-1; the ceiling is the mean of both.
//
// Each scheduler phase checks that every pod was bound exactly once and
// that no node is over its allocatable. Reported: pods/s (batch-scheduler),
// kube-scheduler-pods/s, ceiling-pods/s, ratio (batch-scheduler ÷ ceiling;
// the goal is at least 0.70) and vs-kube-scheduler (batch-scheduler ÷
// kube-scheduler; the goal is at least 10).
func BenchmarkGang(b *testing.B) {
	s := loadSettings(b)
	if s.pods%gangSize != 0 {
		b.Fatalf("BENCH_PODS=%d is not a multiple of the gang size %d", s.pods, gangSize)
	}
	if total := 4*s.pods + warmupPods(s.pods); total > s.nodes*podsPerNode*8/10 {
		b.Fatalf("BENCH_PODS=%d is too many for BENCH_NODES=%d: the run binds %d pods", s.pods, s.nodes, total)
	}
	dialect := os.Getenv("BENCH_GANG_DIALECT")
	if dialect == "" {
		dialect = dialectAnnotation
	}
	if dialect != dialectNative && dialect != dialectAnnotation {
		b.Fatalf("BENCH_GANG_DIALECT=%q: want %s or %s", dialect, dialectNative, dialectAnnotation)
	}
	var ours, kube, ceiling, oursWithStartup, kubeWithStartup float64
	runs := 0
	for b.Loop() {
		c1, sr, kr, c2 := runGangOnce(b, s, dialect)
		ours += sr.podsPerSecond()
		kube += kr.podsPerSecond()
		oursWithStartup += withStartup(sr)
		kubeWithStartup += withStartup(kr)
		ceiling += (c1.podsPerSecond() + c2.podsPerSecond()) / 2
		runs++
	}
	ours, kube, ceiling = ours/float64(runs), kube/float64(runs), ceiling/float64(runs)
	b.ReportMetric(0, "ns/op") // one op is a whole run
	b.ReportMetric(ours, "pods/s")
	b.ReportMetric(kube, "kube-scheduler-pods/s")
	b.ReportMetric(ceiling, "ceiling-pods/s")
	b.ReportMetric(ours/ceiling, "ratio")
	b.ReportMetric(ours/kube, "vs-kube-scheduler")
	b.ReportMetric(oursWithStartup/float64(runs), "pods/s-with-start-up")
	b.ReportMetric(kubeWithStartup/float64(runs), "kube-scheduler-pods/s-with-start-up")
}

// withStartup is the rate of r counted from the start of the scheduler,
// informer lists and event handler sync included.
func withStartup(r schedulerRun) float64 {
	return float64(r.pods) / (r.startup + r.elapsed).Seconds()
}

// runGangOnce does one full run of BenchmarkGang on a fresh control plane.
func runGangOnce(b *testing.B, s settings, dialect string) (ceiling1 phase, ours schedulerRun, kube schedulerRun, ceiling2 phase) {
	runStart := time.Now()
	cp, err := controlplane.Start(
		controlplane.WithFeatureGates("GenericWorkload=true"),
		controlplane.WithRuntimeConfig("scheduling.k8s.io/v1beta1=true"),
	)
	if err != nil {
		b.Fatal(err)
	}
	cancelSignal := cp.StopOnSignal()
	defer func() {
		cancelSignal()
		if err := cp.Stop(); err != nil {
			b.Errorf("stopping the control plane: %v", err)
		}
	}()
	procs := controlPlaneProcesses()
	admin := clientFor(b, cp.Config, 100000, 100000)
	ctx := b.Context()

	setupStart := time.Now()
	nodes := createNodes(b, ctx, admin, s.nodes)
	createPods(b, ctx, admin, "warmup", noSchedulerName, warmupPods(s.pods))
	createPods(b, ctx, admin, "ceiling-1", noSchedulerName, s.pods)
	createGangPods(b, ctx, admin, "gang-batch", schedulerName, s.pods, dialect)
	createGangPods(b, ctx, admin, "gang-kube", v1.DefaultSchedulerName, s.pods, dialectNative)
	createPods(b, ctx, admin, "ceiling-2", noSchedulerName, s.pods)
	logf("setup: %d nodes, %d+4×%d pods, gangs of %d (batch-scheduler: %s dialect) in %s", s.nodes, warmupPods(s.pods), s.pods, gangSize, dialect,
		time.Since(setupStart).Round(time.Millisecond))

	warm := runCeiling(b, s, cp, admin, procs, "warmup", nodes)
	logf("warm-up (untimed): %d pods in %s: %.0f pods/s", warm.pods, warm.elapsed.Round(time.Millisecond), warm.podsPerSecond())
	ceiling1 = runCeiling(b, s, cp, admin, procs, "ceiling-1", nodes)
	logf("ceiling-1: %d pods in %s: %.0f pods/s", ceiling1.pods, ceiling1.elapsed.Round(time.Millisecond), ceiling1.podsPerSecond())
	ours = runScheduler(b, s, cp, admin, procs, "gang-batch", nodes, schedulerPhase{name: "batch-scheduler", schedulerName: schedulerName})
	logf("batch-scheduler: %d pods in %s: %.0f pods/s (start-up %s)", ours.pods, ours.elapsed.Round(time.Millisecond), ours.podsPerSecond(), ours.startup.Round(time.Millisecond))
	kube = runKubeScheduler(b, s, cp, admin, procs, "gang-kube", nodes)
	logf("kube-scheduler: %d pods in %s: %.0f pods/s (start-up %s)", kube.pods, kube.elapsed.Round(time.Millisecond), kube.podsPerSecond(), kube.startup.Round(time.Millisecond))
	ceiling2 = runCeiling(b, s, cp, admin, procs, "ceiling-2", nodes)
	logf("ceiling-2: %d pods in %s: %.0f pods/s", ceiling2.pods, ceiling2.elapsed.Round(time.Millisecond), ceiling2.podsPerSecond())

	printGangSummary(os.Stdout, s, dialect, []phase{ceiling1, ours.phase, kube.phase, ceiling2}, time.Since(runStart))
	fmt.Fprintf(os.Stdout, "start-up (start to ready, not in the timed phases): batch-scheduler %s, kube-scheduler %s; counted from the start: batch-scheduler %.0f pods/s, kube-scheduler %.0f pods/s, ratio %.1f\n\n",
		ours.startup.Round(time.Millisecond), kube.startup.Round(time.Millisecond), withStartup(ours), withStartup(kube), withStartup(ours)/withStartup(kube))
	return ceiling1, ours, kube, ceiling2
}

// createGangPods creates namespace ns with n pods of scheduler in gangs of
// gangSize (gang-00000, ...) in dialect; native also creates the PodGroups.
func createGangPods(b *testing.B, ctx context.Context, client kubernetes.Interface, ns, scheduler string, n int, dialect string) {
	b.Helper()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatalf("creating namespace %s: %v", ns, err)
	}
	gangName := func(i int) string { return fmt.Sprintf("gang-%05d", i/gangSize) }
	if dialect == dialectNative {
		err := parallel(n/gangSize, setupWorkers, func(g int) error {
			pg := &schedulingv1beta1.PodGroup{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gangName(g * gangSize)},
				Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: gangSize},
				}},
			}
			if _, err := client.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating PodGroup %s/%s (is scheduling.k8s.io/v1beta1 served?): %w", ns, pg.Name, err)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	err := parallel(n, setupWorkers, func(i int) error {
		w := st.MakePod().Namespace(ns).Name(fmt.Sprintf("pod-%05d", i)).Scheduler(scheduler).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: podCPU, v1.ResourceMemory: podMemory})
		if dialect == dialectAnnotation {
			w = w.Group(gangName(i)).MinAvailable(strconv.Itoa(gangSize))
		}
		pod := w.Obj()
		pod.UID = ""
		if dialect == dialectNative {
			pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(gangName(i))}
		}
		created, err := controlplane.CreatePod(ctx, client, pod)
		if err != nil {
			return err
		}
		// The API server drops the field when GenericWorkload is off.
		if dialect == dialectNative && created.Spec.SchedulingGroup == nil {
			return fmt.Errorf("pod %s/%s lost spec.schedulingGroup: is the GenericWorkload feature gate on in kube-apiserver?", ns, pod.Name)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// kubeSchedulerConfig is kube-scheduler's configuration for the benchmark:
// the default profile, no leader election, the benchmark's client limits.
const kubeSchedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %g
  burst: %d
leaderElection:
  leaderElect: false
`

// runKubeScheduler runs bin/kube-scheduler on the pending pods of ns and
// times it from its /readyz answering 200 to the last bind.
func runKubeScheduler(b *testing.B, s settings, cp *controlplane.ControlPlane, admin kubernetes.Interface, procs map[string]int, ns string, nodes []string) schedulerRun {
	b.Helper()
	ctx := b.Context()
	assets, err := controlplane.AssetsDir()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(assets, "kube-scheduler")
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("kube-scheduler binary missing (build it with 'make control-plane'): %v", err)
	}
	dir := b.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, kubeSchedulerConfig, cp.KubeconfigPath, s.qps, s.burst), 0o600); err != nil {
		b.Fatal(err)
	}
	logPath := filepath.Join(dir, "kube-scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()

	w := watchBinds(b, admin, ns, s.pods)
	addr := freeAddress(b)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	started := time.Now()
	// /readyz is allowed without credentials (kube-scheduler's
	// --authorization-always-allow-paths default); its serving certificate
	// is self-signed into --cert-dir.
	cmd := exec.Command(bin, "--config", cfgPath, "--feature-gates=GenericWorkload=true",
		"--bind-address=127.0.0.1", "--secure-port", port, "--cert-dir", filepath.Join(dir, "certs"),
		"-v", strconv.Itoa(s.verbosity))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	defer stop()
	fail := func(format string, args ...any) {
		stop()
		data, _ := os.ReadFile(logPath)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		b.Fatalf(format+"\nkube-scheduler log (end):\n%s", append(args, data)...)
	}

	// With a large backlog of gang pods, kube-scheduler takes minutes to
	// sync its event handlers; the wait is bounded like a phase.
	ready, err := waitKubeSchedulerReady(addr, exited, s.timeout)
	if err != nil {
		fail("kube-scheduler: %v", err)
	}
	withKube := map[string]int{"kube-scheduler": cmd.Process.Pid}
	for k, v := range procs {
		withKube[k] = v
	}
	req0 := apiRequests(b, admin)
	cpu0 := readCPU(withKube)
	first, last := w.wait(b, "kube-scheduler", s.timeout)
	cpu := readCPU(withKube).sub(cpu0)
	reqs := subCounts(apiRequests(b, admin), req0)
	stop()
	w.check(b, "kube-scheduler")
	checkCapacity(b, ctx, admin, nodes)
	return schedulerRun{
		phase:     phase{name: "kube-scheduler", elapsed: last.Sub(ready), pods: s.pods, cpu: cpu, requests: reqs, quarters: w.progress(ready)},
		startup:   ready.Sub(started),
		firstBind: first.Sub(ready),
	}
}

// waitKubeSchedulerReady polls kube-scheduler's /readyz every 5ms and
// returns when it first answered 200, within timeout.
func waitKubeSchedulerReady(addr string, exited chan error, timeout time.Duration) (time.Time, error) {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		// Its own self-signed certificate, on loopback.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return time.Time{}, fmt.Errorf("exited before it was ready: %v", err)
		default:
		}
		resp, err := client.Get("https://" + addr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("/readyz not ready within %s", timeout)
}

func printGangSummary(out io.Writer, s settings, dialect string, phases []phase, total time.Duration) {
	c1, ours, kube, c2 := phases[0], phases[1], phases[2], phases[3]
	ceiling := (c1.podsPerSecond() + c2.podsPerSecond()) / 2
	fmt.Fprintf(out, "\ngang scheduling: %d nodes, %d pods per phase in gangs of %d (batch-scheduler: %s dialect; kube-scheduler: native PodGroups), client QPS %.0f burst %d\n",
		s.nodes, s.pods, gangSize, dialect, s.qps, s.burst)
	fmt.Fprintf(out, "%-16s %10s %10s %8s %12s %8s %8s %10s %12s\n", "phase", "time", "pods/s", "ratio", "apiserver-s", "etcd-s", "self-s", "kube-sch-s", "cpu-ms/pod")
	for _, p := range phases {
		var sum time.Duration
		for _, v := range p.cpu {
			sum += v
		}
		ratio := ""
		if p.name == ours.name || p.name == kube.name {
			ratio = fmt.Sprintf("%.2f", p.podsPerSecond()/ceiling)
		}
		fmt.Fprintf(out, "%-16s %10s %10.0f %8s %12s %8s %8s %10s %12.2f\n", p.name, p.elapsed.Round(time.Millisecond), p.podsPerSecond(), ratio,
			p.cpu.fmt("kube-apiserver"), p.cpu.fmt("etcd"), p.cpu.fmt("self"), p.cpu.fmt("kube-scheduler"), float64(sum.Microseconds())/1000/float64(p.pods))
	}
	fmt.Fprintf(out, "ceiling (mean) %.0f pods/s; batch-scheduler %.0f pods/s, ratio %.2f (goal ≥ 0.70); kube-scheduler %.0f pods/s; batch-scheduler/kube-scheduler %.1f (goal ≥ 10)\n",
		ceiling, ours.podsPerSecond(), ours.podsPerSecond()/ceiling, kube.podsPerSecond(), ours.podsPerSecond()/kube.podsPerSecond())
	for _, p := range phases {
		var q []string
		for _, d := range p.quarters {
			q = append(q, d.Round(10*time.Millisecond).String())
		}
		fmt.Fprintf(out, "%s: 25/50/75/100%% bound at %s; API requests: %s\n", p.name, strings.Join(q, " "), formatRequests(p))
	}
	fmt.Fprintf(out, "CPU columns: seconds of CPU used during the phase (self = this process: the binder, or batch-scheduler, plus the watch); run time %s\n\n", total.Round(time.Second))
}
