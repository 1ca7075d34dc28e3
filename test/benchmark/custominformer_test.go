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

package benchmark

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// BenchmarkCustomInformerThroughput measures how many ExternalWorkload
// events per second reach the scheduler cache through the default event
// handler, from two sources fed the same event sequence:
//
//   - native: a plain client-go SharedIndexInformer over an in-memory
//     ListerWatcher (a channel-backed watch): the baseline, with no HTTP,
//     no JSON and no custom-informer layer;
//   - http: a resourcemanager.Store served by a real HTTP server on
//     127.0.0.1, read by the custom informer that custominformer.Build makes
//     for the "http" source, as the scheduler's configuration file would.
//
// Both sides hand their informer to an identical cache
// (cache.AddCustomInformer, cache.Run) with the default handler, on
// BENCH_CI_NODES nodes (300) delivered by the cache's Node informer, with
// BENCH_CI_WORKLOADS workloads (1500) in the initial list. Neither is timed.
//
// One op is one event: b.N events (about 30% creates, 40% updates that
// resize, move, stop or restart a workload, 30% deletes) are published as
// fast as the source takes them, and the time runs from the first publish
// until the handler has applied the last one to the cache. The sources
// buffer the whole sequence (the store's WatcherBuffer and HistorySize are
// sized for it), so the publisher is never throttled and the store never
// drops its watcher: the figure is the delivery pipeline's throughput, not
// its back-pressure behaviour.
//
// The benchmark fails if an event is lost or duplicated: the handler must
// see exactly the initial workloads plus b.N events, with no relist and no
// list/watch error, and every node's external usage (CPU, memory and the
// workload keys) must equal what the sequence leaves.
//
// Reported: events/s for each side, allocs (all goroutines of the process,
// publisher and HTTP server included), and, in the http line, ratio =
// http events/s ÷ native events/s of the same run. hack/bench-custominformer.sh
// runs it and summarises several runs.
func BenchmarkCustomInformerThroughput(b *testing.B) {
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	s := ciSettings{
		nodes:     envInt(b, "BENCH_CI_NODES", 300),
		workloads: envInt(b, "BENCH_CI_WORKLOADS", 1500),
	}
	if s.nodes < 1 || s.workloads < 0 {
		b.Fatalf("BENCH_CI_NODES=%d must be at least 1 and BENCH_CI_WORKLOADS=%d not negative", s.nodes, s.workloads)
	}
	runInformerSides(b, s, externalWorkloadKind(s))
}

// runInformerSides runs the native side, then the http side, of kind, and
// reports in the http line the ratio to the native rate of the same
// process.
func runInformerSides(b *testing.B, s ciSettings, kind ciKind) {
	// The native rate of the last native run, for the http line's ratio.
	var nativeRate float64
	b.Run("native", func(b *testing.B) {
		nativeRate = runCustomInformerBench(b, s, kind, &nativeSide{})
	})
	b.Run("http", func(b *testing.B) {
		rate := runCustomInformerBench(b, s, kind, &httpSide{})
		if nativeRate > 0 {
			b.ReportMetric(rate/nativeRate, "ratio")
		}
	})
}

type ciSettings struct {
	// nodes is how many nodes the cache holds; workloads is how many
	// objects (ExternalWorkloads or Grants) the source's initial list has.
	nodes, workloads int
}

// ciObject is an object the benchmark streams: an ExternalWorkload or a
// Grant.
type ciObject interface {
	runtime.Object
	metav1.Object
}

// ciKind is what one custom informer benchmark streams, and how the cache
// side counts and checks it. The sources and the timing are shared.
type ciKind struct {
	// resource is the custom informer's Resource.
	resource framework.EventResource
	// gvk, plural and example describe the objects to the store and the
	// informer.
	gvk     schema.GroupVersionKind
	plural  string
	example runtime.Object
	// list builds the native source's initial list at resourceVersion rv.
	list func(rv string, items []ciObject) runtime.Object
	// sequence builds the initial objects and n events, deterministically;
	// with withRV the objects carry the resourceVersions a store starting
	// at 1 would give them.
	sequence func(n int, withRV bool) *ciSequence
	// handler builds the event handler over c, counting each event of
	// the kind it has applied with counter.
	handler func(c *cache.SchedulerCache, counter *ciCounter) (eventhandlers.Interface, error)
}

// externalWorkloadKind streams ExternalWorkloads into the default handler.
func externalWorkloadKind(s ciSettings) ciKind {
	return ciKind{
		resource: framework.ExternalWorkload,
		gvk:      v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		plural:   v1alpha1.ExternalWorkloadsResource,
		example:  &v1alpha1.ExternalWorkload{},
		list: func(rv string, items []ciObject) runtime.Object {
			list := &v1alpha1.ExternalWorkloadList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, o := range items {
				list.Items = append(list.Items, *o.(*v1alpha1.ExternalWorkload))
			}
			return list
		},
		sequence: func(n int, withRV bool) *ciSequence { return newCISequence(n, s, withRV) },
		handler: func(c *cache.SchedulerCache, counter *ciCounter) (eventhandlers.Interface, error) {
			base, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{})
			if err != nil {
				return nil, err
			}
			return &ciCountingHandler{Handler: base, ciCounter: counter}, nil
		},
	}
}

// ciSeed makes the event sequence the same for both sides and every run.
const ciSeed = 20261101

// ciFootprint is what one workload should account on its node.
type ciFootprint struct {
	node          string
	milliCPU, mem int64
	running       bool
}

// ciOp is one event of the sequence.
type ciOp struct {
	typ watch.EventType // Added, Modified or Deleted
	obj ciObject
}

// ciSequence is the benchmark's data: the objects of the initial list,
// the timed events, and a check of what they leave in the cache.
type ciSequence struct {
	initial []ciObject
	ops     []ciOp
	// verify fails b unless the cache holds what the sequence leaves.
	verify func(b *testing.B, c *cache.SchedulerCache)
}

func ciNodeName(i int) string { return fmt.Sprintf("ci-node-%03d", i) }

func ciWorkload(name string, f ciFootprint) *v1alpha1.ExternalWorkload {
	phase := v1alpha1.ExternalWorkloadRunning
	if !f.running {
		phase = v1alpha1.ExternalWorkloadStopped
	}
	return &v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "custominformer"}},
		Spec: v1alpha1.ExternalWorkloadSpec{
			NodeName:     f.node,
			WorkloadKind: "vm",
			Owner:        "bench",
			Resources: v1.ResourceList{
				v1.ResourceCPU:    *resource.NewMilliQuantity(f.milliCPU, resource.DecimalSI),
				v1.ResourceMemory: *resource.NewQuantity(f.mem, resource.BinarySI),
			},
		},
		Status: v1alpha1.ExternalWorkloadStatus{Phase: phase},
	}
}

// newCISequence builds the initial workloads and n events over nodes
// nodes, deterministically. With withRV the objects carry the
// resourceVersions a store starting at 1 would give them (the initial list
// is at workloads+1), for a source that does not stamp them itself.
func newCISequence(n int, s ciSettings, withRV bool) *ciSequence {
	rng := rand.New(rand.NewPCG(ciSeed, uint64(n)))
	cpus := []int64{250, 500, 1000, 2000, 4000}
	mems := []int64{1 << 30, 2 << 30, 4 << 30, 8 << 30}
	random := func() ciFootprint {
		return ciFootprint{
			node:     ciNodeName(rng.IntN(s.nodes)),
			milliCPU: cpus[rng.IntN(len(cpus))],
			mem:      mems[rng.IntN(len(mems))],
			running:  true,
		}
	}
	seq := &ciSequence{}
	final := map[string]ciFootprint{} // by workload name
	var live []string
	next := 0
	rv := int64(1)
	stamp := func(w *v1alpha1.ExternalWorkload) *v1alpha1.ExternalWorkload {
		rv++
		if withRV {
			w.ResourceVersion = strconv.FormatInt(rv, 10)
		}
		return w
	}
	create := func() *v1alpha1.ExternalWorkload {
		name := fmt.Sprintf("ew-%06d", next)
		next++
		f := random()
		final[name] = f
		live = append(live, name)
		return stamp(ciWorkload(name, f))
	}
	for range s.workloads {
		seq.initial = append(seq.initial, create())
	}
	seq.ops = make([]ciOp, 0, n)
	for range n {
		r := rng.IntN(100)
		switch {
		case r < 30 || len(live) == 0:
			seq.ops = append(seq.ops, ciOp{watch.Added, create()})
		case r < 70:
			name := live[rng.IntN(len(live))]
			f := final[name]
			switch u := rng.IntN(10); {
			case u < 5: // resize
				f.milliCPU = cpus[rng.IntN(len(cpus))]
				f.mem = mems[rng.IntN(len(mems))]
			case u < 8: // move to another host
				f.node = ciNodeName(rng.IntN(s.nodes))
			default: // stop or restart
				f.running = !f.running
			}
			final[name] = f
			seq.ops = append(seq.ops, ciOp{watch.Modified, stamp(ciWorkload(name, f))})
		default:
			i := rng.IntN(len(live))
			name := live[i]
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			seq.ops = append(seq.ops, ciOp{watch.Deleted, stamp(ciWorkload(name, final[name]))})
			delete(final, name)
		}
	}
	seq.verify = func(b *testing.B, c *cache.SchedulerCache) { verifyCIState(b, c, s, final) }
	return seq
}

// ciSide is one way of getting the sequence to an informer.
type ciSide interface {
	// wantsRV says whether the sequence's objects must carry
	// resourceVersions (the source does not stamp them).
	wantsRV() bool
	// setup prepares the source holding seq.initial and returns the
	// informer to hand to the cache. ctx ends when the run is over.
	setup(b *testing.B, ctx context.Context, kind ciKind, seq *ciSequence) (name string, informer toolscache.SharedIndexInformer)
	// waitWatching blocks until the informer's watch is open.
	waitWatching(b *testing.B)
	// publish sends ops, in order, as fast as the source takes them.
	publish(ops []ciOp) error
	// check reports a reason to distrust the run (a relist, a dropped
	// watcher), or nil.
	check() error
	teardown()
}

// ciCounter counts the events a handler has applied and closes done at
// the want-th.
type ciCounter struct {
	seen atomic.Int64
	want int64
	done chan struct{}
}

func (h *ciCounter) count() {
	if h.seen.Add(1) == h.want {
		close(h.done)
	}
}

// ciCountingHandler is the default handler counting the ExternalWorkload
// events it has applied to the cache.
type ciCountingHandler struct {
	*defaulthandler.Handler
	*ciCounter
}

func (h *ciCountingHandler) AddExternalWorkload(obj any) {
	h.Handler.AddExternalWorkload(obj)
	h.count()
}

func (h *ciCountingHandler) UpdateExternalWorkload(oldObj, newObj any) {
	h.Handler.UpdateExternalWorkload(oldObj, newObj)
	h.count()
}

func (h *ciCountingHandler) DeleteExternalWorkload(obj any) {
	h.Handler.DeleteExternalWorkload(obj)
	h.count()
}

// watchErrors records the informer's list/watch errors.
type watchErrors struct {
	mu   sync.Mutex
	errs []error
}

func (w *watchErrors) add(_ context.Context, _ *toolscache.Reflector, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

func (w *watchErrors) list() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.errs)
}

// runCustomInformerBench runs b.N events of kind from one side through a
// fresh cache and returns the events/s it reported.
func runCustomInformerBench(b *testing.B, s ciSettings, kind ciKind, side ciSide) float64 {
	b.ReportAllocs()
	seq := kind.sequence(b.N, side.wantsRV())

	nodes := make([]runtime.Object, s.nodes)
	for i := range nodes {
		nodes[i] = st.MakeNode().Name(ciNodeName(i)).
			Capacity(map[v1.ResourceName]string{"cpu": "256", "memory": "1Ti", "pods": "110"}).Obj()
	}
	c, err := cache.New(cache.Options{
		Client: fake.NewClientset(nodes...),
		// Pods and nodes only: the other native informers have nothing
		// to deliver here.
		Resources: []framework.EventResource{},
	})
	if err != nil {
		b.Fatal(err)
	}
	h := &ciCounter{want: int64(len(seq.initial) + b.N), done: make(chan struct{})}
	handler, err := kind.handler(c, h)
	if err != nil {
		b.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		side.teardown()
	}()
	name, inf := side.setup(b, ctx, kind, seq)
	errs := &watchErrors{}
	if err := inf.SetWatchErrorHandlerWithContext(errs.add); err != nil {
		b.Fatal(err)
	}
	if err := c.AddCustomInformer(cache.CustomInformer{Name: name, Resource: kind.resource, Informer: inf}); err != nil {
		b.Fatal(err)
	}
	if err := c.Run(ctx, handler); err != nil {
		b.Fatal(err)
	}
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if err := c.WaitForHandlersSync(syncCtx); err != nil {
		b.Fatal(err)
	}
	side.waitWatching(b)
	if got := h.seen.Load(); got != int64(len(seq.initial)) {
		b.Fatalf("%d events after the initial list, want %d", got, len(seq.initial))
	}
	for i := range s.nodes {
		if ni, ok := c.NodeInfo(ciNodeName(i)); !ok || ni.Placeholder {
			b.Fatalf("node %s is not in the cache before the run", ciNodeName(i))
		}
	}

	goruntime.GC()
	b.ResetTimer()
	start := time.Now()
	published := make(chan error, 1)
	go func() { published <- side.publish(seq.ops) }()
	timeout := time.NewTimer(30*time.Second + time.Duration(b.N)*time.Millisecond)
	defer timeout.Stop()
	for waiting := true; waiting; {
		select {
		case <-h.done:
			waiting = false
		case err := <-published:
			if err != nil {
				b.Fatalf("publishing: %v", err)
			}
			published = nil
		case <-timeout.C:
			b.Fatalf("timed out: the handler saw %d of %d events (%d initial + %d timed); list/watch errors: %v",
				h.seen.Load(), h.want, len(seq.initial), b.N, errs.list())
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()

	if published != nil {
		if err := <-published; err != nil {
			b.Fatalf("publishing: %v", err)
		}
	}
	if es := errs.list(); len(es) > 0 {
		b.Fatalf("list/watch errors during the run: %v", es)
	}
	if err := side.check(); err != nil {
		b.Fatal(err)
	}
	seq.verify(b, c)
	// Anything beyond the expected count (a duplicate, a relist's replay)
	// would have arrived by now.
	time.Sleep(20 * time.Millisecond)
	if got := h.seen.Load(); got != h.want {
		b.Fatalf("the handler saw %d events, want exactly %d", got, h.want)
	}
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "events/s")
	return rate
}

// verifyCIState checks that every node accounts exactly the external usage
// the sequence leaves.
func verifyCIState(b *testing.B, c *cache.SchedulerCache, s ciSettings, final map[string]ciFootprint) {
	b.Helper()
	type want struct {
		milliCPU, mem int64
		keys          []string
	}
	wants := make(map[string]*want, s.nodes)
	for i := range s.nodes {
		wants[ciNodeName(i)] = &want{}
	}
	for name, f := range final {
		if !f.running {
			continue
		}
		w := wants[f.node]
		w.milliCPU += f.milliCPU
		w.mem += f.mem
		w.keys = append(w.keys, defaulthandler.ExternalWorkloadKey(ciWorkload(name, f)))
	}
	bad := 0
	for i := range s.nodes {
		node := ciNodeName(i)
		w := wants[node]
		slices.Sort(w.keys)
		ni, ok := c.NodeInfo(node)
		switch {
		case !ok:
			b.Errorf("node %s is gone from the cache", node)
		case ni.Placeholder:
			b.Errorf("node %s is a placeholder", node)
		case ni.External.MilliCPU != w.milliCPU || ni.External.Memory != w.mem || !slices.Equal(ni.ExternalKeys, w.keys):
			if bad++; bad <= 5 {
				b.Errorf("node %s: external usage %dm CPU, %d memory, %d workloads; want %dm, %d, %d",
					node, ni.External.MilliCPU, ni.External.Memory, len(ni.ExternalKeys), w.milliCPU, w.mem, len(w.keys))
			}
		}
	}
	if b.Failed() {
		b.FailNow()
	}
}

// nativeSide: a plain SharedIndexInformer over an in-memory source.
type nativeSide struct {
	src *memSource
}

// memSource is a ListerWatcher whose list is the initial objects and
// whose watch is a channel the publisher fills. It counts lists and
// watches, so a relist or re-watch is seen.
type memSource struct {
	list    runtime.Object
	events  chan watch.Event
	watched chan struct{}
	lists   atomic.Int32
	watches atomic.Int32
}

func (m *memSource) List(metav1.ListOptions) (runtime.Object, error) {
	m.lists.Add(1)
	return m.list.DeepCopyObject(), nil
}

func (m *memSource) Watch(metav1.ListOptions) (watch.Interface, error) {
	if m.watches.Add(1) == 1 {
		close(m.watched)
	}
	return watch.NewProxyWatcher(m.events), nil
}

// IsWatchListSemanticsUnSupported: the source speaks plain list and watch,
// not the watch-list protocol.
func (m *memSource) IsWatchListSemanticsUnSupported() bool { return true }

func (n *nativeSide) wantsRV() bool { return true }

func (n *nativeSide) setup(b *testing.B, _ context.Context, kind ciKind, seq *ciSequence) (string, toolscache.SharedIndexInformer) {
	list := kind.list(strconv.Itoa(len(seq.initial)+1), seq.initial)
	n.src = &memSource{list: list, events: make(chan watch.Event, len(seq.ops)), watched: make(chan struct{})}
	inf := toolscache.NewSharedIndexInformerWithOptions(n.src, kind.example.DeepCopyObject(), toolscache.SharedIndexInformerOptions{
		Indexers: toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
	})
	return "bench-native", inf
}

func (n *nativeSide) waitWatching(b *testing.B) {
	select {
	case <-n.src.watched:
	case <-time.After(30 * time.Second):
		b.Fatal("the native informer did not start watching")
	}
}

func (n *nativeSide) publish(ops []ciOp) error {
	for _, op := range ops {
		n.src.events <- watch.Event{Type: op.typ, Object: op.obj}
	}
	return nil
}

func (n *nativeSide) check() error {
	if l, w := n.src.lists.Load(), n.src.watches.Load(); l != 1 || w != 1 {
		return fmt.Errorf("native source: %d lists and %d watches, want 1 and 1", l, w)
	}
	return nil
}

func (n *nativeSide) teardown() {}

// httpSide: a resourcemanager.Store on a loopback HTTP server, read by the
// custom informer custominformer.Build makes for the http source.
type httpSide struct {
	store   *resourcemanager.Store
	srv     *httptest.Server
	lists   atomic.Int32
	watches atomic.Int32
}

func (h *httpSide) wantsRV() bool { return false } // the store stamps them

func (h *httpSide) setup(b *testing.B, ctx context.Context, kind ciKind, seq *ciSequence) (string, toolscache.SharedIndexInformer) {
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: kind.gvk,
		Resource:         kind.plural,
		Example:          kind.example.DeepCopyObject(),
		// Room for the whole sequence: the publisher never overruns the
		// watcher, so it is never dropped and never replays.
		HistorySize:   len(seq.initial) + len(seq.ops) + 1,
		WatcherBuffer: len(seq.ops) + 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	h.store = store
	for _, w := range seq.initial {
		if err := store.Create(w); err != nil {
			b.Fatal(err)
		}
	}
	// Count requests, to see a relist or a re-watch.
	storeHandler := store.Handler()
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
			h.watches.Add(1)
		} else {
			h.lists.Add(1)
		}
		storeHandler.ServeHTTP(w, r)
	}))
	ci := configapi.CustomInformer{
		Name:       "bench-http",
		Resource:   string(kind.resource),
		SourceType: custominformer.HTTPSource,
		SourceArgs: configapi.NewRawArgs("bench-custominformer.yaml", []byte("url: "+h.srv.URL+"\n")),
	}
	built, err := custominformer.Build(ctx, custominformer.NewInTreeSourceRegistry(), "bench-custominformer.yaml", 1, ci)
	if err != nil {
		b.Fatal(err)
	}
	if built.Resource != kind.resource {
		b.Fatalf("Build: resource %q, want %q", built.Resource, kind.resource)
	}
	return built.Name, built.Informer
}

func (h *httpSide) waitWatching(b *testing.B) {
	deadline := time.Now().Add(30 * time.Second)
	for h.store.Watchers() < 1 {
		if time.Now().After(deadline) {
			b.Fatal("the http informer did not start watching")
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *httpSide) publish(ops []ciOp) error {
	for _, op := range ops {
		var err error
		switch op.typ {
		case watch.Added:
			err = h.store.Create(op.obj)
		case watch.Modified:
			err = h.store.Update(op.obj)
		case watch.Deleted:
			err = h.store.Delete(op.obj.GetNamespace(), op.obj.GetName())
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", op.typ, op.obj.GetName(), err)
		}
	}
	return nil
}

func (h *httpSide) check() error {
	if n := h.store.SlowWatchersClosed(); n > 0 {
		return fmt.Errorf("the store dropped %d slow watchers", n)
	}
	if l, w := h.lists.Load(), h.watches.Load(); l != 1 || w != 1 {
		return fmt.Errorf("http source: %d lists and %d watches, want 1 and 1", l, w)
	}
	return nil
}

func (h *httpSide) teardown() {
	// Closing the store ends any watch stream still open, so that the
	// server can close.
	if h.store != nil {
		h.store.Close()
	}
	if h.srv != nil {
		h.srv.Close()
	}
}
