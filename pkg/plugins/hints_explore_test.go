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

package plugins_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
)

// This file holds the machinery of the exploration of plugins whose
// verdict depends on more than one node object: a small cluster is built
// from a few independent dimensions (a node's labels, a pod bound to it, a
// claim, a volume, ...), each of which takes a handful of values, and the
// cluster is moved from every combination of values to every neighbour
// that differs in one dimension. The move goes through the real default
// handler, as informer events would; the objects the plugins read through
// listers are put in the listers' stores first, as an informer does
// before it calls its handlers.

// dimValue is one value of a dimension: the objects it puts in the
// cluster, none for "absent".
type dimValue struct {
	label string
	objs  []runtime.Object
}

func val(label string, objs ...runtime.Object) dimValue { return dimValue{label: label, objs: objs} }

// dimension is one property of the explored clusters.
type dimension struct {
	name   string
	values []dimValue
}

func dim(name string, values ...dimValue) dimension { return dimension{name: name, values: values} }

// space is what an explorer visits: the objects every cluster holds, the
// dimensions, and the pending pods tried in each cluster.
type space struct {
	fixed []runtime.Object
	dims  []dimension
	pods  []*v1.Pod
}

// objKey identifies an object across two clusters: the same key in both
// means the object was updated (or left alone), a key in one only that it
// was added or deleted.
type objKey struct{ kind, namespace, name string }

func keyOf(t *testing.T, obj runtime.Object) objKey {
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatalf("%T: %v", obj, err)
	}
	return objKey{fmt.Sprintf("%T", obj), m.GetNamespace(), m.GetName()}
}

// exploreResult is what an exploration saw, for the checks made over all
// the explorations of a plugin.
type exploreResult struct {
	// changed are the resources of the objects the explored changes added,
	// updated or deleted.
	changed map[framework.EventResource]bool
	// outcomes counts the parked jobs by whether some node admitted the
	// pod after the change where it had not before (a retry is needed).
	outcomes map[bool]int
	// needless counts the parked jobs retried though no node admitted
	// their pod after the change where it had not before: harmless, an
	// attempt for nothing.
	needless int
	// gaps counts, by index in knownHintGaps, the jobs left parked
	// though a retry was needed that a known gap accounts for;
	// gapExample describes the first of them.
	gaps       map[int]int
	gapExample map[int]string
}

func newExploreResult() exploreResult {
	return exploreResult{changed: map[framework.EventResource]bool{}, outcomes: map[bool]int{}, gaps: map[int]int{}, gapExample: map[int]string{}}
}

func (r *exploreResult) merge(o exploreResult) {
	if r.changed == nil {
		*r = newExploreResult()
	}
	maps.Copy(r.changed, o.changed)
	for k, v := range o.outcomes {
		r.outcomes[k] += v
	}
	for k, v := range o.gaps {
		r.gaps[k] += v
	}
	for k, v := range o.gapExample {
		if _, ok := r.gapExample[k]; !ok {
			r.gapExample[k] = v
		}
	}
	r.needless += o.needless
}

// exploreSpace moves the cluster of sp from every combination of values to
// every combination that differs in one dimension, and checks for each
// pending pod that plugin rejected on some node before the move that its
// job is retried whenever the plugin admits the pod, after the move, on a
// node where it did not before. Moves that the API would refuse (see
// allowedUpdate) are not explored.
func exploreSpace(t *testing.T, reg *frameworkruntime.Registry, plugin string, sp space) exploreResult {
	res := newExploreResult()
	put := pluginUnderTest{name: plugin, preFilter: runsAtPreFilter(t, reg, plugin)}
	point := make([]int, len(sp.dims))
	for {
		before := clusterAt(sp, point)
		for d := range sp.dims {
			for v := range sp.dims[d].values {
				if v == point[d] {
					continue
				}
				next := slices.Clone(point)
				next[d] = v
				after := clusterAt(sp, next)
				ch, ok := diff(t, before, after)
				if !ok {
					continue
				}
				m := move{dim: sp.dims[d].name, from: sp.dims[d].values[point[d]].label, to: sp.dims[d].values[v].label}
				desc := fmt.Sprintf("%s, %s: %s -> %s", describePoint(sp, point), m.dim, m.from, m.to)
				runChange(t, reg, put, before, ch, m, sp.pods, desc, &res)
			}
		}
		// The next combination, the first dimension turning fastest.
		d := 0
		for ; d < len(point); d++ {
			point[d]++
			if point[d] < len(sp.dims[d].values) {
				break
			}
			point[d] = 0
		}
		if d == len(point) {
			return res
		}
	}
}

// clusterAt returns the objects of the cluster at point.
func clusterAt(sp space, point []int) []runtime.Object {
	objs := slices.Clone(sp.fixed)
	for d, v := range point {
		objs = append(objs, sp.dims[d].values[v].objs...)
	}
	return objs
}

func describePoint(sp space, point []int) string {
	parts := make([]string, len(point))
	for d, v := range point {
		parts[d] = sp.dims[d].name + "=" + sp.dims[d].values[v].label
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// move is the change of one dimension from a value to another.
type move struct{ dim, from, to string }

// change is the difference between two clusters.
type change struct {
	deleted, added []runtime.Object
	// updated pairs an object before with the same object after.
	updated [][2]runtime.Object
}

// diff returns what changes from before to after; ok is false when an
// update among them is one the API refuses.
func diff(t *testing.T, before, after []runtime.Object) (ch change, ok bool) {
	t.Helper()
	index := func(objs []runtime.Object) map[objKey]runtime.Object {
		m := make(map[objKey]runtime.Object, len(objs))
		for _, o := range objs {
			k := keyOf(t, o)
			if _, dup := m[k]; dup {
				t.Fatalf("two objects of one cluster are %v", k)
			}
			m[k] = o
		}
		return m
	}
	b, a := index(before), index(after)
	for _, o := range before {
		n, ok := a[keyOf(t, o)]
		switch {
		case !ok:
			ch.deleted = append(ch.deleted, o)
		case !equality.Semantic.DeepEqual(o, n):
			if !allowedUpdate(o, n) {
				return change{}, false
			}
			ch.updated = append(ch.updated, [2]runtime.Object{o, n})
		}
	}
	for _, o := range after {
		if _, ok := b[keyOf(t, o)]; !ok {
			ch.added = append(ch.added, o)
		}
	}
	return ch, true
}

// allowedUpdate reports whether the API lets old become cur in one
// update, for the kinds the explorations update in place: a pod keeps
// its spec but for its containers' requests (an in-place resize), and a
// finished pod stays finished; a claim only gets bound; a class only
// changes its allowed topologies; a resource claim keeps its spec.
func allowedUpdate(old, cur runtime.Object) bool {
	switch o := old.(type) {
	case *v1.Pod:
		n := cur.(*v1.Pod)
		if framework.PodFinished(o) && !framework.PodFinished(n) {
			return false
		}
		strip := func(p *v1.Pod) v1.PodSpec {
			s := *p.Spec.DeepCopy()
			for i := range s.Containers {
				s.Containers[i].Resources = v1.ResourceRequirements{}
			}
			return s
		}
		return equality.Semantic.DeepEqual(strip(o), strip(n))
	case *v1.PersistentVolumeClaim:
		n := cur.(*v1.PersistentVolumeClaim)
		if o.Spec.VolumeName != "" && o.Spec.VolumeName != n.Spec.VolumeName {
			return false
		}
		s := o.Spec.DeepCopy()
		s.VolumeName = n.Spec.VolumeName
		return equality.Semantic.DeepEqual(*s, n.Spec)
	case *storagev1.StorageClass:
		n := cur.(*storagev1.StorageClass).DeepCopy()
		n.AllowedTopologies = o.AllowedTopologies
		n.ObjectMeta = o.ObjectMeta
		return equality.Semantic.DeepEqual(o, n)
	case *resourcev1.ResourceClaim:
		return equality.Semantic.DeepEqual(o.Spec, cur.(*resourcev1.ResourceClaim).Spec)
	}
	return true
}

// runChange builds the cluster before, parks a job for each pending pod
// that plugin rejects on some node, applies ch and checks the jobs.
func runChange(t *testing.T, reg *frameworkruntime.Registry, put pluginUnderTest, before []runtime.Object, ch change, m move,
	pods []*v1.Pod, desc string, res *exploreResult) {
	plugin := put.name
	e := newHintEnv(t, reg, put)
	// Nodes first, as a scheduler starting up would see them.
	for _, o := range before {
		if _, ok := o.(*v1.Node); ok {
			e.add(o)
		}
	}
	for _, o := range before {
		if _, ok := o.(*v1.Node); !ok {
			e.add(o)
		}
	}
	type parked struct {
		pod    *v1.Pod
		before map[string]bool
		id     framework.JobID
	}
	var jobs []*parked
	byUID := map[string]*parked{}
	nodes := e.nodeNames()
	for _, pod := range pods {
		admitted, err := e.admitted(pod)
		if err != nil {
			t.Errorf("%s, pod %s, before the change: %v", desc, pod.Name, err)
			continue
		}
		if len(admitted) == len(nodes) {
			continue // not rejected anywhere: nothing for the hint to undo
		}
		j := &parked{pod: pod, before: admitted}
		jobs = append(jobs, j)
		byUID[string(pod.UID)] = j
		e.h.AddPod(pod.DeepCopy())
	}
	if len(jobs) == 0 {
		return
	}
	events := e.fw.EventsToRegisterFor(plugin)
	for range jobs {
		qj, err := e.c.Queue().Pop(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		j := byUID[string(qj.Pods[0].UID)]
		if j == nil {
			t.Fatalf("popped a job of unknown pods %v", qj.ID)
		}
		j.id = qj.ID
		if err := e.c.Queue().AddUnschedulable(qj, schedulingqueue.Attempt{Reason: "rejected by " + plugin, Events: events}); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.c.Queue().Lengths().Unschedulable; n != len(jobs) {
		t.Fatalf("%d jobs parked, want %d: %+v", n, len(jobs), e.c.Queue().Lengths())
	}
	e.clk.Step(schedulingqueue.DefaultMaxBackoff)

	for _, o := range ch.deleted {
		res.changed[resourceOf(t, o)] = true
		e.delete(o)
	}
	for _, u := range ch.updated {
		res.changed[resourceOf(t, u[0])] = true
		e.update(u[0], u[1])
	}
	for _, o := range ch.added {
		res.changed[resourceOf(t, o)] = true
		e.add(o)
	}

	nodes = e.nodeNames()
	for _, j := range jobs {
		mem, ok := e.c.Queue().MembershipOf(j.id)
		if !ok {
			t.Fatalf("%s: job %v left the queue", desc, j.id)
		}
		retried := mem.Location != "unschedulable"
		admitted, err := e.admitted(j.pod)
		if err != nil {
			t.Errorf("%s, pod %s, after the change: %v", desc, j.pod.Name, err)
			continue
		}
		var newly []string
		for _, n := range nodes {
			if admitted[n] && !j.before[n] {
				newly = append(newly, n)
			}
		}
		need := len(newly) > 0
		res.outcomes[need]++
		switch {
		case need && !retried:
			if i, ok := knownGap(plugin, m); ok {
				res.gaps[i]++
				if _, ok := res.gapExample[i]; !ok {
					res.gapExample[i] = fmt.Sprintf("%s, pod %s", desc, j.pod.Name)
				}
				continue
			}
			t.Errorf("%s, pod %s: %s admits the pod on %v after the change and did not before, but its hints left the job parked",
				desc, j.pod.Name, plugin, newly)
		case !need && retried:
			res.needless++
		}
	}
}

// hintEnv is one run: a framework holding plugin alone (besides the
// queue sort and bind plugins every profile needs), with listers of its
// own, and a cache and default handler that park jobs and raise events.
type hintEnv struct {
	t    *testing.T
	fw   *frameworkruntime.Framework
	lh   *testutil.Handle
	clk  *testingclock.FakeClock
	c    *cache.SchedulerCache
	h    *defaulthandler.Handler
	snap *cache.Snapshot
	rv   int
}

// pluginUnderTest names the explored plugin and says whether it runs at
// PreFilter (per job, per pod, or both) besides Filter.
type pluginUnderTest struct {
	name      string
	preFilter bool
}

func runsAtPreFilter(t *testing.T, reg *frameworkruntime.Registry, plugin string) bool {
	factory, err := reg.Lookup(plugin)
	if err != nil {
		t.Fatal(err)
	}
	p, err := factory(t.Context(), nil, testutil.NewHandle())
	if err != nil {
		t.Fatal(err)
	}
	_, job := p.(framework.PreFilterPlugin)
	_, pod := p.(framework.PodPreFilterPlugin)
	return job || pod
}

// Thousands of runs share what none of them reads: the metrics their
// caches report to, and the fake clientset behind their informer
// factories (which are never started: the test fills their stores).
var (
	sharedMetrics   = sync.OnceValues(func() (*metrics.Metrics, error) { return metrics.New(nil) })
	sharedClientset = sync.OnceValue(func() *fake.Clientset { return fake.NewClientset() })
)

func newHintEnv(t *testing.T, reg *frameworkruntime.Registry, put pluginUnderTest) *hintEnv {
	t.Helper()
	// A handle of its own, so that the run has informer stores of its own.
	lh := &testutil.Handle{Client: sharedClientset(), Recorder: events.NewFakeRecorder(10)}
	plugins := map[frameworkruntime.ExtensionPoint]frameworkruntime.PluginSet{
		frameworkruntime.QueueSortPoint: {{Name: "PrioritySort"}},
		frameworkruntime.FilterPoint:    {{Name: put.name}},
		frameworkruntime.BindPoint:      {{Name: "DefaultBinder"}},
	}
	if put.preFilter {
		plugins[frameworkruntime.PreFilterPoint] = frameworkruntime.PluginSet{{Name: put.name}}
	}
	fw, err := frameworkruntime.NewFramework(t.Context(), reg, frameworkruntime.ProfileSpec{SchedulerName: "batch-scheduler", Plugins: plugins},
		lh, frameworkruntime.WithParallelism(1))
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := sharedMetrics()
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cache.Options{Clock: clk, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{})
	if err != nil {
		t.Fatal(err)
	}
	return &hintEnv{t: t, fw: fw, lh: lh, clk: clk, c: c, h: h, snap: cache.NewSnapshot()}
}

// stamped returns a copy of obj with a resourceVersion of its own, so that
// the handler never takes an update for a resync.
func (e *hintEnv) stamped(obj runtime.Object) runtime.Object {
	e.rv++
	cp := obj.DeepCopyObject()
	m, err := meta.Accessor(cp)
	if err != nil {
		e.t.Fatal(err)
	}
	m.SetResourceVersion(strconv.Itoa(e.rv))
	return cp
}

// listed is how an object the plugins read through a lister reaches
// them: its informer's store, then the handler's callbacks.
type listed struct {
	informer func(informers.SharedInformerFactory) toolscache.SharedIndexInformer
	add      func(h *defaulthandler.Handler, obj any)
	update   func(h *defaulthandler.Handler, oldObj, newObj any)
	del      func(h *defaulthandler.Handler, obj any)
}

func listedKind(t *testing.T, obj runtime.Object) listed {
	switch obj.(type) {
	case *v1.PersistentVolumeClaim:
		return listed{func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Core().V1().PersistentVolumeClaims().Informer()
		}, (*defaulthandler.Handler).AddPersistentVolumeClaim, (*defaulthandler.Handler).UpdatePersistentVolumeClaim, (*defaulthandler.Handler).DeletePersistentVolumeClaim}
	case *v1.PersistentVolume:
		return listed{func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Core().V1().PersistentVolumes().Informer()
		}, (*defaulthandler.Handler).AddPersistentVolume, (*defaulthandler.Handler).UpdatePersistentVolume, (*defaulthandler.Handler).DeletePersistentVolume}
	case *storagev1.StorageClass:
		return listed{func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Storage().V1().StorageClasses().Informer()
		}, (*defaulthandler.Handler).AddStorageClass, (*defaulthandler.Handler).UpdateStorageClass, (*defaulthandler.Handler).DeleteStorageClass}
	case *storagev1.CSINode:
		return listed{func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Storage().V1().CSINodes().Informer()
		}, (*defaulthandler.Handler).AddCSINode, (*defaulthandler.Handler).UpdateCSINode, (*defaulthandler.Handler).DeleteCSINode}
	case *storagev1.CSIDriver:
		return listed{func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Storage().V1().CSIDrivers().Informer()
		}, (*defaulthandler.Handler).AddCSIDriver, (*defaulthandler.Handler).UpdateCSIDriver, (*defaulthandler.Handler).DeleteCSIDriver}
	case *storagev1.CSIStorageCapacity:
		return listed{func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Storage().V1().CSIStorageCapacities().Informer()
		}, (*defaulthandler.Handler).AddCSIStorageCapacity, (*defaulthandler.Handler).UpdateCSIStorageCapacity, (*defaulthandler.Handler).DeleteCSIStorageCapacity}
	case *resourcev1.ResourceClaim:
		return listed{func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Resource().V1().ResourceClaims().Informer()
		}, (*defaulthandler.Handler).AddResourceClaim, (*defaulthandler.Handler).UpdateResourceClaim, (*defaulthandler.Handler).DeleteResourceClaim}
	case *resourcev1.ResourceSlice:
		return listed{func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Resource().V1().ResourceSlices().Informer()
		}, (*defaulthandler.Handler).AddResourceSlice, (*defaulthandler.Handler).UpdateResourceSlice, (*defaulthandler.Handler).DeleteResourceSlice}
	case *resourcev1.DeviceClass:
		return listed{func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Resource().V1().DeviceClasses().Informer()
		}, (*defaulthandler.Handler).AddDeviceClass, (*defaulthandler.Handler).UpdateDeviceClass, (*defaulthandler.Handler).DeleteDeviceClass}
	}
	t.Fatalf("the exploration does not know how %T reaches the plugins", obj)
	return listed{}
}

// resourceOf is the event resource of obj's kind.
func resourceOf(t *testing.T, obj runtime.Object) framework.EventResource {
	switch obj.(type) {
	case *v1.Node:
		return framework.Node
	case *v1.Pod:
		return framework.Pod
	case *v1alpha1.ExternalWorkload:
		return framework.ExternalWorkload
	case *v1.PersistentVolumeClaim:
		return framework.PersistentVolumeClaim
	case *v1.PersistentVolume:
		return framework.PersistentVolume
	case *storagev1.StorageClass:
		return framework.StorageClass
	case *storagev1.CSINode:
		return framework.CSINode
	case *storagev1.CSIDriver:
		return framework.CSIDriver
	case *storagev1.CSIStorageCapacity:
		return framework.CSIStorageCapacity
	case *resourcev1.ResourceClaim:
		return framework.ResourceClaim
	case *resourcev1.ResourceSlice:
		return framework.ResourceSlice
	case *resourcev1.DeviceClass:
		return framework.DeviceClass
	}
	t.Fatalf("no event resource for %T", obj)
	return ""
}

func (e *hintEnv) add(obj runtime.Object) {
	obj = e.stamped(obj)
	switch o := obj.(type) {
	case *v1.Node:
		e.h.AddNode(o)
	case *v1.Pod:
		e.h.AddPod(o)
	case *v1alpha1.ExternalWorkload:
		e.h.AddExternalWorkload(o)
	default:
		l := listedKind(e.t, obj)
		if err := l.informer(e.lh.SharedInformerFactory()).GetStore().Add(obj); err != nil {
			e.t.Fatal(err)
		}
		l.add(e.h, obj)
	}
}

func (e *hintEnv) update(oldObj, newObj runtime.Object) {
	// The handler is given the object as it was stored, and its
	// successor with a newer version.
	e.rv++
	oldObj = oldObj.DeepCopyObject()
	m, _ := meta.Accessor(oldObj)
	m.SetResourceVersion(strconv.Itoa(e.rv))
	newObj = e.stamped(newObj)
	switch o := oldObj.(type) {
	case *v1.Node:
		e.h.UpdateNode(o, newObj)
	case *v1.Pod:
		e.h.UpdatePod(o, newObj)
	case *v1alpha1.ExternalWorkload:
		e.h.UpdateExternalWorkload(o, newObj)
	default:
		l := listedKind(e.t, oldObj)
		if err := l.informer(e.lh.SharedInformerFactory()).GetStore().Update(newObj); err != nil {
			e.t.Fatal(err)
		}
		l.update(e.h, oldObj, newObj)
	}
}

func (e *hintEnv) delete(obj runtime.Object) {
	obj = e.stamped(obj)
	switch o := obj.(type) {
	case *v1.Node:
		e.h.DeleteNode(o)
	case *v1.Pod:
		e.h.DeletePod(o)
	case *v1alpha1.ExternalWorkload:
		e.h.DeleteExternalWorkload(o)
	default:
		l := listedKind(e.t, obj)
		if err := l.informer(e.lh.SharedInformerFactory()).GetStore().Delete(obj); err != nil {
			e.t.Fatal(err)
		}
		l.del(e.h, obj)
	}
}

// nodeNames returns the names of the nodes a cycle would filter.
func (e *hintEnv) nodeNames() []string {
	if err := e.c.UpdateSnapshot(e.snap); err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, n := range e.snap.NodeInfos() {
		names = append(names, n.Name())
	}
	return names
}

// admitted runs the plugin for pod as a scheduling cycle does (PreFilter,
// PreFilterPod, then Filter on every node of the cache's snapshot) and
// returns the nodes it admits the pod on; none when it rejects the pod
// before Filter. An error of the plugin is returned.
func (e *hintEnv) admitted(pod *v1.Pod) (map[string]bool, error) {
	ctx := e.t.Context()
	if err := e.c.UpdateSnapshot(e.snap); err != nil {
		return nil, err
	}
	nodes := e.snap.NodeInfos()
	out := map[string]bool{}
	state := framework.NewCycleState()
	job := &framework.Job{ID: framework.JobID{Namespace: pod.Namespace, Name: pod.Name}, MinAvailable: 1, Pending: []*v1.Pod{pod}}
	if s := e.fw.RunPreFilterPlugins(ctx, state, job); !s.IsSuccess() {
		if s.IsRejected() {
			return out, nil
		}
		return nil, s.AsError()
	}
	if s := e.fw.RunPreFilterPodPlugins(ctx, state, pod, nodes); !s.IsSuccess() {
		if s.IsRejected() {
			return out, nil
		}
		return nil, s.AsError()
	}
	feasible, _, err := e.fw.FindFeasibleNodes(ctx, state, pod, nodes)
	if err != nil {
		return nil, err
	}
	for _, n := range feasible {
		out[n.Name()] = true
	}
	return out, nil
}

// hintGap is a disagreement between a plugin's Filter and its events or
// hints that this test found and that is not fixed yet: the jobs its
// plugin left parked after a move of dimension dim from value from (any,
// when empty) to one of to (any, when empty), though a retry was needed.
type hintGap struct {
	plugin, dim, from string
	to                []string
	why               string
}

// knownHintGaps are the disagreements found by the explorations and not
// fixed yet. They are reported, not failed; the test fails instead when
// one of them is no longer seen, so that its entry goes with the fix.
// Each is narrow on purpose: a new disagreement elsewhere fails the test.
var knownHintGaps = []hintGap{}

// knownGap returns the index of the known gap that accounts for plugin
// leaving a job parked after m.
func knownGap(plugin string, m move) (int, bool) {
	for i, g := range knownHintGaps {
		if g.plugin == plugin && g.dim == m.dim && (g.from == "" || g.from == m.from) && (len(g.to) == 0 || slices.Contains(g.to, m.to)) {
			return i, true
		}
	}
	return 0, false
}
