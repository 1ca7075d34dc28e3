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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// dashboard is the part of a Grafana dashboard model the tests read.
type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *datasourceRef  `json:"datasource"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	Datasource *datasourceRef `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
	// Panels are those of a collapsed row.
	Panels []panel `json:"panels"`
}

// minSchemaVersion is the oldest dashboard schema accepted: Grafana 9's.
const minSchemaVersion = 36

// datasourceUID is how panels name the data source: the datasource
// variable, so that the dashboard works with any Prometheus data source.
const datasourceUID = "${datasource}"

func readDashboard(t *testing.T) *dashboard {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(monitoringDir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	return &d
}

// allPanels returns the panels of d, those in collapsed rows included.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// TestDashboardQueries checks that every panel query parses once the
// template variables are substituted, names only exported metrics, and
// honours the job and instance variables.
func TestDashboardQueries(t *testing.T) {
	known := exported(t)
	d := readDashboard(t)
	queries := 0
	for _, p := range allPanels(d.Panels) {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			expr, err := substitute(tg.Expr)
			if err != nil {
				t.Errorf("panel %q, query %s: %v", p.Title, tg.RefID, err)
				continue
			}
			e, err := checkExpr(known, expr)
			if err != nil {
				t.Errorf("panel %q, query %s: %v", p.Title, tg.RefID, err)
				continue
			}
			if err := checkJobMatcher(e, jobName); err != nil {
				t.Errorf("panel %q, query %s: %v", p.Title, tg.RefID, err)
			}
			if err := checkInstanceMatcher(e); err != nil {
				t.Errorf("panel %q, query %s: %v", p.Title, tg.RefID, err)
			}
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no query")
	}
}

// checkInstanceMatcher returns an error for each selector of e that does
// not filter by the instance variable.
func checkInstanceMatcher(e parser.Expr) error {
	for _, vs := range selectors(e) {
		ok := false
		for _, m := range vs.LabelMatchers {
			ok = ok || (m.Name == "instance" && m.Type == labels.MatchRegexp && m.Value == grafanaVars["instance"])
		}
		if !ok {
			return fmt.Errorf("selector %s does not select instance=~\"$instance\"", vs)
		}
	}
	return nil
}

// variableQuery returns a query variable's query, which Grafana stores as
// a string or, since version 10, as an object with a query field.
func variableQuery(v variable) string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &o) == nil {
		return o.Query
	}
	return ""
}

// labelValuesRE matches a Grafana label_values(selector, label) query.
var labelValuesRE = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// TestDashboardModel checks the dashboard's frame: its schema, its
// variables (a Prometheus data source, the job and instance, each query
// naming exported metrics), and that every panel uses the data source
// variable, has a unique id and fits the 24-column grid.
func TestDashboardModel(t *testing.T) {
	known := exported(t)
	d := readDashboard(t)
	if d.SchemaVersion < minSchemaVersion {
		t.Errorf("schemaVersion %d, want at least %d", d.SchemaVersion, minSchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: want both, so that re-provisioning replaces the dashboard", d.UID, d.Title)
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
		if v.Type != "query" {
			continue
		}
		if v.Datasource == nil || v.Datasource.UID != datasourceUID {
			t.Errorf("variable %s: datasource %+v, want uid %s", v.Name, v.Datasource, datasourceUID)
		}
		q, err := substitute(v.Definition)
		if err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
			continue
		}
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
			continue
		}
		if got := variableQuery(v); got != v.Definition {
			t.Errorf("variable %s: query %q differs from its definition %q, which Grafana shows", v.Name, got, v.Definition)
		}
		e, err := parseExpr(m[1])
		if err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
			continue
		}
		if err := checkNames(known, selectors(e)); err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
		}
	}
	if ds, ok := vars["datasource"]; !ok || ds.Type != "datasource" || string(ds.Query) != `"prometheus"` {
		t.Errorf("variable datasource: %+v, want type datasource, query prometheus", ds)
	}
	for _, name := range []string{"job", "instance"} {
		if v, ok := vars[name]; !ok || v.Type != "query" {
			t.Errorf("variable %s: %+v, want a query variable", name, v)
		}
	}

	ids := map[int]string{}
	for _, p := range allPanels(d.Panels) {
		if other, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d, also %q's (or zero)", p.Title, p.ID, other)
		}
		ids[p.ID] = p.Title
		if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if p.Datasource == nil || p.Datasource.UID != datasourceUID {
			t.Errorf("panel %q: datasource %+v, want uid %s", p.Title, p.Datasource, datasourceUID)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != nil && tg.Datasource.UID != datasourceUID {
				t.Errorf("panel %q, query %s: datasource %+v, want uid %s", p.Title, tg.RefID, tg.Datasource, datasourceUID)
			}
		}
	}
}
