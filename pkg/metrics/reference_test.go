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
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// referenceDoc lists every metric with its type, labels and stability
// level, relative to repoRoot.
const referenceDoc = "docs/metrics.md"

// referenceRow is one row of the reference table.
type referenceRow struct {
	line      int
	name      string
	labels    []string
	kind      string
	stability string
}

// referenceMetricRE matches the first cell of a reference row: the name
// in backquotes, with its labels in braces if it has any.
var referenceMetricRE = regexp.MustCompile("^`(batch_scheduler_[a-z0-9_]*[a-z0-9])(?:\\{([a-z_,]*)\\})?`$")

// readReference parses the table of referenceDoc whose header is
// "| metric | type | stability | meaning |".
func readReference(t *testing.T) []referenceRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, referenceDoc))
	if err != nil {
		t.Fatal(err)
	}
	var rows []referenceRow
	in := false
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "| metric | type | stability | meaning |"):
			in = true
			continue
		case !in:
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		case strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Errorf("%s:%d: a row of fewer than 4 cells: %q", referenceDoc, i+1, line)
			continue
		}
		m := referenceMetricRE.FindStringSubmatch(strings.TrimSpace(cells[1]))
		if m == nil {
			t.Errorf("%s:%d: the first cell is not `batch_scheduler_<name>{<labels>}`: %q", referenceDoc, i+1, cells[1])
			continue
		}
		row := referenceRow{line: i + 1, name: m[1], kind: strings.TrimSpace(cells[2]), stability: strings.TrimSpace(cells[3])}
		if m[2] != "" {
			row.labels = strings.Split(m[2], ",")
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table with the header | metric | type | stability | meaning |", referenceDoc)
	}
	return rows
}

// TestMetricsReference keeps docs/metrics.md true: one row per registered
// metric, with its type, its labels in order and its stability level.
func TestMetricsReference(t *testing.T) {
	registered := registeredMetrics(t)
	seen := map[string]int{}
	for _, r := range readReference(t) {
		where := referenceDoc + ":" + strconv.Itoa(r.line)
		if prev, ok := seen[r.name]; ok {
			t.Errorf("%s: %s is already in the row of line %d", where, r.name, prev)
		}
		seen[r.name] = r.line
		m, ok := registered[r.name]
		if !ok {
			t.Errorf("%s: %s is not registered", where, r.name)
			continue
		}
		if r.kind != m.kind {
			t.Errorf("%s: %s is a %s, not a %s", where, r.name, m.kind, r.kind)
		}
		if !slices.Equal(r.labels, m.labels) {
			t.Errorf("%s: %s has the labels {%s}, not {%s}", where, r.name, strings.Join(m.labels, ","), strings.Join(r.labels, ","))
		}
		if r.stability != m.stability {
			t.Errorf("%s: %s is %s, not %s", where, r.name, m.stability, r.stability)
		}
	}
	for _, n := range sortedKeys(registered) {
		if _, ok := seen[n]; !ok {
			m := registered[n]
			cell := n
			if len(m.labels) > 0 {
				cell += "{" + strings.Join(m.labels, ",") + "}"
			}
			t.Errorf("%s has no row for %s; add | `%s` | %s | %s | ... |", referenceDoc, n, cell, m.kind, m.stability)
		}
	}
}

// stabilityNoteRE finds a metric named in backquotes and followed by its
// stability level in parentheses, as the documents write it in lists:
// "`batch_scheduler_pending_jobs{queue}` (BETA)".
var stabilityNoteRE = regexp.MustCompile("`(batch_scheduler_[a-z0-9_]*[a-z0-9])(?:\\{[^}`]*\\})?` \\((ALPHA|BETA|STABLE|INTERNAL)\\)")

// stabilityCellRE finds a table row whose first cell names a metric and
// that has a cell holding just a stability level.
var stabilityCellRE = regexp.MustCompile("^\\|\\s*`(batch_scheduler_[a-z0-9_]*[a-z0-9])(?:\\{[^}`]*\\})?`\\s*\\|.*\\|\\s*(ALPHA|BETA|STABLE|INTERNAL)\\s*\\|")

// TestStabilityNotes: wherever a document gives a metric's stability
// level, next to its name in a list or in a column of a table, it is the
// level the metric is registered with.
func TestStabilityNotes(t *testing.T) {
	registered := registeredMetrics(t)
	notes := 0
	for _, g := range docGlobs {
		paths, err := filepath.Glob(filepath.Join(repoRoot, g))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(repoRoot, p)
			for i, line := range strings.Split(string(data), "\n") {
				found := stabilityNoteRE.FindAllStringSubmatch(line, -1)
				if m := stabilityCellRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
					found = append(found, m)
				}
				for _, m := range found {
					notes++
					reg, ok := registered[m[1]]
					if !ok {
						continue // TestDocumentedMetricsExist reports it
					}
					if reg.stability != m[2] {
						t.Errorf("%s:%d: %s is %s, not %s", rel, i+1, m[1], reg.stability, m[2])
					}
				}
			}
		}
	}
	if notes < len(registered) {
		t.Errorf("only %d stability notes found in %v, fewer than the %d metrics the reference table alone lists: is the pattern broken?", notes, docGlobs, len(registered))
	}
}
