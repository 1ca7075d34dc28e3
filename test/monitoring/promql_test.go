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

package monitoring

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// jobName is the job label of the scheduler's series: the ServiceMonitor
// names the job after the Service (TestServiceMonitor checks both).
const jobName = "batch-scheduler-metrics"

// promql parses with the parser's defaults, as a Prometheus without
// feature flags does: no experimental functions.
var promql = parser.NewParser(parser.Options{})

// parseExpr parses a PromQL expression.
func parseExpr(expr string) (parser.Expr, error) {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", expr, err)
	}
	return e, nil
}

// selectors returns the vector selectors of e, range selectors' included.
func selectors(e parser.Node) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// selectedName returns the metric name a selector selects: its name, or
// its __name__ matcher's value if that matches exactly.
func selectedName(vs *parser.VectorSelector) (string, error) {
	if vs.Name != "" {
		return vs.Name, nil
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value, nil
		}
	}
	return "", fmt.Errorf("selector %s names no metric: the check cannot tell whether it selects anything", vs)
}

// checkNames returns an error naming each metric of the selectors that
// known does not have. A histogram's or summary's series (name_bucket,
// name_sum, name_count) count as known when the family is.
func checkNames(known map[string]metricKind, sels []*parser.VectorSelector) error {
	var errs []error
	for _, vs := range sels {
		name, err := selectedName(vs)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !isExported(known, name) {
			errs = append(errs, fmt.Errorf("metric %s (in %s) is not one the scheduler exports", name, vs))
		}
	}
	return errors.Join(errs...)
}

func isExported(known map[string]metricKind, name string) bool {
	if _, ok := known[name]; ok {
		return true
	}
	for _, s := range seriesSuffixes {
		// A missing name reads as plain, the zero value.
		if base, ok := strings.CutSuffix(name, s); ok && known[base] == sampled {
			return true
		}
	}
	return false
}

// checkExpr parses expr and checks the metrics it names.
func checkExpr(known map[string]metricKind, expr string) (parser.Expr, error) {
	e, err := parseExpr(expr)
	if err != nil {
		return nil, err
	}
	if err := checkNames(known, selectors(e)); err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	return e, nil
}

// checkJobMatcher returns an error for each selector of e that does not
// select the job label job exactly: a query without it would mix in any
// other target's series of the same name.
func checkJobMatcher(e parser.Expr, job string) error {
	var errs []error
	for _, vs := range selectors(e) {
		if !slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool {
			return m.Name == "job" && m.Type == labels.MatchEqual && m.Value == job
		}) {
			errs = append(errs, fmt.Errorf("selector %s does not select job=%q", vs, job))
		}
	}
	return errors.Join(errs...)
}

// grafanaVars are plausible values of the dashboard's template variables
// and Grafana's built-in ones, substituted before parsing as Grafana does
// before sending a query.
var grafanaVars = map[string]string{
	"datasource":      "prometheus",
	"job":             jobName,
	"instance":        "10.0.0.7:10259",
	"resource":        "cpu",
	"__rate_interval": "2m",
	"__interval":      "30s",
	"__range":         "6h",
}

// grafanaVarRE matches a Grafana variable reference: $name, ${name},
// ${name:format} and [[name]].
var grafanaVarRE = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// substitute replaces the Grafana variables of s with the values of
// grafanaVars; an unknown one is an error, as it is probably a typo.
func substitute(s string) (string, error) {
	var errs []error
	out := grafanaVarRE.ReplaceAllStringFunc(s, func(ref string) string {
		m := grafanaVarRE.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		v, ok := grafanaVars[name]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown variable %s", ref))
		}
		return v
	})
	return out, errors.Join(errs...)
}

// TestChecker feeds the checker expressions it must accept and ones it
// must reject, so that a check that passes is known to be able to fail.
func TestChecker(t *testing.T) {
	known := exported(t)
	for _, tc := range []struct {
		name, expr string
		wantErr    string
	}{
		{name: "counter", expr: `rate(batch_scheduler_pods_bound_total{job="x"}[5m])`},
		{name: "histogram bucket", expr: `histogram_quantile(0.99, sum by (le) (rate(batch_scheduler_pod_scheduling_e2e_duration_seconds_bucket[5m])))`},
		{name: "summary count", expr: `rate(go_gc_duration_seconds_count[5m])`},
		{name: "name matcher", expr: `{__name__="batch_scheduler_pending_jobs"}`},
		{name: "up and leader", expr: `sum(up) unless on () max(leader_election_master_status) == 1`},
		{name: "bogus metric", expr: `rate(batch_scheduler_no_such_metric_total[5m]) > 0`, wantErr: "batch_scheduler_no_such_metric_total"},
		{name: "bogus among good", expr: `batch_scheduler_pending_jobs / batch_scheduler_pendingjobs`, wantErr: "batch_scheduler_pendingjobs"},
		{name: "suffix of a counter", expr: `batch_scheduler_pods_bound_total_bucket`, wantErr: "batch_scheduler_pods_bound_total_bucket"},
		{name: "suffix of nothing", expr: `batch_scheduler_nothing_count`, wantErr: "batch_scheduler_nothing_count"},
		{name: "no name", expr: `{job="x"}`, wantErr: "names no metric"},
		{name: "syntax", expr: `sum(rate(batch_scheduler_pods_bound_total[5m])`, wantErr: "parsing"},
		{name: "unsubstituted variable", expr: `rate(batch_scheduler_pods_bound_total[$__rate_interval])`, wantErr: "parsing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkExpr(known, tc.expr)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("checkExpr(%q): %v", tc.expr, err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("checkExpr(%q) accepted it, want an error naming %q", tc.expr, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("checkExpr(%q) = %v, want an error naming %q", tc.expr, err, tc.wantErr)
			}
		})
	}
}

func TestCheckJobMatcher(t *testing.T) {
	for expr, ok := range map[string]bool{
		`up{job="a"}`:                             true,
		`rate(x{job="a", instance=~"b"}[1m])`:     true,
		`x{job="a"} / y`:                          false,
		`x{job=~"a"}`:                             false,
		`x{job="b"}`:                              false,
		`sum(x{job="a"}) unless on () y{job="a"}`: true,
	} {
		e, err := parseExpr(expr)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkJobMatcher(e, "a"); (err == nil) != ok {
			t.Errorf("checkJobMatcher(%q) = %v, want ok=%v", expr, err, ok)
		}
	}
}

func TestSubstitute(t *testing.T) {
	got, err := substitute(`rate(x{job="$job", instance=~"${instance}", r="[[resource]]", d="${datasource:raw}"}[$__rate_interval])`)
	if err != nil {
		t.Fatal(err)
	}
	want := `rate(x{job="batch-scheduler-metrics", instance=~"10.0.0.7:10259", r="cpu", d="prometheus"}[2m])`
	if got != want {
		t.Errorf("substitute = %s, want %s", got, want)
	}
	if _, err := substitute(`x{job="$jbo"}`); err == nil || !strings.Contains(err.Error(), "$jbo") {
		t.Errorf("an unknown variable: error %v, want one naming $jbo", err)
	}
}
