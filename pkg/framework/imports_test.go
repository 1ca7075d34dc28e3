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
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/batch-scheduler/batch-scheduler"

// repoRoot is the module's root: two directories above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}

// projectImports returns the project packages that the package at path
// imports, directly and through other project packages (tests excluded),
// each with the chain that leads to it.
func projectImports(t *testing.T, root, path string) map[string][]string {
	t.Helper()
	chains := map[string][]string{}
	var visit func(p string, chain []string)
	visit = func(p string, chain []string) {
		pkg, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(p, module)), 0)
		if err != nil {
			t.Fatalf("reading package %s: %v", p, err)
		}
		for _, imp := range pkg.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if _, seen := chains[imp]; seen {
				continue
			}
			next := append(slices.Clone(chain), imp)
			chains[imp] = next
			visit(imp, next)
		}
	}
	visit(path, []string{path})
	return chains
}

// packagesUnder lists the Go packages in the directory tree of path.
func packagesUnder(t *testing.T, root, path string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(root, strings.TrimPrefix(path, module)), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if _, err := build.ImportDir(p, 0); err != nil {
			return nil // no Go files that build
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, module+"/"+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The framework owns the types plugins use, and the cache builds on them,
// never the other way round: no plugin, no framework package and no event
// handler imports the cache, the scheduling queue or the scheduler (a
// handler knows the cache only through the contract in pkg/eventhandlers),
// the framework itself is a leaf, and only the command uses the cache's
// debugger.
func TestImportDirection(t *testing.T) {
	root := repoRoot(t)
	forbidden := []string{module + "/pkg/cache", module + "/pkg/schedulingqueue", module + "/pkg/scheduler", module + "/cmd"}
	var checked int
	for _, tree := range []string{module + "/pkg/framework", module + "/pkg/plugins", module + "/pkg/eventhandlers"} {
		for _, pkg := range packagesUnder(t, root, tree) {
			checked++
			for imp, chain := range projectImports(t, root, pkg) {
				for _, f := range forbidden {
					if imp == f || strings.HasPrefix(imp, f+"/") {
						t.Errorf("%s imports %s: %s", pkg, imp, strings.Join(chain, " -> "))
					}
				}
			}
		}
	}
	if checked < 12 {
		t.Errorf("checked %d packages; the walk is broken", checked)
	}
	// The cache's debugger is a tool the command serves, never part of
	// the scheduling path: nothing under pkg/ but itself imports it.
	dbg := module + "/pkg/cache/debugger"
	for _, pkg := range packagesUnder(t, root, module+"/pkg") {
		if pkg == dbg {
			continue
		}
		if chain, ok := projectImports(t, root, pkg)[dbg]; ok {
			t.Errorf("%s imports the cache's debugger: %s", pkg, strings.Join(chain, " -> "))
		}
	}
	leaf := module + "/pkg/framework"
	for imp := range projectImports(t, root, leaf) {
		if imp != module+"/pkg/resources" {
			t.Errorf("%s is a leaf but imports %s", leaf, imp)
		}
	}
}
