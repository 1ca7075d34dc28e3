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
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/twolevel"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// twoLevelFramework is the framework of the two-level phase's grants and
// handler.
const twoLevelFramework = "batch"

// BenchmarkSchedulingTwoLevel compares the scheduling throughput of the
// real batch-scheduler under the two-level event handler with the default
// handler, in the same run on the same control plane (one fresh control
// plane per b.N iteration):
//
//  1. Setup (not timed): BENCH_NODES nodes (500) as in BenchmarkScheduling,
//     and BENCH_PODS pods (10000) in each of the namespaces
//     sched-default-1, sched-two-level and sched-default-2, each namespace's
//     pods with their own spec.schedulerName, plus the warm-up pods; then
//     the untimed warm-up round. A resourcemanager.Store on 127.0.0.1
//     serves one Grant per node to framework "batch" of the node's whole
//     allocatable (cpu, memory, pods).
//  2. default-1: the command with the default handler schedules
//     sched-default-1.
//  3. two-level: the command with --event-handler two-level (framework
//     "batch") and a configuration file with a custom informer of
//     resource Grant from the store (source http), as an allocator would
//     be wired in production, schedules sched-two-level. Every node's cap
//     comes from its grant before the sync barrier; the grants leave room
//     for every pod, so only the handler's and the cap's costs differ.
//  4. default-2: as default-1, on sched-default-2.
//
// Each phase is timed as BenchmarkScheduling's scheduler phase (sync
// barrier to the last bind seen by the watch) and checked the same way
// (each pod bound once, pods_bound_total, no node over its allocatable).
// The default rate is the mean of default-1 and default-2, which bracket
// the two-level phase, so that drift on a shared machine evens out.
//
// Reported: default-pods/s, two-level-pods/s, ratio (two-level ÷ default;
// the goal is at least 0.90) and self-cpu-ratio (the scheduler process's
// CPU per pod, two-level ÷ default: above 1 means two-level costs more).
// BENCH_CPUPROFILE=PREFIX writes a CPU profile of each phase to
// PREFIX-default-1.pprof, PREFIX-two-level.pprof and PREFIX-default-2.pprof.
func BenchmarkSchedulingTwoLevel(b *testing.B) {
	s := loadSettings(b)
	var defaults, twoLevels []schedulerRun
	for b.Loop() {
		d1, tl, d2 := runTwoLevelOnce(b, s)
		defaults = append(defaults, d1, d2)
		twoLevels = append(twoLevels, tl)
	}
	defRate, tlRate := meanRate(defaults), meanRate(twoLevels)
	b.ReportMetric(0, "ns/op") // one op is a whole run: meaningless here
	b.ReportMetric(defRate, "default-pods/s")
	b.ReportMetric(tlRate, "two-level-pods/s")
	b.ReportMetric(tlRate/defRate, "ratio")
	if d, t := meanSelfCPU(defaults), meanSelfCPU(twoLevels); d > 0 {
		b.ReportMetric(t/d, "self-cpu-ratio")
	}
}

func meanRate(runs []schedulerRun) float64 {
	var sum float64
	for _, r := range runs {
		sum += r.podsPerSecond()
	}
	return sum / float64(len(runs))
}

// meanSelfCPU is the mean CPU of this process (the scheduler and the
// watch) per pod, in ms; 0 when it could not be read.
func meanSelfCPU(runs []schedulerRun) float64 {
	var sum float64
	for _, r := range runs {
		self, ok := r.cpu["self"]
		if !ok {
			return 0
		}
		sum += float64(self.Microseconds()) / 1000 / float64(r.pods)
	}
	return sum / float64(len(runs))
}

// runTwoLevelOnce does one full run on a fresh control plane.
func runTwoLevelOnce(b *testing.B, s settings) (default1, twoLevel, default2 schedulerRun) {
	runStart := time.Now()
	cp, stop := startControlPlane(b)
	defer stop()
	procs := controlPlaneProcesses()
	admin := clientFor(b, cp.Config, 100000, 100000)
	ctx := b.Context()

	setupStart := time.Now()
	nodes := createNodes(b, ctx, admin, s.nodes)
	createPods(b, ctx, admin, "warmup", noSchedulerName, warmupPods(s.pods))
	phases := []struct {
		sp schedulerPhase
		ns string
	}{
		{schedulerPhase{name: "default-1", schedulerName: "bench-default-1"}, "sched-default-1"},
		{schedulerPhase{name: "two-level", schedulerName: "bench-two-level"}, "sched-two-level"},
		{schedulerPhase{name: "default-2", schedulerName: "bench-default-2"}, "sched-default-2"},
	}
	for _, p := range phases {
		createPods(b, ctx, admin, p.ns, p.sp.schedulerName, s.pods)
	}
	grantsURL, stopGrants := serveGrants(b, admin)
	defer stopGrants()
	cfg := filepath.Join(b.TempDir(), "two-level.yaml")
	config := fmt.Sprintf(`apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
customInformers:
- name: allocator
  resource: Grant
  source: {http: {url: %q}}
eventHandlers:
- name: %s
  args: {framework: %s}
`, grantsURL, twolevel.Name, twoLevelFramework)
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		b.Fatal(err)
	}
	phases[1].sp.args = []string{"--event-handler", twolevel.Name, "--config-path", cfg}
	logf("setup: %d nodes, %d grants and %d+3×%d pods in %s", s.nodes, len(nodes), warmupPods(s.pods), s.pods, time.Since(setupStart).Round(time.Millisecond))

	warm := runCeiling(b, s, cp, admin, procs, "warmup", nodes, slices.Max(s.binders))
	logf("warm-up (untimed): %d pods in %s: %.0f pods/s", warm.pods, warm.elapsed.Round(time.Millisecond), warm.podsPerSecond())

	runs := make([]schedulerRun, len(phases))
	for i, p := range phases {
		ps := s
		if s.cpuProfile != "" {
			ps.cpuProfile = s.cpuProfile + "-" + p.sp.name + ".pprof"
		}
		runs[i] = runScheduler(b, ps, cp, admin, procs, p.ns, nodes, p.sp)
		r := runs[i]
		logf("%s: %d pods in %s: %.0f pods/s (start-up %s, first bind after %s)", p.sp.name, r.pods,
			r.elapsed.Round(time.Millisecond), r.podsPerSecond(), r.startup.Round(time.Millisecond), r.firstBind.Round(time.Millisecond))
	}
	printTwoLevelSummary(os.Stdout, s, runs, time.Since(runStart))
	return runs[0], runs[1], runs[2]
}

// serveGrants serves, from a resourcemanager.Store on 127.0.0.1, one Grant
// per benchmark node to twoLevelFramework of the node's whole allocatable.
// It returns the store's URL and the function that stops it.
func serveGrants(b *testing.B, admin kubernetes.Interface) (url string, stop func()) {
	b.Helper()
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind:       v1alpha1.SchemeGroupVersion.WithKind("Grant"),
		Resource:               v1alpha1.GrantsResource,
		Example:                &v1alpha1.Grant{},
		InitialResourceVersion: time.Now().UnixMicro(),
	})
	if err != nil {
		b.Fatal(err)
	}
	list, err := admin.CoreV1().Nodes().List(b.Context(), metav1.ListOptions{LabelSelector: poolLabel + "=" + poolValue})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range list.Items {
		g := &v1alpha1.Grant{
			ObjectMeta: metav1.ObjectMeta{Name: twoLevelFramework + "." + n.Name},
			Spec: v1alpha1.GrantSpec{
				Framework: twoLevelFramework,
				NodeName:  n.Name,
				Resources: n.Status.Allocatable.DeepCopy(),
				Issuer:    "bench-allocator",
			},
			Status: v1alpha1.GrantStatus{Phase: v1alpha1.GrantActive},
		}
		if errs := v1alpha1.ValidateGrant(g); len(errs) > 0 {
			b.Fatalf("grant %s: %v", g.Name, errs.ToAggregate())
		}
		if err := store.Create(g); err != nil {
			b.Fatalf("grant %s: %v", g.Name, err)
		}
	}
	srv := httptest.NewServer(store.Handler())
	return srv.URL, func() {
		// Closing the store ends the scheduler's watch, if it is still
		// open, so that the server can close.
		store.Close()
		srv.Close()
	}
}

// printTwoLevelSummary prints one row per scheduler phase and the ratios.
func printTwoLevelSummary(out io.Writer, s settings, runs []schedulerRun, total time.Duration) {
	fmt.Fprintf(out, "\nscheduling throughput, two-level vs default: %d nodes (all granted), %d pods per phase, client QPS %.0f burst %d\n",
		s.nodes, s.pods, s.qps, s.burst)
	fmt.Fprintf(out, "%-10s %10s %8s %12s %8s %8s %11s %12s %10s %10s\n",
		"phase", "time", "pods/s", "apiserver-s", "etcd-s", "self-s", "cpu-ms/pod", "self-ms/pod", "cycle-ms", "start-up")
	for _, r := range runs {
		var all time.Duration
		for _, v := range r.cpu {
			all += v
		}
		selfMS := "-"
		if v, ok := r.cpu["self"]; ok {
			selfMS = fmt.Sprintf("%.2f", float64(v.Microseconds())/1000/float64(r.pods))
		}
		fmt.Fprintf(out, "%-10s %10s %8.0f %12s %8s %8s %11.2f %12s %10s %10s\n", r.name, r.elapsed.Round(time.Millisecond), r.podsPerSecond(),
			r.cpu.fmt("kube-apiserver"), r.cpu.fmt("etcd"), r.cpu.fmt("self"), float64(all.Microseconds())/1000/float64(r.pods),
			selfMS, meanCycle(r.metrics), r.startup.Round(time.Millisecond))
	}
	def := (runs[0].podsPerSecond() + runs[2].podsPerSecond()) / 2
	tl := runs[1].podsPerSecond()
	fmt.Fprintf(out, "default (mean of default-1 and default-2) %.0f pods/s; two-level %.0f pods/s; ratio two-level/default %.3f (goal ≥ 0.90)",
		def, tl, tl/def)
	if d, t := meanSelfCPU([]schedulerRun{runs[0], runs[2]}), meanSelfCPU(runs[1:2]); d > 0 {
		fmt.Fprintf(out, "; scheduler CPU per pod two-level/default %.3f", t/d)
	}
	fmt.Fprintln(out)
	for _, r := range runs {
		fmt.Fprintf(out, "%s: %s; API requests: %s\n", r.name, attempts(r.metrics), formatRequests(r.phase))
	}
	fmt.Fprintf(out, "self = this process (the scheduler plus the benchmark's watch); run time %s\n\n", total.Round(time.Second))
}

// attempts lists the scheduling attempts by result, from the count of
// batch_scheduler_scheduling_attempt_duration_seconds.
func attempts(m map[string]float64) string {
	by := map[string]float64{}
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, "batch_scheduler_scheduling_attempt_duration_seconds_count{")
		if !ok {
			continue
		}
		_, result, ok := strings.Cut(rest, `result="`)
		if !ok {
			continue
		}
		result, _, _ = strings.Cut(result, `"`)
		by[result] += v
	}
	if len(by) == 0 {
		return "attempts -"
	}
	var parts []string
	for k, v := range by {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
	}
	sort.Strings(parts)
	return "attempts " + strings.Join(parts, ", ")
}

// meanCycle is the mean duration of a successful scheduling attempt, from
// the scheduler's batch_scheduler_scheduling_attempt_duration_seconds.
func meanCycle(m map[string]float64) string {
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
	if cnt == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", 1000*sum/cnt)
}
