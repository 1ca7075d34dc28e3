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

package framework_test

import (
	"bufio"
	"go/build"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// importRow is one line of the import table of docs/architecture.md: a
// package (or, ending in "/...", a tree of packages) and the project
// packages it imports, by their short names (the path under pkg/; "apis"
// for pkg/apis/batchscheduler/v1alpha1).
type importRow struct {
	line    int
	path    string
	tree    bool
	imports []string
}

const apisPath = "pkg/apis/batchscheduler/v1alpha1"

var parenthetical = regexp.MustCompile(`\([^)]*\)`)

// readImportTable parses the code block under "### Import direction" in
// docs/architecture.md. Rows for cmd/ ("all of the above") are not
// checked and are left out.
func readImportTable(t *testing.T, root string) []importRow {
	t.Helper()
	path := filepath.Join(root, "docs", "architecture.md")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []importRow
	inSection, inBlock := false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "### "):
			inSection = line == "### Import direction"
			continue
		case !inSection:
			continue
		case strings.HasPrefix(line, "```"):
			if inBlock {
				return rows
			}
			inBlock = true
			continue
		case !inBlock || strings.TrimSpace(line) == "" || strings.HasPrefix(line, "cmd/"):
			continue
		}
		name, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		r := importRow{line: n, path: name}
		if p, ok := strings.CutSuffix(name, "/..."); ok {
			r.path, r.tree = p, true
		}
		for _, imp := range strings.Split(parenthetical.ReplaceAllString(rest, ""), ",") {
			if imp = strings.TrimSpace(imp); imp != "" && imp != "-" {
				r.imports = append(r.imports, imp)
			}
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("%s: no code block under \"### Import direction\"", path)
	return nil
}

// shortName names a project package as the import table does.
func shortName(pkg string) string {
	rel := strings.TrimPrefix(pkg, module+"/")
	if rel == apisPath {
		return "apis"
	}
	return strings.TrimPrefix(rel, "pkg/")
}

// The import table of docs/architecture.md is the truth: it has a row for
// every package under pkg/, and each row lists exactly the project
// packages that its package (or tree, counting only imports that leave
// the tree) imports directly.
func TestArchitectureImportTableIsTrue(t *testing.T) {
	root := repoRoot(t)
	rows := readImportTable(t, root)
	if len(rows) < 15 {
		t.Fatalf("read %d rows of the import table; the parser is broken", len(rows))
	}
	covered := map[string]int{}
	for _, r := range rows {
		var pkgs []string
		if r.tree {
			pkgs = packagesUnder(t, root, module+"/"+r.path)
		} else {
			pkgs = []string{module + "/" + r.path}
		}
		if len(pkgs) == 0 {
			t.Errorf("docs/architecture.md:%d: %s has no package", r.line, r.path)
		}
		got := map[string]bool{}
		for _, p := range pkgs {
			covered[p]++
			bp, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(p, module)), 0)
			if err != nil {
				t.Errorf("docs/architecture.md:%d: reading %s: %v", r.line, p, err)
				continue
			}
			for _, imp := range bp.Imports {
				if !strings.HasPrefix(imp, module+"/") {
					continue
				}
				if r.tree && (imp == module+"/"+r.path || strings.HasPrefix(imp, module+"/"+r.path+"/")) {
					continue
				}
				got[shortName(imp)] = true
			}
		}
		for _, want := range r.imports {
			if !got[want] {
				t.Errorf("docs/architecture.md:%d: %s does not import %s, which the table lists", r.line, r.path, want)
			}
			delete(got, want)
		}
		for _, extra := range slices.Sorted(maps.Keys(got)) {
			t.Errorf("docs/architecture.md:%d: %s imports %s, which the table does not list", r.line, r.path, extra)
		}
	}
	for _, p := range packagesUnder(t, root, module+"/pkg") {
		switch covered[p] {
		case 0:
			t.Errorf("docs/architecture.md: the import table has no row for %s", p)
		case 1:
		default:
			t.Errorf("docs/architecture.md: the import table has %d rows for %s", covered[p], p)
		}
	}
}

// Optional interfaces are named, so that the contract they widen can be
// read in one place (pkg/eventhandlers names the handler's and the
// cache's): no code under cmd/ or pkg/ asserts an anonymous interface.
func TestNoAnonymousInterfaceAssertions(t *testing.T) {
	root := repoRoot(t)
	files := 0
	for _, dir := range []string{"cmd", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			files++
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, ".(interface{") {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d asserts an anonymous interface; name it (optional interfaces of handlers and caches live in pkg/eventhandlers): %s",
						rel, i+1, strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("read %d Go files; the walk is broken", files)
	}
}
