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

package defaulthandler_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1alpha1", Resource: "widgets"}

func meta(rv string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "ns", Name: "obj", ResourceVersion: rv}
}

func widget(rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1alpha1")
	u.SetKind("Widget")
	u.SetNamespace("ns")
	u.SetName("obj")
	u.SetResourceVersion(rv)
	return u
}

// kinds maps the suffix of each handler method ("Pod" in AddPod) to a
// valid object for it, and to a nil pointer of its type.
var kinds = map[string]struct {
	obj   func(rv string) any
	nilOf any
}{
	"Pod":                   {func(rv string) any { return pendingPod(rv).Obj() }, (*v1.Pod)(nil)},
	"Node":                  {func(rv string) any { return node1(rv).Obj() }, (*v1.Node)(nil)},
	"PersistentVolume":      {func(rv string) any { return &v1.PersistentVolume{ObjectMeta: meta(rv)} }, (*v1.PersistentVolume)(nil)},
	"PersistentVolumeClaim": {func(rv string) any { return &v1.PersistentVolumeClaim{ObjectMeta: meta(rv)} }, (*v1.PersistentVolumeClaim)(nil)},
	"StorageClass":          {func(rv string) any { return &storagev1.StorageClass{ObjectMeta: meta(rv)} }, (*storagev1.StorageClass)(nil)},
	"CSINode":               {func(rv string) any { return &storagev1.CSINode{ObjectMeta: meta(rv)} }, (*storagev1.CSINode)(nil)},
	"CSIDriver":             {func(rv string) any { return &storagev1.CSIDriver{ObjectMeta: meta(rv)} }, (*storagev1.CSIDriver)(nil)},
	"CSIStorageCapacity":    {func(rv string) any { return &storagev1.CSIStorageCapacity{ObjectMeta: meta(rv)} }, (*storagev1.CSIStorageCapacity)(nil)},
	"PriorityClass":         {func(rv string) any { return &schedulingv1.PriorityClass{ObjectMeta: meta(rv)} }, (*schedulingv1.PriorityClass)(nil)},
	"Dynamic":               {func(rv string) any { return widget(rv) }, (*unstructured.Unstructured)(nil)},
}

// call invokes h's method named method, passing gvr first to the Dynamic
// ones.
func call(h any, method string, objs ...any) {
	m := reflect.ValueOf(h).MethodByName(method)
	var args []reflect.Value
	if strings.HasSuffix(method, "Dynamic") {
		args = append(args, reflect.ValueOf(widgets))
	}
	for _, o := range objs {
		if o == nil {
			args = append(args, reflect.Zero(reflect.TypeFor[any]()))
		} else {
			args = append(args, reflect.ValueOf(o))
		}
	}
	m.Call(args)
}

func TestResourceEvents(t *testing.T) {
	resources := []struct {
		kind     string
		resource framework.EventResource
		labelled bool
	}{
		{"PersistentVolume", framework.PersistentVolume, true},
		{"PersistentVolumeClaim", framework.PersistentVolumeClaim, true},
		{"StorageClass", framework.StorageClass, true},
		{"CSINode", framework.CSINode, true},
		{"CSIDriver", framework.CSIDriver, true},
		{"CSIStorageCapacity", framework.CSIStorageCapacity, true},
		{"PriorityClass", framework.PriorityClass, true},
		{"Dynamic", "widgets.v1alpha1.example.com", false},
	}
	for _, r := range resources {
		obj := kinds[r.kind].obj
		event := func(a framework.ActionType, label string) framework.ClusterEvent {
			e := framework.ClusterEvent{Resource: r.resource, ActionType: a}
			if r.labelled {
				e.Label = r.kind + label
			}
			return e
		}
		tests := []struct {
			name   string
			method string
			objs   []any
			want   []framework.ClusterEvent
		}{
			{"add", "Add", []any{obj("1")}, []framework.ClusterEvent{event(framework.Add, "Add")}},
			{"update", "Update", []any{obj("1"), obj("2")}, []framework.ClusterEvent{event(framework.UpdateGeneric, "Update")}},
			{"update without resourceVersion", "Update", []any{obj(""), obj("")}, []framework.ClusterEvent{event(framework.UpdateGeneric, "Update")}},
			{"resync", "Update", []any{obj("1"), obj("1")}, nil},
			{"delete", "Delete", []any{obj("1")}, []framework.ClusterEvent{event(framework.Delete, "Delete")}},
			{"delete tombstone", "Delete", []any{tombstone(obj("1"))}, []framework.ClusterEvent{event(framework.Delete, "Delete")}},
		}
		t.Run(r.kind, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					h, fc := newHandler(t)
					call(h, tt.method+r.kind, tt.objs...)
					var got []framework.ClusterEvent
					for _, m := range fc.Moves() {
						if m.OldObj == nil && m.NewObj == nil {
							t.Errorf("%v raised without its objects", m.Event)
						}
						got = append(got, m.Event)
					}
					if !slices.Equal(got, tt.want) {
						t.Errorf("events = %+v, want %+v", got, tt.want)
					}
					if len(fc.Calls()) != len(tt.want) {
						t.Errorf("calls = %q, want only MoveAll", fc.Calls())
					}
				})
			}
		})
	}
}

// Dynamic events name the resource they were delivered for.
func TestDynamicEventsNameTheirResource(t *testing.T) {
	h, fc := newHandler(t)
	gadgets := schema.GroupVersionResource{Group: "gadgets.example.org", Version: "v2", Resource: "gadgets"}
	h.AddDynamic(gadgets, widget("1"))
	h.UpdateDynamic(gadgets, widget("1"), widget("2"))
	h.DeleteDynamic(gadgets, widget("2"))
	want := []string{
		"MoveAll gadgets.v2.gadgets.example.org/Add",
		"MoveAll gadgets.v2.gadgets.example.org/Update",
		"MoveAll gadgets.v2.gadgets.example.org/Delete",
	}
	if d := diffCalls(fc.Calls(), want); d != "" {
		t.Error(d)
	}
}

// Every method of the handler Interface logs and ignores objects of the
// wrong type: it neither panics nor calls the cache.
func TestWrongTypesAreIgnored(t *testing.T) {
	iface := reflect.TypeFor[eventhandlers.Interface]()
	if iface.NumMethod() != 3*len(kinds) {
		t.Fatalf("Interface has %d methods, the test knows %d kinds of object; update kinds", iface.NumMethod(), len(kinds))
	}
	for i := range iface.NumMethod() {
		method := iface.Method(i).Name
		verb, kind := splitMethod(method)
		k, ok := kinds[kind]
		if !ok {
			t.Fatalf("no test object for method %s", method)
		}
		// An object of another kind: a ConfigMap is handled by no method.
		otherKind := &v1.ConfigMap{ObjectMeta: meta("1")}
		wrongs := map[string]any{
			"nil":                         nil,
			"string":                      "not an object",
			"value instead of pointer":    *st.MakePod().Name("p").Obj(),
			"other kind":                  otherKind,
			"nil pointer":                 k.nilOf,
			"tombstone of another kind":   tombstone(otherKind),
			"tombstone of nothing":        tombstone(nil),
			"tombstone of a nil pointer":  tombstone(k.nilOf),
			"pointer to tombstone":        &tombstoneOfPod,
			"unstructured for typed kind": widget("1"),
		}
		if kind == "Dynamic" {
			wrongs["unstructured for typed kind"] = &v1.Pod{}
		}
		t.Run(method, func(t *testing.T) {
			for name, wrong := range wrongs {
				t.Run(name, func(t *testing.T) {
					var argLists [][]any
					if verb == "Update" {
						argLists = [][]any{{wrong, k.obj("2")}, {k.obj("1"), wrong}, {wrong, wrong}}
					} else {
						argLists = [][]any{{wrong}}
					}
					for _, args := range argLists {
						h, fc := newHandler(t)
						func() {
							defer func() {
								if r := recover(); r != nil {
									t.Errorf("%s(%s) panicked: %v", method, describe(args), r)
								}
							}()
							call(h, method, args...)
						}()
						if calls := fc.Calls(); len(calls) > 0 {
							t.Errorf("%s(%s) called the cache: %q", method, describe(args), calls)
						}
					}
				})
			}
		})
	}
}

var tombstoneOfPod = tombstone(&v1.Pod{})

func splitMethod(method string) (verb, kind string) {
	for _, v := range []string{"Add", "Update", "Delete"} {
		if rest, ok := strings.CutPrefix(method, v); ok {
			return v, rest
		}
	}
	return "", method
}

func describe(args []any) string {
	var parts []string
	for _, a := range args {
		parts = append(parts, fmt.Sprintf("%T", a))
	}
	return strings.Join(parts, ", ")
}
