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
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// Selected is one workload the suite runs, or skips with a reason.
type Selected struct {
	Case     *TestCase
	Workload *Workload
	// Skip says why the workload is not run: a feature batch-scheduler
	// lacks, or a part of upstream's harness the runner lacks.
	Skip string
}

// Name is "TestCase/workload", as upstream names its benchmarks.
func (s Selected) Name() string { return s.Case.Name + "/" + s.Workload.Name }

// Set picks the workloads of a run.
type Set struct {
	// Full runs the workloads upstream labels "performance" (its CI's
	// 5,000-node sizes); otherwise each test case runs its largest
	// workload of at most MaxNodes nodes.
	Full     bool
	MaxNodes int
	// Match keeps only workloads whose Name matches, when set.
	Match *regexp.Regexp
}

// Select applies the set to the suite.
func (s Set) Select(cases []TestCase) []Selected {
	var out []Selected
	for ci := range cases {
		tc := &cases[ci]
		var picked []*Workload
		if s.Full {
			for wi := range tc.Workloads {
				if tc.Workloads[wi].HasLabel("performance") {
					picked = append(picked, &tc.Workloads[wi])
				}
			}
		} else {
			var best *Workload
			for wi := range tc.Workloads {
				w := &tc.Workloads[wi]
				n := tc.Nodes(w)
				if n > s.MaxNodes {
					continue
				}
				if best == nil || n > tc.Nodes(best) || n == tc.Nodes(best) && tc.MeasuredPods(w) > tc.MeasuredPods(best) {
					best = w
				}
			}
			if best != nil {
				picked = append(picked, best)
			}
		}
		for _, w := range picked {
			sel := Selected{Case: tc, Workload: w}
			if s.Match != nil && !s.Match.MatchString(sel.Name()) {
				continue
			}
			sel.Skip = Unsupported(tc, w)
			out = append(out, sel)
		}
	}
	return out
}

// Unsupported says why a workload cannot be run side by side, or "".
func Unsupported(tc *TestCase, w *Workload) string {
	gates := tc.Gates(w)
	for _, g := range []struct{ gate, what string }{
		{"DRADeviceCompatibilityGroups", "device compatibility groups"},
		{"DRAListTypeAttributes", "list-typed device attributes"},
	} {
		if gates[g.gate] {
			return "Dynamic Resource Allocation: batch-scheduler's DynamicResources does not enable " + g.what + " (" + g.gate + ")"
		}
	}
	var check func(op *Op) string
	check = func(op *Op) string {
		switch op.Opcode {
		case "createResourceClaims":
			return "Dynamic Resource Allocation: the runner has no createResourceClaims op yet"
		case "createPodSets":
			if op.CreatePodsOp != nil {
				return check(op.CreatePodsOp)
			}
		}
		if op.PersistentVolumeTemplatePath != nil || op.PersistentVolumeClaimTemplatePath != nil {
			return "volumes: the runner does not create the PersistentVolumes and claims the workload binds yet"
		}
		if len(op.NodeAllocatableStrategy) > 0 {
			return "volumes: the runner does not set CSINode allocatable counts yet"
		}
		return ""
	}
	for i := range tc.WorkloadTemplate {
		if r := check(&tc.WorkloadTemplate[i]); r != "" {
			return r
		}
	}
	return ""
}

// Options are what a workload run needs besides the workload.
type Options struct {
	// SuiteDir is upstream's scheduler_perf directory.
	SuiteDir string
	// KubeScheduler and BatchScheduler are the two binaries.
	KubeScheduler, BatchScheduler string
	// BatchConfig, if set, is a batch-scheduler configuration file
	// (--config-path) for the workloads whose test case names no
	// scheduler configuration of its own.
	BatchConfig string
	// QPS and Burst limit both schedulers' clients and the runner's.
	QPS, Burst int
	// Timeout bounds each wait for pods to be scheduled.
	Timeout time.Duration
	// Workers create objects in parallel.
	Workers int
	// Logf reports progress.
	Logf func(format string, args ...any)
	// ProfileDir, if set, gets a CPU profile of the scheduler over the
	// first ProfileFor of each measured window, and the scheduler's log
	// when it stops.
	ProfileDir string
	ProfileFor time.Duration
	// Verbosity is the schedulers' -v (1 when 0).
	Verbosity int
}

// Result is one workload under one scheduler.
type Result struct {
	Scheduler Scheduler
	Windows   []Window
	// Err is why the run did not finish; Windows hold what was measured
	// before it.
	Err error
	// Total is the run's wall time, control plane start to stop.
	Total time.Duration
}

// Run runs the workload with one scheduler on a fresh control plane: the
// scheduler is started first, the ops then run as upstream runs them.
func Run(ctx context.Context, o Options, sel Selected, which Scheduler) Result {
	start := time.Now()
	res := Result{Scheduler: which}
	res.Windows, res.Err = run(ctx, o, sel, which)
	res.Total = time.Since(start)
	return res
}

func run(ctx context.Context, o Options, sel Selected, which Scheduler) ([]Window, error) {
	tc, w := sel.Case, sel.Workload
	gates := tc.Gates(w)
	// The admission plugins upstream's harness turns off: there is no
	// service-account controller, nodes have no kubelet, and the
	// templates set spec.priority themselves.
	opts := []controlplane.Option{controlplane.WithAPIServerFlag("disable-admission-plugins", "ServiceAccount", "TaintNodesByCondition", "Priority")}
	if usesDRA(gates) {
		// Pods of ResourceClaimTemplates wait for the controller that
		// makes their claims (upstream's harness runs it in process).
		opts = append(opts, controlplane.WithoutSimulatedKubelets(), controlplane.WithControllers("resourceclaim-controller"))
	} else {
		opts = append(opts, controlplane.WithoutCluster())
	}
	if g := GateFlag(gates); g != "" {
		opts = append(opts, controlplane.WithFeatureGates(g))
	}
	if rc := runtimeConfig(gates); len(rc) > 0 {
		opts = append(opts, controlplane.WithRuntimeConfig(rc...))
	}
	cp, err := controlplane.Start(opts...)
	if err != nil {
		return nil, err
	}
	defer cp.Stop()
	cancelSignal := cp.StopOnSignal()
	defer cancelSignal()

	dir, err := os.MkdirTemp(cp.Dir, string(which)+"-")
	if err != nil {
		return nil, fmt.Errorf("creating the scheduler's directory: %w", err)
	}
	caseDir := filepath.Join(o.SuiteDir, filepath.Dir(tc.File))
	spec := SchedulerSpec{Which: which, Kubeconfig: cp.KubeconfigPath, Gates: gates, QPS: o.QPS, Burst: o.Burst, Dir: dir, Verbosity: o.Verbosity}
	if tc.SchedulerConfigPath != "" {
		spec.ConfigPath = filepath.Join(caseDir, tc.SchedulerConfigPath)
	} else if which == BatchScheduler {
		spec.ConfigPath = o.BatchConfig
	}
	spec.Binary = o.KubeScheduler
	if which == BatchScheduler {
		spec.Binary = o.BatchScheduler
	}
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	client, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(&cfg)
	if err != nil {
		return nil, fmt.Errorf("creating a dynamic client: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tracker, err := newPodTracker(ctx, client)
	if err != nil {
		return nil, err
	}
	sched, err := Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer func() {
		sched.Stop()
		if o.ProfileDir != "" {
			// The control plane's directory goes; the log stays beside
			// the profiles, to trace what they show.
			path := filepath.Join(o.ProfileDir, fmt.Sprintf("%s-%s-%s.log", tc.Name, strings.ReplaceAll(w.Name, "/", "_"), which))
			if err := sched.KeepLog(path); err != nil && o.Logf != nil {
				o.Logf("%v", err)
			}
		}
	}()
	e := &executor{
		client: client, dyn: dyn, tc: tc, w: w, dir: caseDir, sched: sched, tracker: tracker,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())),
		timeout: o.Timeout, workers: max(1, o.Workers),
		profileDir: o.ProfileDir, profileFor: o.ProfileFor, logf: o.Logf,
	}
	if e.logf == nil {
		e.logf = func(string, ...any) {}
	}
	windows, err := e.run(ctx)
	if err != nil {
		// The control plane's directory, with the log, goes with it.
		err = fmt.Errorf("%w\n%s log (end):\n%s", err, which, sched.LogTail(4000))
	}
	return windows, err
}

// Row is one workload's line of the report.
type Row struct {
	Sel        Selected
	Kube, Ours Result
}

// FormatTable renders rows as the Markdown table of docs/performance.md:
// pods/s of each scheduler (upstream's average of per-second samples),
// the ratio, upstream's threshold, and attempt latency percentiles.
func FormatTable(rows []Row) string {
	var b strings.Builder
	b.WriteString("| workload | nodes | measured pods | kube-scheduler pods/s | batch-scheduler pods/s | ratio | upstream threshold | pending → bound p50 / p90 / p99 ms, kube | ours | decision p50 / p99 ms, kube | ours | CPU ms per pod, kube / ours |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Sel.Name() < rows[j].Sel.Name() })
	for _, r := range rows {
		tc, w := r.Sel.Case, r.Sel.Workload
		thr := w.Threshold.String()
		if len(w.ThresholdMetricSelector) > 0 || len(tc.DefaultThresholdMetricSelector) > 0 {
			thr += " (another metric)"
		}
		if r.Sel.Skip != "" {
			fmt.Fprintf(&b, "| %s | %d | %d | skipped: %s | | | %s | | | | | |\n", r.Sel.Name(), tc.Nodes(w), tc.MeasuredPods(w), r.Sel.Skip, thr)
			continue
		}
		k, o := summarize(r.Kube), summarize(r.Ours)
		measured := tc.MeasuredPods(w)
		if n := max(k.pods, o.pods); n > 0 {
			// Windows opened by startCollectingMetrics count what
			// they saw, which the ops do not declare.
			measured = n
		}
		ratio := "–"
		if k.ok && o.ok && k.rate > 0 {
			ratio = fmt.Sprintf("%.2f", o.rate/k.rate)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n", r.Sel.Name(), tc.Nodes(w), measured,
			k.text, o.text, ratio, thr, k.lat, o.lat, k.decide, o.decide, k.cpu, o.cpu)
	}
	return b.String()
}

type summary struct {
	ok                     bool
	pods                   int
	rate                   float64
	text, lat, decide, cpu string
}

func summarize(r Result) summary {
	var s summary
	pods, rate := 0, 0.0
	var cpu time.Duration
	var p50, p90, p99, d50, d99 time.Duration
	for _, w := range r.Windows {
		pods += w.Pods
		rate += w.Average * float64(w.Pods)
		cpu += w.SchedCPU
		p50, p90, p99 = max(p50, w.P50), max(p90, w.P90), max(p99, w.P99)
		d50, d99 = max(d50, w.Decide50), max(d99, w.Decide99)
	}
	if pods > 0 {
		rate /= float64(pods)
	}
	s.rate, s.pods = rate, pods
	s.text = fmt.Sprintf("%.0f", rate)
	if rate < 10 {
		s.text = fmt.Sprintf("%.2g", rate)
	}
	if len(r.Windows) == 0 {
		s.text = "–"
	}
	if r.Err != nil {
		msg := r.Err.Error()
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		s.text += " (failed: " + strings.ReplaceAll(msg, "|", "/") + ")"
	} else {
		s.ok = len(r.Windows) > 0
	}
	s.lat = fmt.Sprintf("%s / %s / %s", ms(p50), ms(p90), ms(p99))
	s.decide = fmt.Sprintf("%s / %s", ms(d50), ms(d99))
	s.cpu = "–"
	if pods > 0 {
		s.cpu = fmt.Sprintf("%.2f", float64(cpu.Microseconds())/1000/float64(pods))
	}
	return s
}

func ms(d time.Duration) string {
	if d >= 100*time.Millisecond {
		return fmt.Sprintf("%.0f", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000)
}

// runtimeConfig returns the API versions, off by default, that the
// workload's templates are written against, as --runtime-config entries.
func runtimeConfig(gates map[string]bool) []string {
	var rc []string
	if gates["DynamicResourceAllocation"] {
		// Some DRA templates are written against the beta versions of
		// resource.k8s.io (the DeviceClasses of the extended-resource
		// workloads against v1beta2), which kube-apiserver 1.37 does
		// not serve unless asked; upstream's harness asks for them.
		rc = append(rc, "resource.k8s.io/v1beta1=true", "resource.k8s.io/v1beta2=true")
	}
	if gates["GenericWorkload"] {
		// One template (podgroup.yaml) is written against v1alpha3.
		rc = append(rc, "scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true")
	}
	return rc
}

// usesDRA reports whether a workload's gates name Dynamic Resource
// Allocation.
func usesDRA(gates map[string]bool) bool {
	for g, on := range gates {
		if on && (g == "DynamicResourceAllocation" || strings.HasPrefix(g, "DRA")) {
			return true
		}
	}
	return false
}
