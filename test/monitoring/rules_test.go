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
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// prometheusRule is the part of a monitoring.coreos.com/v1 PrometheusRule
// that deploy/monitoring uses; decoding is strict.
type prometheusRule struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Groups []struct {
			Name     string `json:"name"`
			Interval string `json:"interval,omitempty"`
			Rules    []rule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

type rule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// alerts returns the built PrometheusRule's rules.
func alerts(t *testing.T) []rule {
	t.Helper()
	var pr prometheusRule
	decodeStrict(t, find(t, "PrometheusRule"), &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("PrometheusRule apiVersion %q, want monitoring.coreos.com/v1", pr.APIVersion)
	}
	var out []rule
	for _, g := range pr.Spec.Groups {
		if g.Name == "" {
			t.Error("a rule group has no name")
		}
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatal("the PrometheusRule has no rule")
	}
	return out
}

// severities are the values of the severity label that Alertmanager
// configurations commonly route on.
var severities = []string{"critical", "warning", "info"}

// TestAlertExpressions checks that every alert's expression parses, names
// only metrics the scheduler exports, and selects the scheduler's job.
func TestAlertExpressions(t *testing.T) {
	known := exported(t)
	for _, r := range alerts(t) {
		e, err := checkExpr(known, r.Expr)
		if err != nil {
			t.Errorf("alert %s: %v", r.Alert, err)
			continue
		}
		if err := checkJobMatcher(e, jobName); err != nil {
			t.Errorf("alert %s: %v", r.Alert, err)
		}
		if err := checkLabelRefs(r, e); err != nil {
			t.Errorf("alert %s: %v", r.Alert, err)
		}
	}
}

// TestAlertsComplete checks what an on-call engineer needs from each
// alert: a unique name, a for: duration, a severity, a summary and a
// description, templates that parse, and a section in README.md.
func TestAlertsComplete(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(monitoringDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, r := range alerts(t) {
		name := r.Alert
		if name == "" {
			t.Errorf("rule %d (record %q) is not an alert: deploy/monitoring has alerts only", i, r.Record)
			continue
		}
		if seen[name] {
			t.Errorf("alert %s: defined twice", name)
		}
		seen[name] = true
		if d, err := model.ParseDuration(r.For); err != nil || d <= 0 {
			t.Errorf("alert %s: for %q: want a positive duration, so that one bad scrape does not page (%v)", name, r.For, err)
		}
		if s := r.Labels["severity"]; !slices.Contains(severities, s) {
			t.Errorf("alert %s: severity %q, want one of %v", name, s, severities)
		}
		for _, a := range []string{"summary", "description"} {
			text := strings.TrimSpace(r.Annotations[a])
			if text == "" {
				t.Errorf("alert %s: no %s annotation", name, a)
				continue
			}
			if err := parseAlertTemplate(text); err != nil {
				t.Errorf("alert %s: %s: %v", name, a, err)
			}
		}
		if !regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(name) + `\s*$`).Match(readme) {
			t.Errorf("alert %s: no section titled %q in %s/README.md", name, name, monitoringDir)
		}
	}
}

// templateDefs are the variables Prometheus defines before expanding an
// alert's annotations.
const templateDefs = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"

// templateFuncs stand for the functions of Prometheus's alert templates
// that the annotations may use; only their names matter to Parse.
var templateFuncs = template.FuncMap{
	"humanize":           func(any) string { return "" },
	"humanize1024":       func(any) string { return "" },
	"humanizeDuration":   func(any) string { return "" },
	"humanizePercentage": func(any) string { return "" },
	"humanizeTimestamp":  func(any) string { return "" },
	"title":              func(string) string { return "" },
	"toUpper":            func(string) string { return "" },
	"toLower":            func(string) string { return "" },
}

// parseAlertTemplate parses text as Prometheus parses an annotation.
func parseAlertTemplate(text string) error {
	if _, err := template.New("annotation").Funcs(templateFuncs).Parse(templateDefs + text); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	return nil
}

// labelRefRE finds the labels an annotation reads: {{ $labels.name }}.
var labelRefRE = regexp.MustCompile(`\$labels\.(\w+)`)

// checkLabelRefs returns an error for a label an annotation of r reads
// that the expression cannot produce. It is approximate: a label counts
// as produced if some aggregation of the expression keeps it (by) or some
// vector matching names it (on), which is how the alerts here keep their
// labels, whereas a real aggregation without by would drop it.
func checkLabelRefs(r rule, e parser.Expr) error {
	kept := map[string]bool{}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.AggregateExpr:
			if !n.Without {
				for _, l := range n.Grouping {
					kept[l] = true
				}
			}
		case *parser.BinaryExpr:
			if m := n.VectorMatching; m != nil && m.On {
				for _, l := range m.MatchingLabels {
					kept[l] = true
				}
			}
		}
		return nil
	})
	for _, a := range slices.Sorted(maps.Keys(r.Annotations)) {
		for _, m := range labelRefRE.FindAllStringSubmatch(r.Annotations[a], -1) {
			if !kept[m[1]] {
				return fmt.Errorf("annotation %s reads label %s, which no aggregation of the expression keeps", a, m[1])
			}
		}
	}
	return nil
}

func TestCheckLabelRefs(t *testing.T) {
	for expr, ok := range map[string]bool{
		`sum by (instance, kind) (x) > 0`:          true,
		`sum(x) > 0`:                               false,
		`(a > 1) and on (instance, kind) (b == 1)`: true,
		`sum without (instance, kind) (x)`:         false,
	} {
		e, err := parseExpr(expr)
		if err != nil {
			t.Fatal(err)
		}
		r := rule{Alert: "A", Expr: expr, Annotations: map[string]string{"summary": "{{ $labels.kind }} on {{ $labels.instance }}"}}
		if err := checkLabelRefs(r, e); (err == nil) != ok {
			t.Errorf("checkLabelRefs(%q) = %v, want ok=%v", expr, err, ok)
		}
	}
}
