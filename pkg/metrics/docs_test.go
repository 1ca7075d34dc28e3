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
	k8smetrics "k8s.io/component-base/metrics"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
)

// repoRoot is the repository's top directory, seen from this package's
// directory (where go test runs the test).
const repoRoot = "../.."

// docGlobs are the documents whose metric names must exist, relative to
// repoRoot.
var docGlobs = []string{"README.md", "docs/*.md", "deploy/monitoring/README.md"}

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
	registered := registeredMetrics(t)
	if len(registered) == 0 {
		t.Fatal("no metric registered: the collection of names is broken")
	}
	known := make(map[string]bool, len(registered))
	for n := range registered {
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
	for _, n := range sortedKeys(registered) {
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

// registeredMetric is what the code says of one metric.
type registeredMetric struct {
	// kind is "counter", "gauge" or "histogram".
	kind string
	// labels are the variable labels, in order.
	labels []string
	// stability is the level component-base put in front of the HELP
	// text ("ALPHA", "BETA").
	stability string
}

// registeredMetrics returns every metric the project registers, by name:
// it builds each metric set on one fresh component-base registry, as the
// command does, and asks each registered collector to describe its
// metrics, which needs no sample (a vector with no children yet is still
// described).
func registeredMetrics(t *testing.T) map[string]registeredMetric {
	t.Helper()
	reg := metricstest.NewRecordingRegistry()
	if _, err := app.NewMetrics(reg); err != nil {
		t.Fatalf("app.NewMetrics: %v", err)
	}
	out := map[string]registeredMetric{}
	for _, c := range reg.Collectors() {
		descs, err := metricstest.Describe(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range descs {
			stability, _, ok := strings.Cut(strings.TrimPrefix(d.Help, "["), "] ")
			if !ok || !strings.HasPrefix(d.Help, "[") {
				t.Errorf("%s: the HELP text %q has no stability level in front", d.Name, d.Help)
			}
			out[d.Name] = registeredMetric{kind: kindOf(c), labels: d.Labels, stability: stability}
		}
	}
	return out
}

// kindOf says what type of metric c is. The custom collectors of this
// project (metrics.ScrapedGauge and the like) are all gauges.
func kindOf(c prometheus.Collector) string {
	switch c.(type) {
	case *k8smetrics.Counter, *k8smetrics.CounterVec:
		return "counter"
	case *k8smetrics.Histogram, *k8smetrics.HistogramVec:
		return "histogram"
	}
	return "gauge"
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
