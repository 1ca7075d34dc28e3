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

package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestFilters(t *testing.T) {
	c, _ := newTestCache(t, Options{SchedulerNames: []string{"batch-scheduler"}})
	ours := st.MakePod().Name("ours").Obj()
	theirs := st.MakePod().Name("theirs").Scheduler("default-scheduler").Obj()
	theirsBound := st.MakePod().Name("theirs-bound").Scheduler("default-scheduler").Node("n1").Obj()
	for _, tt := range []struct {
		obj  any
		want bool
	}{
		{ours, true},
		{theirs, false},
		{theirsBound, true},
		{toolscache.DeletedFinalStateUnknown{Key: "default/theirs", Obj: theirs}, false},
		{toolscache.DeletedFinalStateUnknown{Key: "default/theirs-bound", Obj: theirsBound}, true},
		{"not a pod", true}, // left for the handler to reject
	} {
		if got := c.podFilter(tt.obj); got != tt.want {
			t.Errorf("podFilter(%s) = %v, want %v", informerhost.KeyOf(tt.obj), got, tt.want)
		}
	}

}

// eventLog records the events a ResourceEventHandler gets, as
// "<event> <name>".
type eventLog struct{ events []string }

func (r *eventLog) OnAdd(obj any, _ bool) {
	r.events = append(r.events, "add "+informerhost.KeyOf(obj))
}
func (r *eventLog) OnUpdate(_, newObj any) {
	r.events = append(r.events, "update "+informerhost.KeyOf(newObj))
}
func (r *eventLog) OnDelete(obj any) { r.events = append(r.events, "delete "+informerhost.KeyOf(obj)) }

// The node selector filter passes on the matching nodes' events, turning a
// node that starts or stops matching into an add or a delete, and tells
// the cache which nodes exist outside the selector.
func TestNodeSelectorHandler(t *testing.T) {
	batch := st.MakeNode().Name("a").Label("pool", "batch").Obj()
	web := st.MakeNode().Name("a").Label("pool", "web").Obj()
	tomb := func(n *v1.Node) toolscache.DeletedFinalStateUnknown {
		return toolscache.DeletedFinalStateUnknown{Key: n.Name, Obj: n}
	}
	tests := []struct {
		name         string
		do           func(h *nodeSelectorHandler)
		wantEvents   []string
		wantExcluded bool
	}{
		{"matching node added", func(h *nodeSelectorHandler) { h.OnAdd(batch, true) }, []string{"add a"}, false},
		{"other node added", func(h *nodeSelectorHandler) { h.OnAdd(web, true) }, nil, true},
		{"matching node updated", func(h *nodeSelectorHandler) { h.OnUpdate(batch, batch) }, []string{"update a"}, false},
		{"node starts matching", func(h *nodeSelectorHandler) { h.OnAdd(web, true); h.OnUpdate(web, batch) }, []string{"add a"}, false},
		{"node stops matching", func(h *nodeSelectorHandler) { h.OnUpdate(batch, web) }, []string{"delete a"}, true},
		{"other node updated", func(h *nodeSelectorHandler) { h.OnUpdate(web, web) }, nil, true},
		{"matching node deleted", func(h *nodeSelectorHandler) { h.OnDelete(tomb(batch)) }, []string{"delete a"}, false},
		{"other node deleted", func(h *nodeSelectorHandler) { h.OnAdd(web, true); h.OnDelete(tomb(web)) }, nil, false},
		{"not a node is passed on", func(h *nodeSelectorHandler) { h.OnAdd(st.MakePod().Name("p").Obj(), false) }, []string{"add default/p"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCache(t, Options{})
			rec := &eventLog{}
			h := &nodeSelectorHandler{selector: labels.SelectorFromSet(labels.Set{"pool": "batch"}), cache: c, next: rec}
			tt.do(h)
			if !slices.Equal(rec.events, tt.wantEvents) {
				t.Errorf("events = %q, want %q", rec.events, tt.wantEvents)
			}
			if got := c.excluded["a"]; got != tt.wantExcluded {
				t.Errorf("excluded = %v, want %v", got, tt.wantExcluded)
			}
		})
	}
}

// create creates obj through the fake API, failing the test on error.
func create[T any](t *testing.T, what string, fn func(context.Context, T, metav1.CreateOptions) (T, error), obj T) {
	t.Helper()
	if _, err := fn(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", what, err)
	}
}

func noRV[T interface{ SetResourceVersion(string) }](obj T) T {
	obj.SetResourceVersion("")
	return obj
}

func TestRunWiresEveryInformer(t *testing.T) {
	// One object of each kind exists before Run (initial list), the rest is
	// created afterwards (watch).
	client := fake.NewClientset(
		noRV(st.MakeNode().Name("early").Capacity(res{v1.ResourceCPU: "4", v1.ResourcePods: "10"}).Label("pool", "batch").Obj()),
	)
	c, _ := newTestCache(t, Options{Client: client, NodeSelector: labels.SelectorFromSet(labels.Set{"pool": "batch"})})
	h := newRecordingHandler(c)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mustNoErr(t, "Run", c.Run(ctx, h))
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))
	if ok, unsynced := c.HandlersSynced(); !ok || len(unsynced) != 0 {
		t.Fatalf("HandlersSynced = %v, %v after WaitForHandlersSync", ok, unsynced)
	}
	if !h.has(framework.Node, informerhost.EventAdd, "early") {
		t.Fatalf("the initial list did not reach the handler: %v", h.keysOf(framework.Node))
	}

	core, storage := client.CoreV1(), client.StorageV1()
	n1 := st.MakeNode().Name("n1").Capacity(res{v1.ResourceCPU: "8", v1.ResourcePods: "10"}).Label("pool", "batch").Obj()
	n1.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	n1.Annotations = map[string]string{informerhost.LastAppliedConfigAnnotation: "{}", "keep": "me"}
	n1.Status.Images = []v1.ContainerImage{{Names: []string{"busybox"}}}
	create(t, "node", core.Nodes().Create, noRV(n1))
	create(t, "node", core.Nodes().Create, noRV(st.MakeNode().Name("web").Label("pool", "web").Obj()))
	create(t, "pod", core.Pods("default").Create, noRV(st.MakePod().Name("theirs").Scheduler("default-scheduler").Obj()))
	create(t, "pod", core.Pods("default").Create, noRV(st.MakePod().Name("theirs-bound").Scheduler("default-scheduler").Node("n1").Req(res{v1.ResourceCPU: "1"}).Obj()))
	create(t, "pod", core.Pods("default").Create, noRV(st.MakePod().Name("ours").Group("g").Obj()))
	create(t, "pv", core.PersistentVolumes().Create, &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}})
	create(t, "pvc", core.PersistentVolumeClaims("default").Create, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pvc", Namespace: "default"}})
	create(t, "storage class", storage.StorageClasses().Create, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}})
	create(t, "csi node", storage.CSINodes().Create, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	create(t, "csi driver", storage.CSIDrivers().Create, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "driver"}})
	create(t, "csi storage capacity", storage.CSIStorageCapacities("default").Create, &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "cap", Namespace: "default"}})
	create(t, "priority class", client.SchedulingV1().PriorityClasses().Create, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000})

	want := []recorded{
		{framework.Node, informerhost.EventAdd, "n1"},
		{framework.Pod, informerhost.EventAdd, "default/theirs-bound"},
		{framework.Pod, informerhost.EventAdd, "default/ours"},
		{framework.PersistentVolume, informerhost.EventAdd, "pv"},
		{framework.PersistentVolumeClaim, informerhost.EventAdd, "default/pvc"},
		{framework.StorageClass, informerhost.EventAdd, "sc"},
		{framework.CSINode, informerhost.EventAdd, "n1"},
		{framework.CSIDriver, informerhost.EventAdd, "driver"},
		{framework.CSIStorageCapacity, informerhost.EventAdd, "default/cap"},
		{framework.PriorityClass, informerhost.EventAdd, "high"},
	}
	for _, w := range want {
		waitFor(t, w.String(), func() bool { return h.has(w.resource, w.event, w.key) })
	}
	// Events of one informer arrive in order: "theirs" was created before
	// "ours", which has arrived, and was filtered out; so was node "web".
	if h.has(framework.Pod, informerhost.EventAdd, "default/theirs") {
		t.Error("another scheduler's pending pod reached the handler")
	}
	if h.has(framework.Node, informerhost.EventAdd, "web") {
		t.Error("a node outside the node selector reached the handler")
	}

	// The cache followed.
	waitFor(t, "the bound pod in the cache", func() bool {
		idle, ok := nodeIdle(c, "n1")
		return ok && idle.MilliCPU == 7000
	})
	// The informers' transform ran before the handler saw the node.
	if ni, ok := c.NodeInfo("n1"); !ok || ni.Node.ManagedFields != nil || ni.Node.Status.Images != nil ||
		len(ni.Node.Annotations) != 1 || ni.Node.Annotations["keep"] != "me" || ni.Node.Labels["pool"] != "batch" {
		t.Errorf("n1 was not stripped for the scheduler: %+v", ni.Node)
	}
	if j, ok := c.Job(framework.JobID{Namespace: "default", Name: "g", Gang: true}); !ok || len(j.Tasks) != 1 {
		t.Errorf("gang job = %+v, %v", j, ok)
	}
	if l := c.Queue().Lengths(); l.Active != 1 {
		t.Errorf("queue = %+v, want the gang active", l)
	}

	// A node whose labels stop matching is delivered as a delete.
	n1, err := core.Nodes().Get(ctx, "n1", metav1.GetOptions{})
	mustNoErr(t, "getting n1", err)
	n1.Labels["pool"] = "web"
	_, err = core.Nodes().Update(ctx, n1, metav1.UpdateOptions{})
	mustNoErr(t, "updating n1", err)
	waitFor(t, "n1 deleted by the selector", func() bool { return h.has(framework.Node, informerhost.EventDelete, "n1") })
	if _, ok := nodeIdle(c, "n1"); ok {
		t.Error("n1 is still schedulable in the cache")
	}

	// The pending pod gets bound: it moves in the job, and out of the queue.
	ours, err := core.Pods("default").Get(ctx, "ours", metav1.GetOptions{})
	mustNoErr(t, "getting ours", err)
	ours.Spec.NodeName = "early"
	_, err = core.Pods("default").Update(ctx, ours, metav1.UpdateOptions{})
	mustNoErr(t, "updating ours", err)
	waitFor(t, "ours bound", func() bool {
		j, ok := c.Job(framework.JobID{Namespace: "default", Name: "g", Gang: true})
		return ok && j.Tasks[ours.UID].Status == framework.TaskBound
	})
	if l := c.Queue().Lengths(); l.Active != 0 {
		t.Errorf("queue = %+v, want empty", l)
	}
	mustNoErr(t, "deleting ours", core.Pods("default").Delete(ctx, "ours", metav1.DeleteOptions{}))
	waitFor(t, "ours deleted", func() bool { return h.has(framework.Pod, informerhost.EventDelete, "default/ours") })
	if _, ok := c.Job(framework.JobID{Namespace: "default", Name: "g", Gang: true}); ok {
		t.Error("job still there after its pod was deleted")
	}
	if errs := h.errors(); len(errs) > 0 {
		t.Errorf("the cache rejected calls: %v", errs)
	}

	d := c.Dump()
	if !d.Handlers.Running || !d.Handlers.Synced || len(d.Handlers.Registrations) != 9 {
		t.Errorf("handlers in dump = %+v", d.Handlers)
	}
	if err := c.Run(ctx, h); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Run: got %v, want an error", err)
	}
}

func TestPanicIsolation(t *testing.T) {
	client := fake.NewClientset()
	c, _ := newTestCache(t, Options{Client: client})
	h := newRecordingHandler(c)
	h.panicOn = "default/boom"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mustNoErr(t, "Run", c.Run(ctx, h))
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))

	pods := client.CoreV1().Pods("default")
	create(t, "pod", pods.Create, noRV(st.MakePod().Name("boom").Obj()))
	create(t, "pod", pods.Create, noRV(st.MakePod().Name("after").Obj()))
	waitFor(t, "the pod after the panic", func() bool { return h.has(framework.Pod, informerhost.EventAdd, "default/after") })

	if got := metricstest.CounterValue(t, c.metrics.HandlerPanics.WithLabelValues("Pod", "add")); got != 1 {
		t.Errorf("handler_panics_total{Pod,add} = %v, want 1", got)
	}
	if got := metricstest.CounterValue(t, c.metrics.EventsHandled.WithLabelValues("Pod", "add")); got != 2 {
		t.Errorf("events_handled_total{Pod,add} = %v, want 2", got)
	}
	var podAdd informerhost.EventCounts
	for _, e := range c.Dump().Events {
		if e.Resource == "Pod" && e.Event == "add" {
			podAdd = e
		}
	}
	if podAdd.Handled != 2 || podAdd.Panics != 1 {
		t.Errorf("dump counts for Pod add = %+v, want 2 handled, 1 panic", podAdd)
	}
	// Later events of the same object still arrive.
	mustNoErr(t, "deleting boom", pods.Delete(ctx, "boom", metav1.DeleteOptions{}))
	waitFor(t, "the delete of the pod that panicked", func() bool { return h.has(framework.Pod, informerhost.EventDelete, "default/boom") })
}

// unsupportedWatchList makes a FakeControllerSource usable by a reflector
// that would otherwise try the watch-list protocol it does not speak.
type unsupportedWatchList struct {
	*fcache.FakeControllerSource
}

func (unsupportedWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func TestCustomInformer(t *testing.T) {
	source := fcache.NewFakeControllerSource()
	source.Add(st.MakeNode().Name("host-1").Capacity(res{v1.ResourceCPU: "16", v1.ResourcePods: "10"}).Obj())
	informer := toolscache.NewSharedIndexInformer(unsupportedWatchList{source}, &v1.Node{}, 0, toolscache.Indexers{})

	c, _ := newTestCache(t, Options{Client: fake.NewClientset()})
	h := newRecordingHandler(c)
	mustNoErr(t, "AddCustomInformer", c.AddCustomInformer(CustomInformer{Name: "hosts", Resource: framework.Node, Informer: informer}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mustNoErr(t, "Run", c.Run(ctx, h))
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))

	d := c.Dump()
	var names []string
	for _, r := range d.Handlers.Registrations {
		names = append(names, r.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "custom/hosts") {
		t.Errorf("registrations = %v, want custom/hosts among them", names)
	}
	if !h.has(framework.Node, informerhost.EventAdd, "host-1") {
		t.Fatalf("the custom informer's initial list did not reach the handler: %v", h.keysOf(framework.Node))
	}
	if idle, ok := nodeIdle(c, "host-1"); !ok || idle.MilliCPU != 16000 {
		t.Errorf("host-1 in cache: idle %v, ok %v", idle, ok)
	}
	source.Add(st.MakeNode().Name("host-2").Obj())
	waitFor(t, "host-2 from the custom informer", func() bool { return h.has(framework.Node, informerhost.EventAdd, "host-2") })
	source.Delete(st.MakeNode().Name("host-1").Obj())
	waitFor(t, "host-1 deleted", func() bool { return h.has(framework.Node, informerhost.EventDelete, "host-1") })

	if err := c.AddCustomInformer(CustomInformer{Name: "late", Resource: framework.Node, Informer: informer}); err == nil ||
		!strings.Contains(err.Error(), "already running") {
		t.Errorf("AddCustomInformer after Run: got %v, want an error", err)
	}
}

func TestCustomInformerPodsAreFiltered(t *testing.T) {
	source := fcache.NewFakeControllerSource()
	informer := toolscache.NewSharedIndexInformer(unsupportedWatchList{source}, &v1.Pod{}, 0, toolscache.Indexers{})
	c, _ := newTestCache(t, Options{Client: fake.NewClientset()})
	h := newRecordingHandler(c)
	mustNoErr(t, "AddCustomInformer", c.AddCustomInformer(CustomInformer{Name: "pods", Resource: framework.Pod, Informer: informer}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mustNoErr(t, "Run", c.Run(ctx, h))
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))
	source.Add(st.MakePod().Name("theirs").Scheduler("other").Obj())
	source.Add(st.MakePod().Name("ours").Obj())
	waitFor(t, "ours", func() bool { return h.has(framework.Pod, informerhost.EventAdd, "default/ours") })
	if h.has(framework.Pod, informerhost.EventAdd, "default/theirs") {
		t.Error("the custom pod informer bypassed the responsibility filter")
	}
}

func TestAddCustomInformerErrors(t *testing.T) {
	informer := toolscache.NewSharedIndexInformer(unsupportedWatchList{fcache.NewFakeControllerSource()}, &v1.Node{}, 0, toolscache.Indexers{})
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddCustomInformer", c.AddCustomInformer(CustomInformer{Name: "a", Resource: framework.Node, Informer: informer}))
	mustNoErr(t, "AddCustomInformer of a dynamic resource", c.AddCustomInformer(CustomInformer{Name: "w", Resource: "widgets.v1.example.com", Informer: informer}))
	tests := []struct {
		name string
		ci   CustomInformer
		want string
	}{
		{"duplicate name", CustomInformer{Name: "a", Resource: framework.Node, Informer: informer}, `"a": a custom informer with that name was added already`},
		{"empty name", CustomInformer{Resource: framework.Node, Informer: informer}, "empty name"},
		{"nil informer", CustomInformer{Name: "b", Resource: framework.Node}, "nil informer"},
		{"unknown resource", CustomInformer{Name: "b", Resource: "Widget", Informer: informer}, `no event handler methods for resource "Widget"`},
		{"wildcard", CustomInformer{Name: "b", Resource: framework.WildCard, Informer: informer}, `resource "*"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.AddCustomInformer(tt.ci); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func widget(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "default"},
	}}
}

func TestRunDynamicInformersAndRunner(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgets: "WidgetList"}, widget("w1"))
	c, _ := newTestCache(t, Options{Client: fake.NewClientset(), DynamicClient: dyn})
	h := &dynamicHandler{recordingHandler: newRecordingHandler(c), gvrs: []schema.GroupVersionResource{widgets, widgets}, running: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mustNoErr(t, "Run", c.Run(ctx, h))
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))
	name := eventhandlers.DynamicResourceName(widgets)
	if !h.has(name, informerhost.EventAdd, "default/w1") {
		t.Fatalf("widget w1 did not reach AddDynamic: %v", h.keysOf(name))
	}
	_, err := dyn.Resource(widgets).Namespace("default").Create(ctx, widget("w2"), metav1.CreateOptions{})
	mustNoErr(t, "creating w2", err)
	waitFor(t, "w2", func() bool { return h.has(name, informerhost.EventAdd, "default/w2") })
	mustNoErr(t, "deleting w1", dyn.Resource(widgets).Namespace("default").Delete(ctx, "w1", metav1.DeleteOptions{}))
	waitFor(t, "w1 deleted", func() bool { return h.has(name, informerhost.EventDelete, "default/w1") })

	select {
	case <-h.running:
	case <-time.After(time.Minute):
		t.Fatal("the handler's Run was not started")
	}
	var regs []string
	for _, r := range c.Dump().Handlers.Registrations {
		regs = append(regs, r.Name)
	}
	if strings.Count(strings.Join(regs, ","), "widgets.v1.example.com") != 1 {
		t.Errorf("registrations = %v, want widgets.v1.example.com once", regs)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		h    eventhandlers.Interface
		want string
	}{
		{"nil handler", Options{Client: fake.NewClientset()}, nil, "nil event handler"},
		{"no client", Options{}, nopHandler{}, "Options.Client is nil"},
		{
			"dynamic resources without a dynamic client", Options{Client: fake.NewClientset()},
			&dynamicHandler{recordingHandler: &recordingHandler{}, gvrs: []schema.GroupVersionResource{widgets}},
			"asked for dynamic resources widgets.v1.example.com but Options.DynamicClient is nil",
		},
		{
			"invalid dynamic resource", Options{Client: fake.NewClientset()},
			&dynamicHandler{recordingHandler: &recordingHandler{}, gvrs: []schema.GroupVersionResource{{Resource: "Widgets", Version: "v1", Group: "x"}}},
			"invalid dynamic resource",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCache(t, tt.opts)
			err := c.Run(t.Context(), tt.h)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: got %v, want an error containing %q", err, tt.want)
			}
			if err := c.WaitForHandlersSync(t.Context()); err == nil {
				t.Error("WaitForHandlersSync after a failed Run: no error")
			}
			if ok, names := c.HandlersSynced(); ok || names != nil {
				t.Errorf("HandlersSynced after a failed Run = %v, %v", ok, names)
			}
		})
	}
}

func TestRunRemovesHandlersWhenWiringFails(t *testing.T) {
	good := toolscache.NewSharedIndexInformer(unsupportedWatchList{fcache.NewFakeControllerSource()}, &v1.Node{}, 0, toolscache.Indexers{})
	// A stopped informer refuses new handlers.
	stopped := toolscache.NewSharedIndexInformer(unsupportedWatchList{fcache.NewFakeControllerSource()}, &v1.Node{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	stopped.RunWithContext(ctx)

	c, _ := newTestCache(t, Options{Client: fake.NewClientset()})
	mustNoErr(t, "AddCustomInformer", c.AddCustomInformer(CustomInformer{Name: "good", Resource: framework.Node, Informer: good}))
	mustNoErr(t, "AddCustomInformer", c.AddCustomInformer(CustomInformer{Name: "stopped", Resource: framework.Node, Informer: stopped}))
	err := c.Run(t.Context(), newRecordingHandler(c))
	if err == nil || !strings.Contains(err.Error(), `custom informer "stopped"`) {
		t.Fatalf("Run: got %v, want an error naming the stopped informer", err)
	}
	if good.IsStopped() {
		t.Error("the good informer was stopped")
	}
	// The handler added to the good informer was removed again: a fresh
	// handler can be added and is the only one.
	if _, err := good.AddEventHandler(toolscache.ResourceEventHandlerFuncs{}); err != nil {
		t.Errorf("good informer: %v", err)
	}
}

func TestWaitForHandlersSyncNamesUnsynced(t *testing.T) {
	source := fcache.NewFakeControllerSource()
	source.ListError = errors.New("host manager down")
	informer := toolscache.NewSharedIndexInformer(unsupportedWatchList{source}, &v1.Node{}, 0, toolscache.Indexers{})
	c, _ := newTestCache(t, Options{Client: fake.NewClientset()})
	mustNoErr(t, "AddCustomInformer", c.AddCustomInformer(CustomInformer{Name: "hosts", Resource: framework.Node, Informer: informer}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mustNoErr(t, "Run", c.Run(ctx, newRecordingHandler(c)))

	// Wait until everything else synced, so that the error names only the
	// broken informer.
	waitFor(t, "the native handlers", func() bool {
		_, unsynced := c.HandlersSynced()
		return len(unsynced) == 1
	})
	waitCtx, waitCancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer waitCancel()
	err := c.WaitForHandlersSync(waitCtx)
	if err == nil || !strings.Contains(err.Error(), "not synced: custom/hosts)") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForHandlersSync: got %v, want a deadline error naming custom/hosts", err)
	}
	if ok, unsynced := c.HandlersSynced(); ok || strings.Join(unsynced, ",") != "custom/hosts" {
		t.Errorf("HandlersSynced = %v, %v", ok, unsynced)
	}
	if d := c.Dump(); d.Handlers.Synced {
		t.Error("dump says synced")
	}
}

func TestRunStartsOnlyNeededInformers(t *testing.T) {
	plural := map[framework.EventResource]string{
		framework.Pod:                   "pods",
		framework.Node:                  "nodes",
		framework.PersistentVolume:      "persistentvolumes",
		framework.PersistentVolumeClaim: "persistentvolumeclaims",
		framework.StorageClass:          "storageclasses",
		framework.CSINode:               "csinodes",
		framework.CSIDriver:             "csidrivers",
		framework.CSIStorageCapacity:    "csistoragecapacities",
		framework.PriorityClass:         "priorityclasses",
	}
	all := []framework.EventResource{framework.CSIDriver, framework.CSINode, framework.CSIStorageCapacity,
		framework.Node, framework.PersistentVolume, framework.PersistentVolumeClaim, framework.Pod,
		framework.PriorityClass, framework.StorageClass}
	tests := []struct {
		name      string
		resources []framework.EventResource
		want      []framework.EventResource // sorted
	}{
		{name: "nil: every native resource", want: all},
		{name: "empty: pods and nodes", resources: []framework.EventResource{}, want: []framework.EventResource{framework.Node, framework.Pod}},
		{
			name:      "listed ones, plus pods and nodes",
			resources: []framework.EventResource{framework.PersistentVolumeClaim, framework.StorageClass, framework.PersistentVolumeClaim},
			want:      []framework.EventResource{framework.Node, framework.PersistentVolumeClaim, framework.Pod, framework.StorageClass},
		},
		{name: "wildcard", resources: []framework.EventResource{framework.Node, framework.WildCard}, want: all},
		{
			name:      "dynamic entries start no native informer",
			resources: []framework.EventResource{"widgets.v1.example.com", framework.PriorityClass},
			want:      []framework.EventResource{framework.Node, framework.Pod, framework.PriorityClass},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			c, _ := newTestCache(t, Options{Client: client, Resources: tt.resources})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			mustNoErr(t, "Run", c.Run(ctx, newRecordingHandler(c)))
			mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))
			var regs []string
			for _, r := range c.Dump().Handlers.Registrations {
				regs = append(regs, r.Name)
			}
			var want []string
			wantListed := map[string]bool{}
			for _, r := range tt.want {
				want = append(want, string(r))
				wantListed[plural[r]] = true
			}
			if strings.Join(regs, ",") != strings.Join(want, ",") {
				t.Errorf("registrations = %v, want %v", regs, want)
			}
			// Only the started informers reached the API server.
			listed := map[string]bool{}
			for _, a := range client.Actions() {
				if a.GetVerb() == "list" || a.GetVerb() == "watch" {
					listed[a.GetResource().Resource] = true
				}
			}
			if !equality.Semantic.DeepEqual(listed, wantListed) {
				t.Errorf("listed or watched %v, want %v", listed, wantListed)
			}
		})
	}
}

func TestNewRejectsUnknownResources(t *testing.T) {
	for _, r := range []framework.EventResource{"Widget", "", "pods.v1"} {
		_, err := New(Options{Resources: []framework.EventResource{framework.Pod, r}})
		if err == nil || !strings.Contains(err.Error(), "Options.Resources") {
			t.Errorf("New with resource %q: got %v, want an error", r, err)
		}
	}
}
