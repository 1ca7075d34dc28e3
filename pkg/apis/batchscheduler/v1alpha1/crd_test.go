package v1alpha1

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestCRDsMatchTypes checks that deploy/crds describes the same fields as
// the Go types: every JSON field of spec/status is a schema property, and
// spec's required list is exactly the fields without omitempty.
func TestCRDsMatchTypes(t *testing.T) {
	tests := []struct {
		file, kind, plural string
		spec, status       any
	}{
		{"batch-scheduler.io_grants.yaml", "Grant", GrantsResource, GrantSpec{}, GrantStatus{}},
		{"batch-scheduler.io_externalworkloads.yaml", "ExternalWorkload", ExternalWorkloadsResource, ExternalWorkloadSpec{}, ExternalWorkloadStatus{}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "deploy", "crds", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var crd map[string]any
			if err := yaml.Unmarshal(raw, &crd); err != nil {
				t.Fatal(err)
			}
			get := func(m any, path ...string) any {
				for _, p := range path {
					mm, ok := m.(map[string]any)
					if !ok {
						t.Fatalf("%s: no %s", tt.file, strings.Join(path, "."))
					}
					m = mm[p]
				}
				return m
			}
			spec := get(crd, "spec")
			if got := get(spec, "group"); got != GroupName {
				t.Errorf("group %v, want %s", got, GroupName)
			}
			if got := get(spec, "names", "plural"); got != tt.plural {
				t.Errorf("plural %v, want %s", got, tt.plural)
			}
			if got := get(spec, "names", "kind"); got != tt.kind {
				t.Errorf("kind %v, want %s", got, tt.kind)
			}
			if got := get(crd, "metadata", "name"); got != Resource(tt.plural).String() {
				t.Errorf("name %v, want %s", got, Resource(tt.plural))
			}
			ver := get(spec, "versions").([]any)[0]
			if got := get(ver, "name"); got != Version {
				t.Errorf("version %v, want %s", got, Version)
			}
			props := get(ver, "schema", "openAPIV3Schema", "properties")
			for part, typ := range map[string]any{"spec": tt.spec, "status": tt.status} {
				fields, required := jsonFields(reflect.TypeOf(typ))
				schemaFields := keys(get(props, part, "properties").(map[string]any))
				if !reflect.DeepEqual(schemaFields, fields) {
					t.Errorf("%s properties %v, Go fields %v", part, schemaFields, fields)
				}
				var schemaReq []string
				if r, ok := get(props, part).(map[string]any)["required"].([]any); ok {
					for _, x := range r {
						schemaReq = append(schemaReq, x.(string))
					}
				}
				sort.Strings(schemaReq)
				if !reflect.DeepEqual(schemaReq, required) {
					t.Errorf("%s required %v, Go non-omitempty fields %v", part, schemaReq, required)
				}
			}
		})
	}
}

func jsonFields(t reflect.Type) (all, required []string) {
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, name)
		}
	}
	sort.Strings(all)
	sort.Strings(required)
	return all, required
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
