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

package informerhost

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// methodHandler records which method was called, as "Method" or
// "Method gvr" for dynamic ones.
type methodHandler struct {
	nopHandler
	called []string
}

func (h *methodHandler) AddPod(any)              { h.called = append(h.called, "AddPod") }
func (h *methodHandler) UpdatePod(any, any)      { h.called = append(h.called, "UpdatePod") }
func (h *methodHandler) DeletePod(any)           { h.called = append(h.called, "DeletePod") }
func (h *methodHandler) AddNode(any)             { h.called = append(h.called, "AddNode") }
func (h *methodHandler) UpdateNode(any, any)     { h.called = append(h.called, "UpdateNode") }
func (h *methodHandler) DeleteNode(any)          { h.called = append(h.called, "DeleteNode") }
func (h *methodHandler) AddPersistentVolume(any) { h.called = append(h.called, "AddPersistentVolume") }
func (h *methodHandler) UpdatePersistentVolume(any, any) {
	h.called = append(h.called, "UpdatePersistentVolume")
}
func (h *methodHandler) DeletePersistentVolume(any) {
	h.called = append(h.called, "DeletePersistentVolume")
}
func (h *methodHandler) AddPersistentVolumeClaim(any) {
	h.called = append(h.called, "AddPersistentVolumeClaim")
}
func (h *methodHandler) UpdatePersistentVolumeClaim(any, any) {
	h.called = append(h.called, "UpdatePersistentVolumeClaim")
}
func (h *methodHandler) DeletePersistentVolumeClaim(any) {
	h.called = append(h.called, "DeletePersistentVolumeClaim")
}
func (h *methodHandler) AddStorageClass(any) { h.called = append(h.called, "AddStorageClass") }
func (h *methodHandler) UpdateStorageClass(any, any) {
	h.called = append(h.called, "UpdateStorageClass")
}
func (h *methodHandler) DeleteStorageClass(any)   { h.called = append(h.called, "DeleteStorageClass") }
func (h *methodHandler) AddCSINode(any)           { h.called = append(h.called, "AddCSINode") }
func (h *methodHandler) UpdateCSINode(any, any)   { h.called = append(h.called, "UpdateCSINode") }
func (h *methodHandler) DeleteCSINode(any)        { h.called = append(h.called, "DeleteCSINode") }
func (h *methodHandler) AddCSIDriver(any)         { h.called = append(h.called, "AddCSIDriver") }
func (h *methodHandler) UpdateCSIDriver(any, any) { h.called = append(h.called, "UpdateCSIDriver") }
func (h *methodHandler) DeleteCSIDriver(any)      { h.called = append(h.called, "DeleteCSIDriver") }
func (h *methodHandler) AddCSIStorageCapacity(any) {
	h.called = append(h.called, "AddCSIStorageCapacity")
}
func (h *methodHandler) UpdateCSIStorageCapacity(any, any) {
	h.called = append(h.called, "UpdateCSIStorageCapacity")
}
func (h *methodHandler) DeleteCSIStorageCapacity(any) {
	h.called = append(h.called, "DeleteCSIStorageCapacity")
}
func (h *methodHandler) AddPriorityClass(any) { h.called = append(h.called, "AddPriorityClass") }
func (h *methodHandler) UpdatePriorityClass(any, any) {
	h.called = append(h.called, "UpdatePriorityClass")
}
func (h *methodHandler) DeletePriorityClass(any) { h.called = append(h.called, "DeletePriorityClass") }
func (h *methodHandler) AddDynamic(gvr schema.GroupVersionResource, _ any) {
	h.called = append(h.called, "AddDynamic "+gvr.String())
}
func (h *methodHandler) UpdateDynamic(gvr schema.GroupVersionResource, _, _ any) {
	h.called = append(h.called, "UpdateDynamic "+gvr.String())
}
func (h *methodHandler) DeleteDynamic(gvr schema.GroupVersionResource, _ any) {
	h.called = append(h.called, "DeleteDynamic "+gvr.String())
}

func TestDispatchTable(t *testing.T) {
	tests := []struct {
		resource framework.EventResource
		want     string
	}{
		{framework.Pod, "AddPod UpdatePod DeletePod"},
		{framework.Node, "AddNode UpdateNode DeleteNode"},
		{framework.PersistentVolume, "AddPersistentVolume UpdatePersistentVolume DeletePersistentVolume"},
		{framework.PersistentVolumeClaim, "AddPersistentVolumeClaim UpdatePersistentVolumeClaim DeletePersistentVolumeClaim"},
		{framework.StorageClass, "AddStorageClass UpdateStorageClass DeleteStorageClass"},
		{framework.CSINode, "AddCSINode UpdateCSINode DeleteCSINode"},
		{framework.CSIDriver, "AddCSIDriver UpdateCSIDriver DeleteCSIDriver"},
		{framework.CSIStorageCapacity, "AddCSIStorageCapacity UpdateCSIStorageCapacity DeleteCSIStorageCapacity"},
		{framework.PriorityClass, "AddPriorityClass UpdatePriorityClass DeletePriorityClass"},
		{"widgets.v1.example.com", "AddDynamic example.com/v1, Resource=widgets UpdateDynamic example.com/v1, Resource=widgets DeleteDynamic example.com/v1, Resource=widgets"},
	}
	if len(nativeMethods)+1 != len(tests) {
		t.Fatalf("the dispatch table has %d native resources; this test covers %d", len(nativeMethods), len(tests)-1)
	}
	for _, tt := range tests {
		t.Run(string(tt.resource), func(t *testing.T) {
			m := newMetrics(t)
			h := &methodHandler{}
			funcs, err := NewDispatchers(m).Handler(h, tt.resource)
			if err != nil {
				t.Fatalf("Handler: %v", err)
			}
			obj := st.MakePod().Name("p").Obj()
			funcs.OnAdd(obj, false)
			funcs.OnUpdate(obj, obj)
			funcs.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "default/p", Obj: obj})
			if got := strings.Join(h.called, " "); got != tt.want {
				t.Errorf("called %q, want %q", got, tt.want)
			}
			for _, event := range []string{EventAdd, EventUpdate, EventDelete} {
				if got := metricstest.CounterValue(t, m.EventsHandled.WithLabelValues(string(tt.resource), event)); got != 1 {
					t.Errorf("events_handled_total{%s,%s} = %v, want 1", tt.resource, event, got)
				}
			}
		})
	}
}

// panicHandler panics in every pod method.
type panicHandler struct{ nopHandler }

func (panicHandler) AddPod(any)         { panic("add") }
func (panicHandler) UpdatePod(any, any) { panic("update") }
func (panicHandler) DeletePod(any)      { panic(fmt.Errorf("delete")) }

func TestDispatchRecoversEveryEvent(t *testing.T) {
	m := newMetrics(t)
	funcs, err := NewDispatchers(m).Handler(panicHandler{}, framework.Pod)
	if err != nil {
		t.Fatalf("Handler: %v", err)
	}
	pod := st.MakePod().Name("p").Obj()
	funcs.OnAdd(pod, false)
	funcs.OnUpdate(pod, pod)
	funcs.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "default/p", Obj: pod})
	funcs.OnDelete("not even an object")
	for event, want := range map[string]float64{EventAdd: 1, EventUpdate: 1, EventDelete: 2} {
		if got := metricstest.CounterValue(t, m.HandlerPanics.WithLabelValues("Pod", event)); got != want {
			t.Errorf("handler_panics_total{Pod,%s} = %v, want %v", event, got, want)
		}
	}
}

func TestKeyOf(t *testing.T) {
	pod := st.MakePod().Name("p").Obj()
	for _, tt := range []struct {
		obj  any
		want string
	}{
		{pod, "default/p"},
		{toolscache.DeletedFinalStateUnknown{Key: "default/gone", Obj: pod}, "default/gone"},
		{st.MakeNode().Name("n").Obj(), "n"},
		{42, "<int>"},
	} {
		if got := KeyOf(tt.obj); got != tt.want {
			t.Errorf("KeyOf(%v) = %q, want %q", tt.obj, got, tt.want)
		}
	}
}

// countingNodeHandler counts AddNode calls.
type countingNodeHandler struct {
	nopHandler
	n atomic.Int64
}

func (h *countingNodeHandler) AddNode(any) { h.n.Add(1) }

// BenchmarkDispatchOverhead is the cost of the dispatcher alone (counting
// and panic recovery) around a trivial handler method.
func BenchmarkDispatchOverhead(b *testing.B) {
	node := st.MakeNode().Name("n").Obj()
	b.Run("bare", func(b *testing.B) {
		h := &countingNodeHandler{}
		funcs := toolscache.ResourceEventHandlerFuncs{AddFunc: h.AddNode}
		for b.Loop() {
			funcs.OnAdd(node, false)
		}
	})
	b.Run("dispatched", func(b *testing.B) {
		m, err := metrics.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		h := &countingNodeHandler{}
		funcs, err := NewDispatchers(m).Handler(h, framework.Node)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			funcs.OnAdd(node, false)
		}
	})
}

// newMetrics returns a private set of metrics.
func newMetrics(t *testing.T) *metrics.Metrics {
	t.Helper()
	m, err := metrics.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// nopHandler implements eventhandlers.Interface and does nothing.
type nopHandler struct{}

var _ eventhandlers.Interface = nopHandler{}

func (nopHandler) AddPod(any)                                          {}
func (nopHandler) UpdatePod(any, any)                                  {}
func (nopHandler) DeletePod(any)                                       {}
func (nopHandler) AddNode(any)                                         {}
func (nopHandler) UpdateNode(any, any)                                 {}
func (nopHandler) DeleteNode(any)                                      {}
func (nopHandler) AddPersistentVolume(any)                             {}
func (nopHandler) UpdatePersistentVolume(any, any)                     {}
func (nopHandler) DeletePersistentVolume(any)                          {}
func (nopHandler) AddPersistentVolumeClaim(any)                        {}
func (nopHandler) UpdatePersistentVolumeClaim(any, any)                {}
func (nopHandler) DeletePersistentVolumeClaim(any)                     {}
func (nopHandler) AddStorageClass(any)                                 {}
func (nopHandler) UpdateStorageClass(any, any)                         {}
func (nopHandler) DeleteStorageClass(any)                              {}
func (nopHandler) AddCSINode(any)                                      {}
func (nopHandler) UpdateCSINode(any, any)                              {}
func (nopHandler) DeleteCSINode(any)                                   {}
func (nopHandler) AddCSIDriver(any)                                    {}
func (nopHandler) UpdateCSIDriver(any, any)                            {}
func (nopHandler) DeleteCSIDriver(any)                                 {}
func (nopHandler) AddCSIStorageCapacity(any)                           {}
func (nopHandler) UpdateCSIStorageCapacity(any, any)                   {}
func (nopHandler) DeleteCSIStorageCapacity(any)                        {}
func (nopHandler) AddPriorityClass(any)                                {}
func (nopHandler) UpdatePriorityClass(any, any)                        {}
func (nopHandler) DeletePriorityClass(any)                             {}
func (nopHandler) AddDynamic(schema.GroupVersionResource, any)         {}
func (nopHandler) UpdateDynamic(schema.GroupVersionResource, any, any) {}
func (nopHandler) DeleteDynamic(schema.GroupVersionResource, any)      {}

// podTypeHandler records the dynamic type of every pod object it is
// given (a tombstone's as "tombstone(<type>)") and keeps the last pod.
type podTypeHandler struct {
	nopHandler
	got  []string
	last *v1.Pod
}

func (h *podTypeHandler) note(obj any) string {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return "tombstone(" + h.note(tomb.Obj) + ")"
	}
	if p, ok := obj.(*v1.Pod); ok {
		h.last = p
	}
	return fmt.Sprintf("%T", obj)
}

func (h *podTypeHandler) AddPod(obj any) { h.got = append(h.got, h.note(obj)) }
func (h *podTypeHandler) UpdatePod(oldObj, newObj any) {
	h.got = append(h.got, h.note(oldObj)+"->"+h.note(newObj))
}
func (h *podTypeHandler) DeletePod(obj any) { h.got = append(h.got, h.note(obj)) }

// recordTaker takes records, as the default handler does: for itself only.
type recordTaker struct{ podTypeHandler }

func (h *recordTaker) TakesPodRecords(registered eventhandlers.Interface) bool {
	self, ok := registered.(*recordTaker)
	return ok && self == h
}

// recordTakerEmbedder embeds a handler that takes records, so it inherits
// TakesPodRecords, which must answer false for it.
type recordTakerEmbedder struct{ *recordTaker }

// TestPodRecordsOnlyToHandlersThatTakeThem holds the dispatcher to its
// contract: the informers keep bound pods as records, and a handler that
// does not take records (nor one that only inherits the method) is given
// a *v1.Pod made from each, tombstones rebuilt around it.
func TestPodRecordsOnlyToHandlersThatTakeThem(t *testing.T) {
	pod := st.MakePod().Namespace("ns").Name("p").UID("u").Node("n1").Obj()
	rec := framework.NewPodRecord(pod)
	const (
		asPods    = "*v1.Pod *v1.Pod->*v1.Pod tombstone(*v1.Pod)"
		asRecords = "*framework.PodRecord *v1.Pod->*framework.PodRecord tombstone(*framework.PodRecord)"
	)
	plain, taker, embedder := &podTypeHandler{}, &recordTaker{}, &recordTakerEmbedder{&recordTaker{}}
	for _, tc := range []struct {
		name    string
		handler eventhandlers.Interface
		seen    *podTypeHandler
		want    string
	}{
		{"plain handler", plain, plain, asPods},
		{"takes records", taker, &taker.podTypeHandler, asRecords},
		{"embeds a handler that takes records", embedder, &embedder.podTypeHandler, asPods},
	} {
		t.Run(tc.name, func(t *testing.T) {
			funcs, err := NewDispatchers(newMetrics(t)).Handler(tc.handler, framework.Pod)
			if err != nil {
				t.Fatalf("Handler: %v", err)
			}
			funcs.OnAdd(rec, false)
			funcs.OnUpdate(pod, rec)
			funcs.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: rec})
			if s := strings.Join(tc.seen.got, " "); s != tc.want {
				t.Errorf("the handler got %q, want %q", s, tc.want)
			}
			if tc.want == asPods {
				// The last pod is the one made from the tombstone's record.
				if p := tc.seen.last; p == nil || p == pod || p.Name != "p" || p.Namespace != "ns" || p.UID != "u" || p.Spec.NodeName != "n1" {
					t.Errorf("the pod made from the record is %+v, want a new ns/p, uid u, on n1", p)
				}
			}
		})
	}
}
