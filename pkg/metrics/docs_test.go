package metrics_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
)

// repoRoot is the repository's top directory, seen from this package's
// directory (where go test runs the test).
const repoRoot = "../.."

// docGlobs are the documents whose metric names must exist, relative to
// repoRoot.
var docGlobs = []string{"README.md", "docs/*.md"}

// metricNameRE matches a metric name of this project in prose. It needs
// no word boundary: the names are made of what it matches.
var metricNameRE = regexp.MustCompile(`batch_scheduler_[a-z0-9_]*[a-z0-9]`)

// seriesSuffixes are the suffixes of the series a histogram or summary
// exposes besides its own name; a document may name those series.
var seriesSuffixes = []string{"_bucket", "_sum", "_count"}

// TestDocumentedMetricsExist keeps the documents and the code in step:
// every metric name the documents give must be one the project registers,
// and every metric the project registers must be documented somewhere.
func TestDocumentedMetricsExist(t *testing.T) {
	registered := registeredMetricNames(t)
	if len(registered) == 0 {
		t.Fatal("no metric registered: the collection of names is broken")
	}
	known := make(map[string]bool, len(registered))
	for _, n := range registered {
		known[n] = true
		if !strings.HasPrefix(n, metrics.Namespace+"_") {
			t.Errorf("registered metric %s does not start with %q, so no document can be checked against it", n, metrics.Namespace+"_")
		}
	}

	documented := documentedMetricNames(t)
	if len(documented) == 0 {
		t.Fatalf("no metric name found in %v under %s: wrong directory?", docGlobs, repoRoot)
	}
	mentioned := map[string]bool{}
	var unknown []string
	for _, name := range sortedKeys(documented) {
		base := registeredBase(name, known)
		if base == "" {
			unknown = append(unknown, name+" ("+strings.Join(documented[name], ", ")+")")
			continue
		}
		mentioned[base] = true
	}
	if len(unknown) > 0 {
		t.Errorf("documented metrics that the code does not register:\n\t%s", strings.Join(unknown, "\n\t"))
	}
	var undocumented []string
	for _, n := range registered {
		if !mentioned[n] {
			undocumented = append(undocumented, n)
		}
	}
	if len(undocumented) > 0 {
		t.Errorf("registered metrics documented nowhere in %v:\n\t%s", docGlobs, strings.Join(undocumented, "\n\t"))
	}
}

// registeredBase returns the registered metric that name is, or whose
// series it names (name is the metric's name plus a seriesSuffixes
// entry), or "" if there is none.
func registeredBase(name string, known map[string]bool) string {
	if known[name] {
		return name
	}
	for _, s := range seriesSuffixes {
		if base, ok := strings.CutSuffix(name, s); ok && known[base] {
			return base
		}
	}
	return ""
}

// registeredMetricNames returns, sorted, the name of every metric the
// project registers: it builds each metric set on one fresh registry, as
// the command does, and asks each registered collector to describe its
// metrics, which needs no sample (a vector with no children yet is still
// described).
//
// It is the one place to adapt when the metrics move to
// k8s.io/component-base/metrics: register the sets on a
// metrics.NewKubeRegistry() instead and take each metrics.Registerable's
// FQName().
func registeredMetricNames(t *testing.T) []string {
	t.Helper()
	reg := &recordingRegistry{Registry: prometheus.NewPedanticRegistry()}
	if _, err := app.NewMetrics(reg); err != nil {
		t.Fatalf("app.NewMetrics: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range reg.collectors {
		descs := make(chan *prometheus.Desc)
		go func() {
			c.Describe(descs)
			close(descs)
		}()
		for d := range descs {
			seen[descName(t, d)] = true
		}
	}
	return sortedKeys(seen)
}

// recordingRegistry is a prometheus.Registry that remembers the collectors
// registered with it.
type recordingRegistry struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

// Register registers c and records it.
func (r *recordingRegistry) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

// MustRegister registers and records each of cs, panicking on an error.
func (r *recordingRegistry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// descFQNameRE finds the fully-qualified name in a Desc's String(),
// which is the only way client_golang gives it out.
var descFQNameRE = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*")`)

// descName returns the fully-qualified name of d.
func descName(t *testing.T, d *prometheus.Desc) string {
	t.Helper()
	if err := d.Err(); err != nil {
		t.Fatalf("invalid metric description %s: %v", d, err)
	}
	m := descFQNameRE.FindStringSubmatch(d.String())
	if m == nil {
		t.Fatalf("cannot find the name in the metric description %s (has client_golang changed Desc.String?)", d)
	}
	name, err := strconv.Unquote(m[1])
	if err != nil {
		t.Fatalf("metric description %s: name %s: %v", d, m[1], err)
	}
	return name
}

// documentedMetricNames returns each metric name found in the documents,
// with where it appears ("docs/x.md:12").
func documentedMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	for _, g := range docGlobs {
		paths, err := filepath.Glob(filepath.Join(repoRoot, g))
		if err != nil {
			t.Fatalf("document pattern %q: %v", g, err)
		}
		if len(paths) == 0 {
			t.Fatalf("no document matches %q under %s", g, repoRoot)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("reading document: %v", err)
			}
			rel, err := filepath.Rel(repoRoot, p)
			if err != nil {
				t.Fatalf("document %s: %v", p, err)
			}
			for name, lines := range metricNamesIn(string(data)) {
				for _, l := range lines {
					found[name] = append(found[name], rel+":"+strconv.Itoa(l))
				}
			}
		}
	}
	return found
}

// metricNamesIn returns the metric names in text, each with the lines
// (from 1) it appears on.
func metricNamesIn(text string) map[string][]int {
	names := map[string][]int{}
	for i, line := range strings.Split(text, "\n") {
		for _, n := range metricNameRE.FindAllString(line, -1) {
			if l := names[n]; len(l) == 0 || l[len(l)-1] != i+1 {
				names[n] = append(l, i+1)
			}
		}
	}
	return names
}

func TestMetricNamesIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want map[string][]int
	}{
		{name: "none", text: "batch_scheduler alone, and a batch_scheduler_ prefix", want: map[string][]int{}},
		{
			name: "labels and punctuation",
			text: "- `batch_scheduler_pending_jobs{queue}`, `batch_scheduler_cache_size`;\nsee batch_scheduler_cache_size.",
			want: map[string][]int{"batch_scheduler_pending_jobs": {1}, "batch_scheduler_cache_size": {1, 2}},
		},
		{
			name: "digits",
			text: "batch_scheduler_pod_scheduling_e2e_duration_seconds_bucket{le=\"1\"}",
			want: map[string][]int{"batch_scheduler_pod_scheduling_e2e_duration_seconds_bucket": {1}},
		},
		{
			name: "twice on a line",
			text: "x\nbatch_scheduler_a_total and again batch_scheduler_a_total",
			want: map[string][]int{"batch_scheduler_a_total": {2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := metricNamesIn(tc.text)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for n, lines := range tc.want {
				if !slices.Equal(got[n], lines) {
					t.Errorf("%s: got lines %v, want %v (all: %v)", n, got[n], lines, got)
				}
			}
		})
	}
}

func TestRegisteredBase(t *testing.T) {
	known := map[string]bool{"batch_scheduler_x_seconds": true, "batch_scheduler_y_total": true}
	for name, want := range map[string]string{
		"batch_scheduler_x_seconds":        "batch_scheduler_x_seconds",
		"batch_scheduler_x_seconds_bucket": "batch_scheduler_x_seconds",
		"batch_scheduler_x_seconds_count":  "batch_scheduler_x_seconds",
		"batch_scheduler_y_total_sum":      "batch_scheduler_y_total",
		"batch_scheduler_x":                "",
		"batch_scheduler_z_count":          "",
	} {
		if got := registeredBase(name, known); got != want {
			t.Errorf("registeredBase(%q) = %q, want %q", name, got, want)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
