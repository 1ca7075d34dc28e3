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
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
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
//     BENCH_PODS pods (10000, a multiple of 8) in each of the ceiling
//     namespaces of BenchmarkScheduling, gang-batch and gang-kube, plus
//     the warm-up pods; then the untimed warm-up round. gang-kube holds one PodGroup per 8 pods
//     (minCount 8), named by the pods' spec.schedulingGroup.podGroupName,
//     and its pods are kube-scheduler's (default-scheduler). gang-batch
//     holds the same gangs for batch-scheduler in the dialect
//     BENCH_GANG_DIALECT: native (the same PodGroups) or annotation
//     (scheduling.k8s.io/group-name and min-available "8"; the default).
//  2. The raw binding ceiling once per binder concurrency of BENCH_BINDERS
//     (16, 64, 128), as in BenchmarkScheduling.
//  3. batch-scheduler: the real command schedules gang-batch, timed as
//     BenchmarkScheduling's scheduler phase (sync barrier to last bind).
//  4. kube-scheduler: bin/kube-scheduler v1.37.1 (make control-plane) with
//     --feature-gates=GenericWorkload=true, its default profile (which
//     then has the GangScheduling plugin), no leader election and the same
//     client QPS and burst, schedules gang-kube; timed from its /readyz
//     answering 200 (polled every 5ms) to the last bind.
//  5. ceiling-again: the best concurrency once more; the ceiling is the
//     best concurrency's mean, as in BenchmarkScheduling.
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
	if total := (len(s.binders)+3)*s.pods + warmupPods(s.pods); total > s.nodes*podsPerNode*8/10 {
		b.Fatalf("BENCH_PODS=%d is too many for BENCH_NODES=%d: the run binds %d pods", s.pods, s.nodes, total)
	}
	dialect := os.Getenv("BENCH_GANG_DIALECT")
	if dialect == "" {
		dialect = dialectAnnotation
	}
	if dialect != dialectNative && dialect != dialectAnnotation {
		b.Fatalf("BENCH_GANG_DIALECT=%q: want %s or %s", dialect, dialectNative, dialectAnnotation)
	}
	var ours, kube, oursWithStartup, kubeWithStartup float64
	var ceils []ceilings
	runs := 0
	for b.Loop() {
		c, sr, kr := runGangOnce(b, s, dialect)
		ours += sr.podsPerSecond()
		kube += kr.podsPerSecond()
		oursWithStartup += withStartup(sr)
		kubeWithStartup += withStartup(kr)
		ceils = append(ceils, c)
		runs++
	}
	ours, kube = ours/float64(runs), kube/float64(runs)
	b.ReportMetric(0, "ns/op") // one op is a whole run
	b.ReportMetric(ours, "pods/s")
	b.ReportMetric(kube, "kube-scheduler-pods/s")
	ceiling := reportCeilings(b, ceils)
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
func runGangOnce(b *testing.B, s settings, dialect string) (ceils ceilings, ours schedulerRun, kube schedulerRun) {
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
	for _, ns := range s.ceilingNamespaces() {
		createPods(b, ctx, admin, ns, noSchedulerName, s.pods)
	}
	createGangPods(b, ctx, admin, "gang-batch", schedulerName, s.pods, dialect)
	createGangPods(b, ctx, admin, "gang-kube", v1.DefaultSchedulerName, s.pods, dialectNative)
	logf("setup: %d nodes, %d+%d×%d pods, gangs of %d (batch-scheduler: %s dialect) in %s", s.nodes, warmupPods(s.pods), len(s.ceilingNamespaces())+2, s.pods, gangSize, dialect,
		time.Since(setupStart).Round(time.Millisecond))

	warm := runCeiling(b, s, cp, admin, procs, "warmup", nodes, slices.Max(s.binders))
	logf("warm-up (untimed): %d pods in %s: %.0f pods/s", warm.pods, warm.elapsed.Round(time.Millisecond), warm.podsPerSecond())
	env := ceilingEnv{s: s, cp: cp, admin: admin, procs: procs, nodes: nodes}
	ceils = runCeilingsBefore(b, env)
	ours = runScheduler(b, s, cp, admin, procs, "gang-batch", nodes, schedulerPhase{name: "batch-scheduler", schedulerName: schedulerName})
	logf("batch-scheduler: %d pods in %s: %.0f pods/s (start-up %s)", ours.pods, ours.elapsed.Round(time.Millisecond), ours.podsPerSecond(), ours.startup.Round(time.Millisecond))
	kube = runKubeScheduler(b, s, cp, admin, procs, "gang-kube", nodes)
	logf("kube-scheduler: %d pods in %s: %.0f pods/s (start-up %s)", kube.pods, kube.elapsed.Round(time.Millisecond), kube.podsPerSecond(), kube.startup.Round(time.Millisecond))
	ceils = ceils.runAgain(b, env)

	printGangSummary(os.Stdout, s, dialect, ceils, ours, kube, time.Since(runStart))
	fmt.Fprintf(os.Stdout, "start-up (start to ready, not in the timed phases): batch-scheduler %s, kube-scheduler %s; counted from the start: batch-scheduler %.0f pods/s, kube-scheduler %.0f pods/s, ratio %.1f\n\n",
		ours.startup.Round(time.Millisecond), kube.startup.Round(time.Millisecond), withStartup(ours), withStartup(kube), withStartup(ours)/withStartup(kube))
	return ceils, ours, kube
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
	p := startProcess(b, harness.ProcessSpec{Name: "kube-scheduler", Bin: bin, Dir: dir,
		Args: []string{"--config", cfgPath, "--feature-gates=GenericWorkload=true",
			"--bind-address=127.0.0.1", "--secure-port", port, "--cert-dir", filepath.Join(dir, "certs"),
			"-v", strconv.Itoa(s.verbosity)}})
	stop := p.stop
	defer stop()
	fail := func(format string, args ...any) {
		stop()
		b.Fatalf(format+"\nkube-scheduler log (end):\n%s", append(args, p.logTail())...)
	}

	// With a large backlog of gang pods, kube-scheduler takes minutes to
	// sync its event handlers; the wait is bounded like a phase.
	ready, err := waitKubeSchedulerReady(addr, p.exited, s.timeout)
	if err != nil {
		fail("kube-scheduler: %v", err)
	}
	withKube := map[string]int{"kube-scheduler": p.Pid()}
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

func printGangSummary(out io.Writer, s settings, dialect string, ceils ceilings, ours, kube schedulerRun, total time.Duration) {
	_, ceiling := ceils.best()
	fmt.Fprintf(out, "\ngang scheduling: %d nodes, %d pods per phase in gangs of %d (batch-scheduler: %s dialect, %s; kube-scheduler: native PodGroups), client QPS %.0f burst %d\n",
		s.nodes, s.pods, gangSize, dialect, bindConcurrencyText(s), s.qps, s.burst)
	procs := []string{"kube-apiserver", "etcd", "self", "kube-scheduler"}
	printPhaseHeader(out, procs...)
	var phases []phase
	for _, c := range ceils[:len(ceils)-1] {
		printPhaseRow(out, c, "", procs...)
		phases = append(phases, c)
	}
	for _, r := range []schedulerRun{ours, kube} {
		printPhaseRow(out, r.phase, fmt.Sprintf("%.2f", r.podsPerSecond()/ceiling), procs...)
		phases = append(phases, r.phase)
	}
	again := ceils[len(ceils)-1]
	printPhaseRow(out, again, "", procs...)
	phases = append(phases, again)
	fmt.Fprintf(out, "%s; batch-scheduler %.0f pods/s, ratio %.2f (goal ≥ 0.70), p99 scheduling attempt %s; kube-scheduler %.0f pods/s; batch-scheduler/kube-scheduler %.1f (goal ≥ 10)\n",
		ceils.describe(), ours.podsPerSecond(), ours.podsPerSecond()/ceiling, ours.p99Attempt, kube.podsPerSecond(), ours.podsPerSecond()/kube.podsPerSecond())
	printQuarters(out, phases)
	fmt.Fprintf(out, "CPU columns: seconds of CPU used during the phase (self = this process: the binder, or batch-scheduler, plus the watch); run time %s\n\n", total.Round(time.Second))
}
