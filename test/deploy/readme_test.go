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

package deploy

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmePermissions parses the permission table of deploy/README.md's
// "Permissions" section. A row's first cell is "<verbs> `<resource>[/<sub>][.<group>]`, ...
// [named `<name>`]" and its second "cluster" or "`<namespace>`"; a row
// about a built-in role is left out (TestRBACRulesMatchCode checks the
// bindings).
func readmePermissions(readme string) ([]permission, error) {
	_, section, ok := strings.Cut(readme, "\n## Permissions\n")
	if !ok {
		return nil, fmt.Errorf("no \"## Permissions\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	quoted := regexp.MustCompile("`([^`]+)`")
	var out []permission
	rows := 0
	for i, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if !strings.HasPrefix(strings.TrimSpace(line), "|") || len(cells) < 3 {
			continue
		}
		first, where := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1])
		if first == "permission" || strings.HasPrefix(first, "---") || strings.HasPrefix(first, "the built-in ") {
			continue
		}
		rows++
		verbPart, rest, ok := strings.Cut(first, "`")
		if !ok {
			return nil, fmt.Errorf("line %d of the section: %q names no resource", i+1, first)
		}
		rest = "`" + rest
		name := ""
		if before, n, found := strings.Cut(rest, " named "); found {
			m := quoted.FindStringSubmatch(n)
			if m == nil {
				return nil, fmt.Errorf("line %d of the section: %q: a name must be quoted", i+1, first)
			}
			rest, name = before, m[1]
		}
		namespace := ""
		switch {
		case where == "cluster":
		case quoted.MatchString(where):
			namespace = quoted.FindStringSubmatch(where)[1]
		default:
			return nil, fmt.Errorf("line %d of the section: where %q is neither \"cluster\" nor a quoted namespace", i+1, where)
		}
		var verbs []string
		for _, v := range strings.Split(verbPart, ",") {
			if v = strings.TrimSpace(v); v != "" {
				verbs = append(verbs, v)
			}
		}
		if len(verbs) == 0 {
			return nil, fmt.Errorf("line %d of the section: %q names no verb", i+1, first)
		}
		for _, m := range quoted.FindAllStringSubmatch(rest, -1) {
			res, group, _ := strings.Cut(m[1], ".")
			res, sub, _ := strings.Cut(res, "/")
			for _, v := range verbs {
				out = append(out, permission{Group: group, Resource: res, Subresource: sub, Verb: v, Namespace: namespace, Name: name})
			}
		}
	}
	if rows == 0 {
		return nil, fmt.Errorf("the section has no permission table")
	}
	return out, nil
}

// TestReadmePermissionTable keeps deploy/README.md's permission table and
// rbac.yaml in step: every permission the manifests grant the
// ServiceAccount through their own roles is in the table, and nothing
// else.
func TestReadmePermissionTable(t *testing.T) {
	data, err := os.ReadFile("../../deploy/README.md")
	if err != nil {
		t.Fatal(err)
	}
	table, err := readmePermissions(string(data))
	if err != nil {
		t.Fatalf("deploy/README.md: %v", err)
	}
	perms, _ := granted(t)
	comparePermissionSets(t, table, perms, "deploy/README.md's permission table lacks %s, which rbac.yaml grants",
		"deploy/README.md's permission table lists %s, which rbac.yaml does not grant")
}

// TestReadmePermissionsParser shows the parser reads what the table says,
// so that TestReadmePermissionTable can fail.
func TestReadmePermissionsParser(t *testing.T) {
	doc := "# x\n\n## Permissions\n\n| permission | where | why |\n|---|---|---|\n" +
		"| list, watch `pods`, `queues.batch-scheduler.io` | cluster | a |\n" +
		"| patch `podgroups/status.scheduling.k8s.io` | cluster | b |\n" +
		"| get `leases.coordination.k8s.io` named `lock` | `kube-system` | c |\n" +
		"| the built-in Role `r` | `kube-system` | d |\n\n## Next\n| create `secrets` | cluster | e |\n"
	got, err := readmePermissions(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []permission{
		{Resource: "pods", Verb: "list"}, {Group: "batch-scheduler.io", Resource: "queues", Verb: "list"},
		{Resource: "pods", Verb: "watch"}, {Group: "batch-scheduler.io", Resource: "queues", Verb: "watch"},
		{Group: "scheduling.k8s.io", Resource: "podgroups", Subresource: "status", Verb: "patch"},
		{Group: "coordination.k8s.io", Resource: "leases", Verb: "get", Namespace: "kube-system", Name: "lock"},
	}
	slices.SortFunc(got, comparePermissions)
	slices.SortFunc(want, comparePermissions)
	if !slices.Equal(got, want) {
		t.Errorf("parsed\n %v\nwant\n %v", got, want)
	}
	if _, err := readmePermissions("# x\n\n## Permissions\n\n| list `pods` | somewhere | a |\n"); err == nil {
		t.Error("a row whose scope is neither cluster nor a namespace was accepted")
	}
}
