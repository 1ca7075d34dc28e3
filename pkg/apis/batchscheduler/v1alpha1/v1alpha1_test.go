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

package v1alpha1

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func sampleGrant() *Grant {
	exp := metav1.NewTime(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	return &Grant{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "Grant"},
		ObjectMeta: metav1.ObjectMeta{Name: "g1", Labels: map[string]string{"a": "b"}},
		Spec: GrantSpec{
			Framework: "spark",
			NodeName:  "node-1",
			Resources: v1.ResourceList{
				v1.ResourceCPU:    resource.MustParse("4"),
				v1.ResourceMemory: resource.MustParse("8Gi"),
			},
			ExpiresAt: &exp,
			Issuer:    "mesos-master",
		},
		Status: GrantStatus{Phase: GrantActive, Message: "ok"},
	}
}

func sampleWorkload() *ExternalWorkload {
	return &ExternalWorkload{
		TypeMeta:   metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "ExternalWorkload"},
		ObjectMeta: metav1.ObjectMeta{Name: "vm-1", Labels: map[string]string{"a": "b"}},
		Spec: ExternalWorkloadSpec{
			NodeName:     "node-1",
			Resources:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")},
			WorkloadKind: "vm",
			Owner:        "team-a",
		},
		Status: ExternalWorkloadStatus{Phase: ExternalWorkloadRunning, Message: "up"},
	}
}

func TestDeepCopyIndependence(t *testing.T) {
	tests := []struct {
		name   string
		orig   runtime.Object
		mutate func(runtime.Object)
	}{
		{"Grant resources map", sampleGrant(), func(o runtime.Object) {
			o.(*Grant).Spec.Resources[v1.ResourceCPU] = resource.MustParse("99")
		}},
		{"Grant resources quantity in place", sampleGrant(), func(o runtime.Object) {
			q := o.(*Grant).Spec.Resources[v1.ResourceMemory]
			q.Add(resource.MustParse("1Gi"))
			o.(*Grant).Spec.Resources[v1.ResourceMemory] = q
		}},
		{"Grant expiresAt pointer", sampleGrant(), func(o runtime.Object) {
			o.(*Grant).Spec.ExpiresAt.Time = time.Unix(0, 0)
		}},
		{"Grant labels", sampleGrant(), func(o runtime.Object) {
			o.(*Grant).Labels["a"] = "changed"
		}},
		{"Grant status", sampleGrant(), func(o runtime.Object) {
			o.(*Grant).Status.Phase = GrantRevoked
		}},
		{"GrantList item resources", &GrantList{Items: []Grant{*sampleGrant()}}, func(o runtime.Object) {
			o.(*GrantList).Items[0].Spec.Resources[v1.ResourceCPU] = resource.MustParse("99")
		}},
		{"GrantList item expiresAt", &GrantList{Items: []Grant{*sampleGrant()}}, func(o runtime.Object) {
			o.(*GrantList).Items[0].Spec.ExpiresAt.Time = time.Unix(0, 0)
		}},
		{"GrantList items slice", &GrantList{Items: []Grant{*sampleGrant()}}, func(o runtime.Object) {
			o.(*GrantList).Items[0].Name = "other"
		}},
		{"ExternalWorkload resources map", sampleWorkload(), func(o runtime.Object) {
			o.(*ExternalWorkload).Spec.Resources[v1.ResourceMemory] = resource.MustParse("1Gi")
		}},
		{"ExternalWorkload labels", sampleWorkload(), func(o runtime.Object) {
			o.(*ExternalWorkload).Labels["a"] = "changed"
		}},
		{"ExternalWorkload status", sampleWorkload(), func(o runtime.Object) {
			o.(*ExternalWorkload).Status.Phase = ExternalWorkloadStopped
		}},
		{"ExternalWorkloadList item resources", &ExternalWorkloadList{Items: []ExternalWorkload{*sampleWorkload()}}, func(o runtime.Object) {
			o.(*ExternalWorkloadList).Items[0].Spec.Resources[v1.ResourceCPU] = resource.MustParse("7")
		}},
		{"ExternalWorkloadList items slice", &ExternalWorkloadList{Items: []ExternalWorkload{*sampleWorkload()}}, func(o runtime.Object) {
			o.(*ExternalWorkloadList).Items[0].Spec.Owner = "other"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A second, independent deep copy of the original is the reference:
			// comparing against it catches a copy that shares memory.
			cp := tt.orig.DeepCopyObject()
			if !reflect.DeepEqual(cp, tt.orig) {
				t.Fatalf("copy differs from original before mutation:\n%#v\n%#v", cp, tt.orig)
			}
			want := snapshot(t, tt.orig)
			tt.mutate(cp)
			if reflect.DeepEqual(cp, tt.orig) {
				t.Fatalf("mutation had no visible effect on the copy; test is vacuous")
			}
			if got := snapshot(t, tt.orig); got != want {
				t.Errorf("mutating the copy changed the original:\nbefore %s\nafter  %s", want, got)
			}
		})
	}
}

// snapshot serialises obj so later shared-memory mutation can be detected.
func snapshot(t *testing.T, obj runtime.Object) string {
	t.Helper()
	var buf bytes.Buffer
	if err := newSerializer(t).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestDeepCopyNil(t *testing.T) {
	var g *Grant
	var gl *GrantList
	var w *ExternalWorkload
	var wl *ExternalWorkloadList
	if g.DeepCopy() != nil || gl.DeepCopy() != nil || w.DeepCopy() != nil || wl.DeepCopy() != nil {
		t.Fatal("DeepCopy of nil must be nil")
	}
	if g.DeepCopyObject() != nil {
		t.Fatal("DeepCopyObject of a nil *Grant must be a nil interface")
	}
	c := (&Grant{}).DeepCopy()
	if c.Spec.Resources != nil || c.Spec.ExpiresAt != nil {
		t.Fatal("nil map/pointer must stay nil in the copy")
	}
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func newSerializer(t *testing.T) *json.Serializer {
	s := newScheme(t)
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s, json.SerializerOptions{})
}

func TestSchemeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
	}{
		{"Grant", sampleGrant()},
		{"Grant without expiry", func() runtime.Object { g := sampleGrant(); g.Spec.ExpiresAt = nil; return g }()},
		{"GrantList", &GrantList{
			TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "GrantList"},
			Items:    []Grant{*sampleGrant()},
		}},
		{"ExternalWorkload", sampleWorkload()},
		{"ExternalWorkloadList", &ExternalWorkloadList{
			TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: "ExternalWorkloadList"},
			Items:    []ExternalWorkload{*sampleWorkload()},
		}},
	}
	ser := newSerializer(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := ser.Encode(tt.obj, &buf); err != nil {
				t.Fatal(err)
			}
			got, gvk, err := ser.Decode(buf.Bytes(), nil, nil)
			if err != nil {
				t.Fatalf("decode %s: %v", buf.String(), err)
			}
			if gvk.GroupVersion() != SchemeGroupVersion {
				t.Errorf("decoded group/version %v, want %v", gvk.GroupVersion(), SchemeGroupVersion)
			}
			// Quantities cache their string form once encoded; compare
			// canonical encodings as well as the structs.
			var again bytes.Buffer
			if err := ser.Encode(got, &again); err != nil {
				t.Fatal(err)
			}
			if again.String() != buf.String() {
				t.Errorf("re-encoding differs:\n%s\n%s", buf.String(), again.String())
			}
			if !semanticEqual(tt.obj, got) {
				t.Errorf("round trip changed the object:\nwant %#v\ngot  %#v", tt.obj, got)
			}
		})
	}
}

// semanticEqual compares objects with Quantity compared by value (a decoded
// Quantity carries a cached string the original may lack).
func semanticEqual(a, b runtime.Object) bool {
	return equality.Semantic.DeepEqual(a, b)
}

func TestResource(t *testing.T) {
	if got := Resource(GrantsResource).String(); got != "grants.batch-scheduler.io" {
		t.Errorf("Resource(grants) = %q", got)
	}
	if got := Resource(ExternalWorkloadsResource).String(); got != "externalworkloads.batch-scheduler.io" {
		t.Errorf("Resource(externalworkloads) = %q", got)
	}
	s := newScheme(t)
	for _, k := range []string{"Grant", "GrantList", "ExternalWorkload", "ExternalWorkloadList"} {
		if !s.Recognizes(SchemeGroupVersion.WithKind(k)) {
			t.Errorf("scheme does not recognise %s", k)
		}
	}
}

func TestValidateGrant(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Grant)
		fields []string // expected error field paths; empty means valid
	}{
		{"valid", func(*Grant) {}, nil},
		{"valid without expiry or status", func(g *Grant) { g.Spec.ExpiresAt = nil; g.Status = GrantStatus{} }, nil},
		{"missing nodeName", func(g *Grant) { g.Spec.NodeName = "" }, []string{"spec.nodeName"}},
		{"nodeName not DNS subdomain", func(g *Grant) { g.Spec.NodeName = "Node_1" }, []string{"spec.nodeName"}},
		{"negative resource", func(g *Grant) { g.Spec.Resources[v1.ResourceCPU] = resource.MustParse("-1") },
			[]string{"spec.resources[cpu]"}},
		{"MaxResources resources", func(g *Grant) { g.Spec.Resources = manyResources(MaxResources) }, nil},
		{"too many resources", func(g *Grant) { g.Spec.Resources = manyResources(MaxResources + 1) },
			[]string{"spec.resources"}},
		{"empty resource name", func(g *Grant) { g.Spec.Resources[""] = resource.MustParse("1") },
			[]string{"spec.resources[]"}},
		{"missing framework", func(g *Grant) { g.Spec.Framework = "" }, []string{"spec.framework"}},
		{"missing issuer", func(g *Grant) { g.Spec.Issuer = "" }, []string{"spec.issuer"}},
		{"bad phase", func(g *Grant) { g.Status.Phase = "Sleeping" }, []string{"status.phase"}},
		{"several", func(g *Grant) { g.Spec.NodeName = ""; g.Spec.Issuer = "" }, []string{"spec.nodeName", "spec.issuer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := sampleGrant()
			tt.mutate(g)
			checkFields(t, ValidateGrant(g).ToAggregate(), fieldsOf(ValidateGrant(g)), tt.fields)
		})
	}
}

func TestValidateExternalWorkload(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*ExternalWorkload)
		fields []string
	}{
		{"valid", func(*ExternalWorkload) {}, nil},
		{"missing nodeName", func(w *ExternalWorkload) { w.Spec.NodeName = "" }, []string{"spec.nodeName"}},
		{"nodeName too long", func(w *ExternalWorkload) { w.Spec.NodeName = strings.Repeat("a", 254) }, []string{"spec.nodeName"}},
		{"negative memory", func(w *ExternalWorkload) { w.Spec.Resources[v1.ResourceMemory] = resource.MustParse("-1Gi") },
			[]string{"spec.resources[memory]"}},
		{"too many resources", func(w *ExternalWorkload) { w.Spec.Resources = manyResources(MaxResources + 1) },
			[]string{"spec.resources"}},
		{"no resources", func(w *ExternalWorkload) { w.Spec.Resources = nil }, nil},
		{"missing workloadKind", func(w *ExternalWorkload) { w.Spec.WorkloadKind = "" }, []string{"spec.workloadKind"}},
		{"bad phase", func(w *ExternalWorkload) { w.Status.Phase = "Active" }, []string{"status.phase"}},
		{"owner optional", func(w *ExternalWorkload) { w.Spec.Owner = "" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := sampleWorkload()
			tt.mutate(w)
			errs := ValidateExternalWorkload(w)
			checkFields(t, errs.ToAggregate(), fieldsOf(errs), tt.fields)
		})
	}
}

// manyResources returns n resources (example.com/r-0, ...) of 1 each.
func manyResources(n int) v1.ResourceList {
	rl := v1.ResourceList{}
	for i := range n {
		rl[v1.ResourceName(fmt.Sprintf("example.com/r-%d", i))] = resource.MustParse("1")
	}
	return rl
}

func fieldsOf(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func checkFields(t *testing.T, agg error, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("error fields = %v, want %v (errors: %v)", got, want, agg)
	}
	if agg != nil {
		for _, f := range want {
			if !strings.Contains(agg.Error(), f) {
				t.Errorf("error message %q does not name %s", agg.Error(), f)
			}
		}
	}
}

func TestValidateNil(t *testing.T) {
	if len(ValidateGrant(nil)) == 0 || len(ValidateExternalWorkload(nil)) == 0 {
		t.Fatal("nil objects must not validate")
	}
}
