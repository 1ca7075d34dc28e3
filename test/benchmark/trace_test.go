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
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// The schedulers BenchmarkTrace compares (BENCH_TRACE_SCHEDULERS).
const (
	// traceBatch is batch-scheduler, its gangs in BENCH_TRACE_DIALECT.
	traceBatch = "batch-scheduler"
	// traceKubeGang is kube-scheduler v1.37.1 with GenericWorkload on,
	// its gangs native PodGroups.
	traceKubeGang = "kube-scheduler-gang"
	// traceKubePlain is kube-scheduler v1.37.1 with its defaults and no
	// gangs: every pod alone.
	traceKubePlain = "kube-scheduler-plain"
)

// traceNodePods is the room of a node of BenchmarkTrace, in pods of one
// CPU each: a server of 8 GPUs, one per pod.
const traceNodePods = 8

// traceSettings are BenchmarkTrace's knobs.
type traceSettings struct {
	// settings holds the client QPS and burst and BENCH_V.
	settings
	spec       traceSpec
	settle     time.Duration
	schedulers []string
	// dialect is batch-scheduler's: native (the PodGroups kube-scheduler
	// reads) or job (the Job's pod template opts in).
	dialect string
	// wait bounds the wait for the last Jobs after the last arrival.
	wait        time.Duration
	bin, logDir string
}

func loadTraceSettings(b testing.TB) traceSettings {
	b.Helper()
	s := traceSettings{settings: loadCommonSettings(b)}
	// With -short (hack/test-benchmarks.sh's smoke run): the smallest
	// cluster a trace fits (twice the largest gang), arrivals over 5 s at
	// a fifth of the load, run times ÷ 1000 (seed 1: 8 Jobs, one of them
	// a gang of 256, none longer than 9 s).
	s.nodes = envInt(b, "BENCH_TRACE_NODES", smoke(1000, 2*traceMaxSize/traceNodePods))
	s.spec = traceSpec{
		seed:     uint64(envInt(b, "BENCH_TRACE_SEED", 1)),
		capacity: s.nodes * traceNodePods,
		window:   time.Duration(envInt(b, "BENCH_TRACE_SECONDS", smoke(120, 5))) * time.Second,
		load:     float64(envInt(b, "BENCH_TRACE_LOAD_PERCENT", smoke(90, 20))) / 100,
		scale:    float64(envInt(b, "BENCH_TRACE_SCALE", smoke(100, 1000))),
	}
	if err := s.spec.validate(); err != nil {
		b.Fatalf("BENCH_TRACE_NODES=%d and the other BENCH_TRACE_* settings: %v", s.nodes, err)
	}
	s.settle = time.Duration(envInt(b, "BENCH_TRACE_SETTLE_SECONDS", 10)) * time.Second
	s.wait = time.Duration(envInt(b, "BENCH_TRACE_WAIT_SECONDS", 900)) * time.Second
	list := os.Getenv("BENCH_TRACE_SCHEDULERS")
	if list == "" {
		list = strings.Join([]string{traceBatch, traceKubeGang, traceKubePlain}, ",")
	}
	for name := range strings.SplitSeq(list, ",") {
		switch name = strings.TrimSpace(name); name {
		case traceBatch, traceKubeGang, traceKubePlain:
			s.schedulers = append(s.schedulers, name)
		default:
			b.Fatalf("BENCH_TRACE_SCHEDULERS=%q: %q is not one of %s, %s, %s", list, name, traceBatch, traceKubeGang, traceKubePlain)
		}
	}
	if s.dialect = os.Getenv("BENCH_TRACE_DIALECT"); s.dialect == "" {
		s.dialect = dialectNative
	}
	if s.dialect != dialectNative && s.dialect != "job" {
		b.Fatalf("BENCH_TRACE_DIALECT=%q: want %s or job", s.dialect, dialectNative)
	}
	s.bin = os.Getenv("BENCH_BATCH_SCHEDULER")
	if s.logDir = os.Getenv("BENCH_TRACE_LOGS"); s.logDir == "" {
		s.logDir = b.TempDir()
	} else if err := os.MkdirAll(s.logDir, 0o755); err != nil {
		b.Fatalf("creating BENCH_TRACE_LOGS %s: %v", s.logDir, err)
	}
	return s
}

func tlogf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench-trace] "+format+"\n", args...)
}

// BenchmarkTrace replays one seeded trace of batch Jobs (trace_gen_test.go)
// against each scheduler of BENCH_TRACE_SCHEDULERS in turn, on one control
// plane with simulated kubelets (KWOK) that run each pod for its Job's
// run time: batch-scheduler, kube-scheduler v1.37.1 with GenericWorkload
// and native PodGroups, and kube-scheduler without gangs. Each Job is a
// batch/v1 Job (parallelism = completions = its size, indexed) whose pods
// kube-controller-manager's Job controller creates; a gang of more than
// one pod has a scheduling.k8s.io/v1beta1 PodGroup of minCount size named
// by its pods' spec.schedulingGroup (or, with BENCH_TRACE_DIALECT=job for
// batch-scheduler, the pod template's batch-scheduler.io/job-gang).
//
// Reported per scheduler: makespan (start of the replay to the last Job
// done), time-averaged allocation (live pods ÷ capacity, over the
// makespan), the wait of each Job (creation to all its indexes bound)
// p50/p99 per size class, and the Jobs that ran below their quorum
// (traceTracker). batch-scheduler fails the benchmark if one of its Jobs
// ran below quorum, or never finished with pods still waiting for a node.
func BenchmarkTrace(b *testing.B) {
	s := loadTraceSettings(b)
	jobs, err := generateTrace(s.spec)
	if err != nil {
		b.Fatal(err)
	}
	tlogf("trace: seed %d, %d nodes of %d pods, window %s, load %.2f, run times ÷ %g: %s",
		s.spec.seed, s.nodes, traceNodePods, s.spec.window, s.spec.load, s.spec.scale, traceSummary(jobs))
	for b.Loop() {
		results := runTraceOnce(b, s, jobs)
		printTraceSummary(os.Stdout, s, jobs, results)
		for _, r := range results {
			name := strings.TrimPrefix(r.scheduler, "kube-scheduler-")
			b.ReportMetric(r.makespan.Seconds(), "makespan-s-"+name)
			b.ReportMetric(r.allocation, "allocation-"+name)
			b.ReportMetric(float64(len(r.violations)), "below-quorum-"+name)
		}
	}
	b.ReportMetric(0, "ns/op") // one op is a whole run
}

// runTraceOnce replays jobs against each scheduler on one fresh control
// plane.
func runTraceOnce(b *testing.B, s traceSettings, jobs []traceJob) []traceResult {
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
	admin := clientFor(b, cp.Config, 100000, 100000)
	ctx := b.Context()
	setupStart := time.Now()
	createTraceNodes(b, ctx, admin, s.nodes)
	for _, p := range tracePriorities {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Value: p.value}
		if _, err := admin.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating PriorityClass %s: %v", p.name, err)
		}
	}
	tlogf("setup: %d KWOK nodes and %d PriorityClasses in %s", s.nodes, len(tracePriorities), time.Since(setupStart).Round(time.Millisecond))
	pods := seedClients(b, cp.Config, 1)[0]
	var results []traceResult
	for _, sched := range s.schedulers {
		waitQuiet(b, admin)
		results = append(results, runTraceScheduler(b, s, cp, admin, pods, sched, jobs))
	}
	return results
}

// runTraceScheduler replays jobs in a namespace of their own against
// sched, waits for them to finish, and clears the namespace.
func runTraceScheduler(b *testing.B, s traceSettings, cp *controlplane.ControlPlane, admin, pods kubernetes.Interface, sched string, jobs []traceJob) traceResult {
	ctx := b.Context()
	ns := "trace-" + strings.TrimPrefix(sched, "kube-scheduler-")
	createNamespace(b, admin, ns)
	tr := newTraceTracker(b, pods, ns, s.settle)
	load0 := loadAverage()
	var stop func()
	mode, schedulerField := "plain", v1.DefaultSchedulerName
	switch sched {
	case traceBatch:
		mode, schedulerField = s.dialect, schedulerName
		qs := startQueueScheduler(b, queueEnv{s: queueSettings{settings: s.settings}, cp: cp, bin: s.bin, logDir: s.logDir}, "batch-scheduler-trace")
		stop = func() {
			if _, crash := qs.stop(b); crash != "" {
				b.Errorf("%s", crash)
			}
		}
	case traceKubeGang:
		mode = dialectNative
		stop = startTraceKubeScheduler(b, s, cp, sched, true)
	case traceKubePlain:
		stop = startTraceKubeScheduler(b, s, cp, sched, false)
	}
	tlogf("%s: replaying %d Jobs (%s) in namespace %s", sched, len(jobs), mode, ns)
	lateness, err := replayTrace(ctx, admin, tr, ns, mode, schedulerField, jobs)
	if err != nil {
		stop()
		b.Fatalf("%s: %v", sched, err)
	}
	deadline := time.Now().Add(s.wait)
	lastLog := time.Now()
	for {
		done, expected := tr.progress()
		if done == expected || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		if time.Since(lastLog) >= 15*time.Second {
			tlogf("%s: %d of %d Jobs done", sched, done, expected)
			lastLog = time.Now()
		}
		time.Sleep(500 * time.Millisecond)
	}
	r := tr.result(sched, s.spec.capacity, time.Now())
	r.lateness = lateness
	stop()
	tr.close()
	if mode == dialectNative {
		checkSchedulingGroup(b, admin, ns, jobs)
	}
	tlogf("%s: makespan %s, allocation %.3f, %d Jobs below quorum, %d pods preempted, %d unfinished (%d with pods waiting for a node); load average %s → %s",
		sched, r.makespan.Round(time.Second), r.allocation, len(r.violations), r.victims, r.unfinished, r.waiting, load0, loadAverage())
	for i, v := range r.violations {
		if i == 5 {
			tlogf("%s: ... and %d more", sched, len(r.violations)-5)
			break
		}
		tlogf("%s: %s", sched, v)
	}
	if sched == traceBatch {
		if len(r.violations) > 0 {
			b.Errorf("batch-scheduler: %d Jobs ran below their quorum, want 0; first: %s", len(r.violations), r.violations[0])
		}
		if r.waiting > 0 {
			b.Errorf("batch-scheduler: %d of %d Jobs never finished within %s of the last arrival and still have pods waiting for a node", r.waiting, r.jobs, s.wait)
		}
	}
	clearTraceNamespace(b, admin, ns)
	return r
}

// replayTrace creates the Jobs (and the PodGroups of the native gangs) of
// ns at their arrival times from now, at most 16 at once, and returns how
// far behind its schedule the latest creation was.
func replayTrace(ctx context.Context, client kubernetes.Interface, tr *traceTracker, ns, mode, scheduler string, jobs []traceJob) (time.Duration, error) {
	start := time.Now()
	tr.begin(start)
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	var lateness time.Duration
	for _, j := range jobs {
		if d := time.Until(start.Add(j.arrival)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return lateness, ctx.Err()
			}
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			now := time.Now()
			err := createTraceJob(ctx, client, tr, ns, mode, scheduler, j)
			mu.Lock()
			defer mu.Unlock()
			lateness = max(lateness, now.Sub(start.Add(j.arrival)))
			if err != nil && firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	return lateness, firstErr
}

// createTraceJob creates j in mode: native (a PodGroup for a gang, named
// by the pods' spec.schedulingGroup), job (the template opts in) or plain.
func createTraceJob(ctx context.Context, client kubernetes.Interface, tr *traceTracker, ns, mode, scheduler string, j traceJob) error {
	gang := j.size > 1
	if mode == dialectNative && gang {
		pg := &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: j.name},
			Spec: schedulingv1beta1.PodGroupSpec{
				SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
					Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(j.size)},
				},
				// kube-scheduler 1.37 refuses a gang whose pods' priority
				// is not the PodGroup's.
				PriorityClassName: tracePriorities[j.priority].name,
			},
		}
		if _, err := client.SchedulingV1beta1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating PodGroup %s/%s: %w", ns, j.name, err)
		}
	}
	size := int32(j.size)
	indexed := batchv1.IndexedCompletion
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: j.name},
		Spec: batchv1.JobSpec{
			Parallelism: &size, Completions: &size, CompletionMode: &indexed,
			// A preempted pod counts as a failure: the Job controller
			// replaces it after its failure backoff (10 s, doubling with
			// each failure of the Job, up to 6 minutes), as it does for any
			// Job that does not say otherwise. (A podFailurePolicy that
			// ignores DisruptionTarget left Jobs without replacement pods
			// for good with kube-controller-manager 1.37.1 here.)
			BackoffLimit: ptr.To[int32](1 << 20),
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{controlplane.RunForAnnotation: j.runFor.String()}},
				Spec: v1.PodSpec{
					SchedulerName:     scheduler,
					PriorityClassName: tracePriorities[j.priority].name,
					RestartPolicy:     v1.RestartPolicyNever,
					Containers: []v1.Container{{Name: "main", Image: "trace", Resources: v1.ResourceRequirements{
						Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}},
				},
			},
		},
	}
	switch {
	case mode == dialectNative && gang:
		job.Spec.Template.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(j.name)}
	case mode == "job" && gang:
		job.Spec.Template.Annotations[framework.JobGangAnnotation] = "true"
	}
	tr.expect(j.name, j.size, j.class, time.Now())
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Job %s/%s: %w", ns, j.name, err)
	}
	return nil
}

// checkSchedulingGroup fails the benchmark if the pods of the first gang
// lost spec.schedulingGroup (the API server drops the field when
// GenericWorkload is off): the gangs would then be no gangs.
func checkSchedulingGroup(b *testing.B, client kubernetes.Interface, ns string, jobs []traceJob) {
	b.Helper()
	gangs := 0
	for _, j := range jobs {
		if j.size == 1 {
			continue
		}
		gangs++
		list, err := client.CoreV1().Pods(ns).List(b.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + j.name})
		if err != nil {
			b.Fatalf("listing the pods of Job %s/%s: %v", ns, j.name, err)
		}
		// kube-controller-manager's pod garbage collector deletes
		// finished pods once more than 12,500 exist, so an early Job
		// may have none left: the check moves on to the next gang.
		if len(list.Items) == 0 {
			continue
		}
		for _, p := range list.Items {
			if p.Spec.SchedulingGroup == nil || ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, "") != j.name {
				b.Errorf("pod %s/%s of gang %s has spec.schedulingGroup %v: is GenericWorkload on in kube-apiserver?", ns, p.Name, j.name, p.Spec.SchedulingGroup)
			}
		}
		return
	}
	if gangs > 0 {
		b.Errorf("none of the %d gang Jobs of %s has pods left to check", gangs, ns)
	}
}

// createTraceNodes creates n simulated nodes of traceNodePods CPUs,
// labeled for batch-scheduler's --node-selector.
func createTraceNodes(b testing.TB, ctx context.Context, client kubernetes.Interface, n int) {
	b.Helper()
	err := parallel(n, setupWorkers, func(i int) error {
		node := st.MakeNode().Name(fmt.Sprintf("trace-node-%05d", i)).Label(poolLabel, poolValue).Capacity(map[v1.ResourceName]string{
			v1.ResourceCPU: strconv.Itoa(traceNodePods), v1.ResourceMemory: "64Gi", v1.ResourcePods: "110",
		}).Obj()
		node.UID = ""
		_, err := controlplane.CreateKwokNode(ctx, client, node)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// startTraceKubeScheduler starts bin/kube-scheduler with its default
// profile, the benchmark's client limits and, if gangs, GenericWorkload
// on, and returns once /readyz answers 200; stop stops it.
func startTraceKubeScheduler(b *testing.B, s traceSettings, cp *controlplane.ControlPlane, name string, gangs bool) (stop func()) {
	b.Helper()
	assets, err := controlplane.AssetsDir()
	if err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(assets, "kube-scheduler")
	cfgPath := filepath.Join(s.logDir, name+".yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, kubeSchedulerConfig, cp.KubeconfigPath, s.qps, s.burst), 0o600); err != nil {
		b.Fatal(err)
	}
	addr := freeAddress(b)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"--config", cfgPath, "--bind-address=127.0.0.1", "--secure-port", port,
		"--cert-dir", filepath.Join(s.logDir, name+"-certs"), "-v", strconv.Itoa(s.verbosity)}
	if gangs {
		args = append(args, "--feature-gates=GenericWorkload=true")
	}
	p := startProcess(b, harness.ProcessSpec{Name: name, Bin: bin, Args: args, Dir: s.logDir})
	b.Cleanup(p.stop)
	if _, err := waitKubeSchedulerReady(addr, p.exited, 5*time.Minute); err != nil {
		p.stop()
		b.Fatalf("%s: %v\n%s", name, err, p.logTail())
	}
	return p.stop
}

// clearTraceNamespace deletes the Jobs of ns, then its pods and the
// namespace (clearNamespace).
func clearTraceNamespace(b testing.TB, client kubernetes.Interface, ns string) {
	b.Helper()
	ctx := b.Context()
	background := metav1.DeletePropagationBackground
	// One call per Job, in parallel: a DeleteCollection of thousands of
	// Jobs outlasts the API server's request timeout on a loaded machine.
	list, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		b.Fatalf("listing the Jobs of %s: %v", ns, err)
	}
	err = parallel(len(list.Items), setupWorkers, func(i int) error {
		err := client.BatchV1().Jobs(ns).Delete(ctx, list.Items[i].Name, metav1.DeleteOptions{PropagationPolicy: &background})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("deleting Job %s/%s: %w", ns, list.Items[i].Name, err)
		}
		return nil
	})
	if err != nil {
		b.Fatalf("deleting the Jobs of %s: %v", ns, err)
	}
	// The Job controller removes its tracking finalizer from the pods of
	// deleted Jobs at its own pace: tens of thousands of pods outlast
	// clearNamespace's wait, so the benchmark removes it itself.
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		b.Fatalf("listing the pods of %s: %v", ns, err)
	}
	noFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
	err = parallel(len(pods.Items), setupWorkers, func(i int) error {
		p := &pods.Items[i]
		if len(p.Finalizers) == 0 {
			return nil
		}
		_, err := client.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the finalizers of pod %s/%s: %w", ns, p.Name, err)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	clearNamespace(b, client, ns)
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// printTraceSummary prints the table of docs/performance.md.
func printTraceSummary(out io.Writer, s traceSettings, jobs []traceJob, results []traceResult) {
	fmt.Fprintf(out, "\ntrace: seed %d, %d nodes × %d pods (capacity %d), arrivals over %s, offered load %.2f, run times ÷ %g; %s; below quorum: some but fewer than size pods live for more than %s\n",
		s.spec.seed, s.nodes, traceNodePods, s.spec.capacity, s.spec.window, s.spec.load, s.spec.scale, traceSummary(jobs), s.settle)
	fmt.Fprintf(out, "| scheduler | makespan | allocation |")
	for _, c := range traceClasses {
		fmt.Fprintf(out, " wait p50 / p99, %s |", c.name)
	}
	fmt.Fprintf(out, " Jobs below quorum | pods preempted | never all bound | unfinished (pods waiting for a node) | replay late by |\n|---|---|---|")
	for range traceClasses {
		fmt.Fprintf(out, "---|")
	}
	fmt.Fprintf(out, "---|---|---|---|---|\n")
	for _, r := range results {
		name := r.scheduler
		if name == traceBatch {
			name += " (" + s.dialect + ")"
		}
		fmt.Fprintf(out, "| %s | %s | %.3f |", name, r.makespan.Round(100*time.Millisecond), r.allocation)
		for i := range traceClasses {
			w := r.waits[i]
			fmt.Fprintf(out, " %s / %s |", quantile(w, 0.5).Round(100*time.Millisecond), quantile(w, 0.99).Round(100*time.Millisecond))
		}
		fmt.Fprintf(out, " %d | %d | %d | %d (%d) | %s |\n", len(r.violations), r.victims, r.unbound, r.unfinished, r.waiting, r.lateness.Round(time.Millisecond))
	}
	fmt.Fprintf(out, "load average at the end: %s\n\n", loadAverage())
}
