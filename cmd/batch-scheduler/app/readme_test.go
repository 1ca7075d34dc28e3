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

package app

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// readmeFlagRow is one row of README.md's flag table: the flags and the
// --help sections its first cell names.
type readmeFlagRow struct {
	line     int
	flags    []string // names without dashes; "v" for -v
	sections []string
}

var (
	// A flag in the first cell: `--name` or `-x`.
	readmeFlag = regexp.MustCompile("`(--?[a-z0-9][a-z0-9-]*)`")
	// A whole --help section in the first cell: *secure serving*.
	readmeSection = regexp.MustCompile(`\*([a-z][a-z ]*)\*`)
)

// readmeFlagTable parses the table whose header is "| flag | default |
// meaning |".
func readmeFlagTable(t *testing.T, path string) []readmeFlagRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []readmeFlagRow
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "| flag |"):
			if in || rows != nil {
				t.Fatalf("%s:%d: a second flag table", path, n)
			}
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
		first := strings.Split(line, "|")[1]
		row := readmeFlagRow{line: n}
		for _, m := range readmeFlag.FindAllStringSubmatch(first, -1) {
			row.flags = append(row.flags, strings.TrimLeft(m[1], "-"))
		}
		for _, m := range readmeSection.FindAllStringSubmatch(first, -1) {
			row.sections = append(row.sections, m[1])
		}
		if len(row.flags) == 0 && len(row.sections) == 0 {
			t.Errorf("%s:%d: the first cell names no `--flag` and no *section*: %q", path, n, first)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table with the header | flag | default | meaning |", path)
	}
	return rows
}

// README.md's flag table must stay true: every flag it names exists, every
// --help section it names exists, each flag is named once, and every
// visible flag of the command is named or belongs to a named section.
func TestReadmeFlagTable(t *testing.T) {
	rows := readmeFlagTable(t, "../../../README.md")

	cmd := NewSchedulerCommand()
	fss := NewOptions().Flags(nil)
	sectionOf := map[string]string{}
	for name, fs := range fss.FlagSets {
		fs.VisitAll(func(f *pflag.Flag) { sectionOf[f.Name] = name })
	}

	named := map[string]int{} // flag name -> README line
	sections := map[string]bool{}
	for _, r := range rows {
		for _, name := range r.flags {
			f := cmd.Flags().Lookup(name)
			if f == nil && len(name) == 1 {
				f = cmd.Flags().ShorthandLookup(name)
			}
			if f == nil {
				t.Errorf("README.md:%d: the command has no flag %q", r.line, name)
				continue
			}
			if prev, ok := named[f.Name]; ok {
				t.Errorf("README.md:%d: --%s is already in the row of line %d", r.line, f.Name, prev)
			}
			named[f.Name] = r.line
		}
		for _, s := range r.sections {
			if !slices.Contains(fss.Order, s) {
				t.Errorf("README.md:%d: --help has no section %q (sections: %s)", r.line, s, strings.Join(fss.Order, ", "))
			}
			sections[s] = true
		}
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if _, ok := named[f.Name]; ok || sections[sectionOf[f.Name]] {
			return
		}
		t.Errorf("README.md's flag table has no row for --%s (section %q of --help): name it, or its whole section", f.Name, sectionOf[f.Name])
	})
}
