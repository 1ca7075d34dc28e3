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
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// loadUpstream reads the suite from the module cache; make test builds
// kube-scheduler from that module first, so its absence is a failure.
func loadUpstream(t testing.TB) (string, []TestCase) {
	t.Helper()
	dir, err := SuiteDir()
	if err != nil {
		t.Fatal(err)
	}
	cases, err := LoadSuite(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, cases
}

// TestUpstreamSuiteLoads decodes every upstream test case, selects both
// sets, and renders every template a runnable workload of the short set
// uses: a field or template upstream adds that the runner does not know
// fails here, not halfway through a benchmark.
func TestUpstreamSuiteLoads(t *testing.T) {
	dir, cases := loadUpstream(t)
	if len(cases) < 40 {
		t.Fatalf("read %d test cases from %s, want the whole suite (over 40)", len(cases), dir)
	}
	names := map[string]bool{}
	for _, tc := range cases {
		names[tc.Name] = true
	}
	for _, want := range []string{"SchedulingBasic", "GangScheduling", "TopologySpreading", "PreemptionBasic"} {
		if !names[want] {
			t.Errorf("test case %s missing from the suite", want)
		}
	}
	short := Set{MaxNodes: 500}.Select(cases)
	full := Set{Full: true}.Select(cases)
	if len(short) < 30 || len(full) < 30 {
		t.Fatalf("selected %d short and %d full workloads, want at least 30 each", len(short), len(full))
	}
	runnable := 0
	for _, sel := range short {
		if n := sel.Case.Nodes(sel.Workload); n > 500 {
			t.Errorf("%s: %d nodes in the short set", sel.Name(), n)
		}
		if sel.Skip != "" {
			continue
		}
		runnable++
		checkRenders(t, dir, sel)
	}
	if runnable < 25 {
		t.Errorf("%d runnable workloads in the short set, want at least 25", runnable)
	}
	for _, sel := range full {
		if !sel.Workload.HasLabel("performance") {
			t.Errorf("%s: in the full set without the performance label", sel.Name())
		}
	}
}

// checkRenders renders each template the workload's ops name, at index 0.
func checkRenders(t *testing.T, dir string, sel Selected) {
	t.Helper()
	caseDir := filepath.Join(dir, filepath.Dir(sel.Case.File))
	rc := runtimeConfig(sel.Case.Gates(sel.Workload))
	var visit func(op *Op)
	visit = func(op *Op) {
		params, err := sel.Workload.templateParams(op.TemplateParams)
		if err != nil {
			t.Errorf("%s: %s: %v", sel.Name(), op.Opcode, err)
			return
		}
		if op.Opcode != "createAny" && op.Opcode != "updateAny" && op.Opcode != "createPodGroups" || op.TemplatePath == "" {
			if _, err := sel.Workload.count(op); err != nil && op.Opcode != "barrier" {
				t.Errorf("%s: %s: %v", sel.Name(), op.Opcode, err)
			}
		}
		render := func(p string, out any) {
			if err := Render(filepath.Join(caseDir, p), params, 0, 1, out); err != nil {
				t.Errorf("%s: %s: %v", sel.Name(), op.Opcode, err)
				return
			}
			if u, ok := out.(*unstructured.Unstructured); ok && !served(u.GetAPIVersion(), rc) {
				t.Errorf("%s: %s: %s is written against %s, which kube-apiserver does not serve by default and the runner does not turn on (runtimeConfig: %v)",
					sel.Name(), op.Opcode, p, u.GetAPIVersion(), rc)
			}
		}
		if op.NodeTemplatePath != nil {
			render(*op.NodeTemplatePath, &v1.Node{})
		}
		if op.PodTemplatePath != nil {
			render(*op.PodTemplatePath, &v1.Pod{})
		}
		if op.TemplatePath != "" {
			render(op.TemplatePath, &unstructured.Unstructured{})
		}
		for _, p := range op.TemplatePaths {
			render(p, &unstructured.Unstructured{})
		}
		if op.CreatePodsOp != nil {
			visit(op.CreatePodsOp)
		}
	}
	if p := sel.Case.DefaultPodTemplatePath; p != "" {
		if err := Render(filepath.Join(caseDir, p), nil, 0, 1, &v1.Pod{}); err != nil && !strings.Contains(err.Error(), "no value") {
			t.Errorf("%s: default pod template: %v", sel.Name(), err)
		}
	}
	for i := range sel.Case.WorkloadTemplate {
		visit(&sel.Case.WorkloadTemplate[i])
	}
}

// served reports whether kube-apiserver serves apiVersion: a GA version
// always (the suite's templates use no GA version that is off by
// default), an alpha or beta one only when rc turns it on.
func served(apiVersion string, rc []string) bool {
	_, version, _ := strings.Cut(apiVersion, "/")
	if version == "" {
		version = apiVersion // the core group: "v1"
	}
	if !strings.Contains(version, "alpha") && !strings.Contains(version, "beta") {
		return true
	}
	return slices.Contains(rc, apiVersion+"=true")
}

// TestRuntimeConfig checks the API versions each kind of workload gets
// served: the DeviceClasses of the extended-resource workloads are
// written against resource.k8s.io/v1beta2, which kube-apiserver 1.37
// serves only when asked (TestUpstreamSuiteLoads checks every template
// of the short set against these).
func TestRuntimeConfig(t *testing.T) {
	for _, c := range []struct {
		gates     map[string]bool
		served    []string
		notServed []string
	}{
		{gates: nil, notServed: []string{"resource.k8s.io/v1beta2", "scheduling.k8s.io/v1beta1"}},
		{gates: map[string]bool{"DynamicResourceAllocation": true, "DRAExtendedResource": true},
			served: []string{"resource.k8s.io/v1", "resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2", "v1"}, notServed: []string{"scheduling.k8s.io/v1beta1"}},
		{gates: map[string]bool{"DynamicResourceAllocation": false}, notServed: []string{"resource.k8s.io/v1beta2"}},
		{gates: map[string]bool{"GenericWorkload": true},
			served: []string{"scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"}, notServed: []string{"resource.k8s.io/v1beta2"}},
	} {
		rc := runtimeConfig(c.gates)
		for _, v := range c.served {
			if !served(v, rc) {
				t.Errorf("gates %v: %s not served (runtimeConfig %v)", c.gates, v, rc)
			}
		}
		for _, v := range c.notServed {
			if served(v, rc) {
				t.Errorf("gates %v: %s served (runtimeConfig %v)", c.gates, v, rc)
			}
		}
	}
}

func TestUnsupportedNamesTheMissingFeature(t *testing.T) {
	_, cases := loadUpstream(t)
	want := map[string]string{
		"SchedulingWithResourceClaimTemplate": "",
		"ExtendedResource":                    "",
		"ExtendedResourceScoring":             "",
		"SchedulingWithExtendedResource":      "",
		"ConsumableCapacity":                  "",
		"CompatibilityGroups":                 "device compatibility groups",
		"TopologyAwareScheduling":             "",
		"SchedulingCSIPVs":                    "volumes",
		"SchedulingBasic":                     "",
		"GangScheduling":                      "",
	}
	for _, tc := range cases {
		frag, ok := want[tc.Name]
		if !ok {
			continue
		}
		delete(want, tc.Name)
		got := Unsupported(&tc, &tc.Workloads[0])
		if frag == "" && got != "" || frag != "" && !strings.Contains(got, frag) {
			t.Errorf("%s: Unsupported = %q, want %q", tc.Name, got, frag)
		}
	}
	for name := range want {
		t.Errorf("test case %s not found", name)
	}
}

func TestTemplateFuncs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.yaml")
	text := `apiVersion: v1
kind: Pod
metadata:
  name: p-{{DivideInt .Index .per}}-{{Mod .Index 3}}-{{AddInt 1 .Index 2}}-{{MultiplyInt .per 2}}-{{SubtractInt 10 .Index}}
  labels:
    j: {{JSON .sel | printf "%q"}}
    num: "{{Int .num}}"
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{}
	if err := Render(path, map[string]any{"per": float64(3), "sel": map[string]any{"a": "b"}, "num": "7"}, 7, 10, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Name != "p-2-1-10-6-3" {
		t.Errorf("name = %q, want p-2-1-10-6-3", pod.Name)
	}
	if pod.Labels["j"] != `{"a":"b"}` || pod.Labels["num"] != "7" {
		t.Errorf("labels = %v", pod.Labels)
	}
	// Errors name the template and the index instead of panicking.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("metadata:\n  name: x{{Mod .Index 0}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Render(bad, nil, 4, 5, &v1.Pod{})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "index 4") {
		t.Errorf("Mod by zero: err = %v, want one naming bad.yaml and index 4", err)
	}
}

func TestHistogramQuantile(t *testing.T) {
	h := histogram{0.001: 50, 0.002: 90, 0.004: 100, math.Inf(1): 100}
	before := histogram{0.001: 10, 0.002: 10, 0.004: 10, math.Inf(1): 10}
	d := h.sub(before)
	if d.count() != 90 {
		t.Fatalf("count = %v, want 90", d.count())
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.4, 900 * time.Microsecond}, {0.5, 1130 * time.Microsecond}, {0.99, 3820 * time.Microsecond}} {
		if got := d.quantile(c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := (histogram{math.Inf(1): 0}).quantile(0.5); got != 0 {
		t.Errorf("empty: %v, want 0", got)
	}
}

// buildSchedulers returns kube-scheduler's binary from make control-plane
// and batch-scheduler built from this checkout.
func buildSchedulers(t testing.TB) (kube, ours string) {
	t.Helper()
	assets, err := controlplane.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	kube = filepath.Join(assets, "kube-scheduler")
	if _, err := os.Stat(kube); err != nil {
		t.Fatalf("kube-scheduler missing (make control-plane): %v", err)
	}
	if bin := os.Getenv("PERF_SUITE_BATCH_SCHEDULER"); bin != "" {
		// A binary built elsewhere: another revision's, for a bisection.
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("PERF_SUITE_BATCH_SCHEDULER: %v", err)
		}
		return kube, bin
	}
	out := t.TempDir()
	if err := controlplane.GoBuild("../..", out, "./cmd/batch-scheduler"); err != nil {
		t.Fatal(err)
	}
	return kube, filepath.Join(out, "batch-scheduler")
}

// TestSideBySide runs two small upstream workloads, plain pods and
// gangs, with both schedulers on real control planes: the runner's path
// end to end, checked on what each scheduler did.
func TestSideBySide(t *testing.T) {
	dir, cases := loadUpstream(t)
	kube, ours := buildSchedulers(t)
	o := Options{SuiteDir: dir, KubeScheduler: kube, BatchScheduler: ours, QPS: 5000, Burst: 5000,
		Timeout: 2 * time.Minute, Workers: 8, Logf: t.Logf}
	sels := Set{MaxNodes: 10, Match: regexp.MustCompile(`^(SchedulingBasic/5Nodes|GangScheduling/10Nodes_3Gangs)$`)}.Select(cases)
	if len(sels) != 2 {
		t.Fatalf("selected %d workloads, want 2", len(sels))
	}
	var rows []Row
	for _, sel := range sels {
		row := Row{Sel: sel}
		for _, which := range []Scheduler{KubeScheduler, BatchScheduler} {
			want := sel.Case.MeasuredPods(sel.Workload)
			// The plain pods' workload is repeated, as a workload of few
			// pods is for PERF_SUITE_MIN_PODS: a window per run.
			runs := 1
			if sel.Case.Name == "SchedulingBasic" {
				runs = 2
			}
			res := runRepeated(t.Context(), o, sel, which, runs*want)
			if res.Err != nil {
				t.Fatalf("%s with %s: %v", sel.Name(), which, res.Err)
			}
			if len(res.Windows) != runs || res.Windows[0].Pods != want || res.Windows[runs-1].Pods != want {
				t.Fatalf("%s with %s: windows %+v, want %d of %d pods", sel.Name(), which, res.Windows, runs, want)
			}
			// kube-scheduler observes one algorithm run per attempt;
			// batch-scheduler one per cycle, and a gang's cycle decides
			// every member.
			if d := res.Windows[0].Decisions; d < 1 || d > float64(4*want) || which == KubeScheduler && d < float64(want) {
				t.Errorf("%s with %s: %v decisions in the window for %d pods", sel.Name(), which, d, want)
			}
			if w := res.Windows[0]; w.P50 <= 0 || w.P99 < w.P50 || w.P99 > 2*time.Minute || w.Decide50 <= 0 || w.Decide99 < w.Decide50 {
				t.Errorf("%s with %s: latency p50 %v, p99 %v, decision p50 %v, p99 %v: want 0 < p50 <= p99", sel.Name(), which, w.P50, w.P99, w.Decide50, w.Decide99)
			}
			if which == KubeScheduler {
				row.Kube = res
			} else {
				row.Ours = res
			}
		}
		rows = append(rows, row)
	}
	table := FormatTable(rows)
	t.Logf("\n%s", table)
	if strings.Contains(table, "failed") || strings.Count(table, "\n") != 4 {
		t.Errorf("table:\n%s", table)
	}
}

// BenchmarkPerfSuite runs upstream's scheduler_perf workloads with
// kube-scheduler v1.37.1 and batch-scheduler, each on a fresh control
// plane, and writes the table to $PERF_SUITE_OUT
// (hack/bench-perf-suite.sh). Env: PERF_SUITE_SET (short: each test
// case's largest workload of at most PERF_SUITE_MAX_NODES nodes, 500 by
// default; full: upstream's performance workloads), PERF_SUITE_RUN (a
// regexp of TestCase/workload), PERF_SUITE_TIMEOUT_SECONDS (600),
// PERF_SUITE_PROFILE_DIR (a CPU profile of each scheduler over the first
// PERF_SUITE_PROFILE_SECONDS, 10, of each measured window, and each
// scheduler's log), PERF_SUITE_VERBOSITY (the schedulers' -v, 1),
// PERF_SUITE_MIN_PODS (0: a workload measuring fewer pods is run again,
// on a fresh control plane, until its runs measured that many; see
// runRepeated), PERF_SUITE_ONLY (one scheduler's name: run only it, the
// other's columns left empty), PERF_SUITE_BATCH_SCHEDULER (a
// batch-scheduler binary to run instead of building this checkout's:
// another revision's, to bisect a regression with today's runner),
// PERF_SUITE_BATCH_CONFIG (a batch-scheduler configuration file for the
// workloads without a scheduler configuration of their own, e.g.
// DefaultPreemption's honorPodGroupDisruptionMode).
//
// With -short (the smoke run of hack/test-benchmarks.sh, in CI) it runs
// one small workload, SchedulingBasic/5Nodes (PERF_SUITE_MAX_NODES 10 and
// that PERF_SUITE_RUN, unless set), and a workload that fails fails the
// benchmark: a full run reports it in the table instead and goes on.
func BenchmarkPerfSuite(b *testing.B) {
	dir, cases := loadUpstream(b)
	maxNodes, re := 500, os.Getenv("PERF_SUITE_RUN")
	if testing.Short() {
		maxNodes = 10
		if re == "" {
			re = `^SchedulingBasic/5Nodes$`
		}
	}
	set := Set{Full: os.Getenv("PERF_SUITE_SET") == "full", MaxNodes: envInt(b, "PERF_SUITE_MAX_NODES", maxNodes)}
	if re != "" {
		set.Match = regexp.MustCompile(re)
	}
	kube, ours := buildSchedulers(b)
	o := Options{SuiteDir: dir, KubeScheduler: kube, BatchScheduler: ours, QPS: 5000, Burst: 5000,
		Timeout: time.Duration(envInt(b, "PERF_SUITE_TIMEOUT_SECONDS", 600)) * time.Second, Workers: 16,
		Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }, BatchConfig: os.Getenv("PERF_SUITE_BATCH_CONFIG")}
	if o.BatchConfig != "" {
		if _, err := os.Stat(o.BatchConfig); err != nil {
			b.Fatalf("PERF_SUITE_BATCH_CONFIG: %v", err)
		}
	}
	if d := os.Getenv("PERF_SUITE_PROFILE_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		o.ProfileDir, o.ProfileFor = d, time.Duration(envInt(b, "PERF_SUITE_PROFILE_SECONDS", 10))*time.Second
	}
	o.Verbosity = envInt(b, "PERF_SUITE_VERBOSITY", 1)
	minPods := envInt(b, "PERF_SUITE_MIN_PODS", 0)
	out := os.Getenv("PERF_SUITE_OUT")
	sels := set.Select(cases)
	if len(sels) == 0 {
		b.Fatalf("no workload selected (PERF_SUITE_RUN=%q, PERF_SUITE_MAX_NODES=%d)", re, set.MaxNodes)
	}
	for i := 0; i < b.N; i++ {
		var (
			mu   sync.Mutex
			rows []Row
		)
		for k, sel := range sels {
			row := Row{Sel: sel}
			if sel.Skip == "" {
				// Alternate which runs first, so that a drift of the
				// shared machine does not favour one scheduler.
				order := []Scheduler{KubeScheduler, BatchScheduler}
				if k%2 == 1 {
					order = []Scheduler{BatchScheduler, KubeScheduler}
				}
				if only := os.Getenv("PERF_SUITE_ONLY"); only != "" {
					order = slices.DeleteFunc(order, func(s Scheduler) bool { return string(s) != only })
				}
				for _, which := range order {
					o.Logf("%s: %s: %s", time.Now().Format(time.TimeOnly), sel.Name(), which)
					res := runRepeated(context.Background(), o, sel, which, minPods)
					if res.Err != nil && testing.Short() {
						b.Errorf("%s with %s: %v", sel.Name(), which, res.Err)
					} else if res.Err != nil {
						o.Logf("%s with %s: %v", sel.Name(), which, res.Err)
					}
					if which == KubeScheduler {
						row.Kube = res
					} else {
						row.Ours = res
					}
				}
			}
			mu.Lock()
			rows = append(rows, row)
			table := FormatTable(append([]Row(nil), rows...))
			mu.Unlock()
			if out != "" {
				if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			o.Logf("%s", table)
		}
	}
}

// maxRepeats bounds how often runRepeated runs one workload.
const maxRepeats = 20

// runRepeated runs sel with which as often as it takes its measured pods
// to add up to minPods (at most maxRepeats times, each on a fresh control
// plane), so that a workload of a few pods is not measured in single CPU
// ticks; the windows of all runs make one result. A failed run ends it.
func runRepeated(ctx context.Context, o Options, sel Selected, which Scheduler, minPods int) Result {
	runs := 1
	if n := sel.Case.MeasuredPods(sel.Workload); n > 0 && minPods > n {
		runs = min(maxRepeats, (minPods+n-1)/n)
	}
	var all Result
	for i := range runs {
		if runs > 1 {
			o.Logf("%s: %s: run %d of %d", time.Now().Format(time.TimeOnly), sel.Name(), i+1, runs)
		}
		res := Run(ctx, o, sel, which)
		all.Scheduler, all.Err = res.Scheduler, res.Err
		all.Windows = append(all.Windows, res.Windows...)
		all.Total += res.Total
		if res.Err != nil {
			break
		}
	}
	return all
}

func envInt(b testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}

func TestThroughputSampler(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, c := range []struct {
		name   string
		counts []int // scheduled pods at ticks 1 s apart
		want   []float64
	}{
		{name: "nothing scheduled", counts: []int{0, 0, 0}},
		{name: "a burst inside one second", counts: []int{0, 0, 100, 100, 100}},
		{name: "zeros before the first pod are not samples", counts: []int{0, 0, 10, 30, 60}, want: []float64{20, 30}},
		{name: "a pause is spread over its seconds", counts: []int{5, 5, 5, 11, 12}, want: []float64{2, 2, 2, 1}},
		{name: "a pause at the end is not sampled", counts: []int{5, 15, 15, 15}, want: []float64{10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s throughputSampler
			for i, n := range c.counts {
				s.tick(at(float64(i+1)), n)
			}
			if !slices.Equal(s.samples, c.want) {
				t.Errorf("samples = %v, want %v", s.samples, c.want)
			}
			avg, ok := s.average()
			if ok != (len(c.want) > 0) {
				t.Fatalf("average ok = %v with samples %v", ok, s.samples)
			}
			if ok {
				want := 0.0
				for _, r := range c.want {
					want += r
				}
				if want /= float64(len(c.want)); math.Abs(avg-want) > 1e-9 {
					t.Errorf("average = %v, want %v", avg, want)
				}
			}
		})
	}
	// The rate is over the time that really passed, not the ticks'
	// nominal second: a late tick lowers it.
	var s throughputSampler
	s.tick(at(1), 10)
	s.tick(at(3), 30)
	if !slices.Equal(s.samples, []float64{10}) {
		t.Errorf("late tick: samples = %v, want [10]", s.samples)
	}
}
