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

package status

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
)

var queueGVR = v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.QueuesResource)

// applied is one status the writer applied.
type applied struct {
	name   string
	status v1alpha1.QueueStatus
}

// fakeAPI is a dynamic client whose Queues' status patches are recorded;
// fail, when set, answers a patch instead.
type fakeAPI struct {
	t      *testing.T
	client *dynamicfake.FakeDynamicClient

	mu      sync.Mutex
	applied []applied
	fail    error
}

func newFakeAPI(t *testing.T) *fakeAPI {
	api := &fakeAPI{t: t, client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{queueGVR: "QueueList"})}
	api.client.PrependReactor("patch", "queues", func(action clienttesting.Action) (bool, runtime.Object, error) {
		p := action.(clienttesting.PatchActionImpl)
		opts := p.GetPatchOptions()
		if p.GetSubresource() != "status" || p.GetPatchType() != types.ApplyPatchType ||
			opts.FieldManager != FieldManager || opts.Force == nil || !*opts.Force {
			t.Errorf("patch of queue %s: subresource %q, type %s, field manager %q, force %v; want a forced apply of the status by %s",
				p.GetName(), p.GetSubresource(), p.GetPatchType(), opts.FieldManager, opts.Force, FieldManager)
		}
		api.mu.Lock()
		defer api.mu.Unlock()
		if api.fail != nil {
			return true, nil, api.fail
		}
		var q v1alpha1.Queue
		if err := json.Unmarshal(p.GetPatch(), &q); err != nil {
			t.Errorf("patch of queue %s: %v", p.GetName(), err)
		}
		if q.Name != p.GetName() || q.Kind != "Queue" || q.APIVersion != v1alpha1.SchemeGroupVersion.String() {
			t.Errorf("patch of queue %s names %s %s %s", p.GetName(), q.APIVersion, q.Kind, q.Name)
		}
		api.applied = append(api.applied, applied{name: p.GetName(), status: q.Status})
		return true, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "Queue",
			"metadata": map[string]any{"name": p.GetName()},
		}}, nil
	})
	return api
}

// take returns the statuses applied since the last call.
func (a *fakeAPI) take() []applied {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.applied
	a.applied = nil
	return out
}

func (a *fakeAPI) failWith(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = err
}

func names(as []applied) string {
	var out []string
	for _, a := range as {
		out = append(out, a.name)
	}
	return strings.Join(out, " ")
}

func cpu(milli int64) framework.ResourceAmounts {
	return framework.ResourceAmounts{v1.ResourceCPU: milli}
}

// state is a leaf queue in use with allocated milli-cores.
func state(name string, allocatedMilli int64) *framework.QueueState {
	return &framework.QueueState{
		QueueSpec: framework.QueueSpec{Name: name, Weight: 1},
		Depth:     1,
		Allocated: cpu(allocatedMilli), Pending: cpu(1000),
		FairShare: cpu(4000), Guaranteed: cpu(1000), Entitlement: cpu(3000),
		PendingJobs: 2, RunningJobs: 1,
	}
}

// source hands the writer what queues holds at each call.
type source struct {
	mu     sync.Mutex
	queues []Queue
}

func (s *source) set(qs ...Queue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues = qs
}

func (s *source) get() []Queue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Queue(nil), s.queues...)
}

func newWriter(t *testing.T, src *source, api *fakeAPI, m *metrics.Metrics) *Writer {
	t.Helper()
	opts := Options{Queues: src.get, Metrics: m}
	if api != nil {
		opts.Client = api.client
	}
	w, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func quantity(l v1.ResourceList, name v1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return "<none>"
	}
	return q.String()
}

func validCondition(t *testing.T, st v1alpha1.QueueStatus) metav1.Condition {
	t.Helper()
	if len(st.Conditions) != 1 || st.Conditions[0].Type != "Valid" {
		t.Fatalf("conditions %+v, want one of type Valid", st.Conditions)
	}
	return st.Conditions[0]
}

// Sync writes the status of each of the project's own Queues once, and
// again only when it changed.
func TestSyncWritesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	api := newFakeAPI(t)
	src := &source{}
	parentErr := errors.New(`Queue b: parent "nope" does not exist`)
	src.set(
		Queue{Name: "a", Own: true, State: state("a", 2500)},
		Queue{Name: "b", Own: true, Err: parentErr},
		Queue{Name: "volcano", State: state("volcano", 1000)},
	)
	w := newWriter(t, src, api, nil)

	w.Sync(ctx)
	got := api.take()
	if names(got) != "a b" {
		t.Fatalf("statuses written for %q, want for a and b (not for the queue of another API)", names(got))
	}
	a := got[0].status
	if quantity(a.Allocated, v1.ResourceCPU) != "2500m" || quantity(a.Pending, v1.ResourceCPU) != "1" ||
		quantity(a.FairShare, v1.ResourceCPU) != "4" || quantity(a.Guaranteed, v1.ResourceCPU) != "1" ||
		a.PendingJobs != 2 || a.RunningJobs != 1 {
		t.Errorf("status of a %+v, want allocated 2500m, pending 1, fair share 4, guaranteed 1, 2 pending and 1 running jobs", a)
	}
	if c := validCondition(t, a); c.Status != metav1.ConditionTrue || c.Reason != "InUse" || c.LastTransitionTime.IsZero() {
		t.Errorf("Valid condition of a %+v, want True, InUse, with a transition time", c)
	}
	b := got[1].status
	if c := validCondition(t, b); c.Status != metav1.ConditionFalse || c.Reason != "Invalid" || c.Message != parentErr.Error() {
		t.Errorf("Valid condition of b %+v, want False, Invalid: %q", c, parentErr)
	}
	if b.Allocated != nil || b.PendingJobs != 0 {
		t.Errorf("status of the invalid b %+v, want no amounts", b)
	}

	w.Sync(ctx)
	if got := api.take(); len(got) != 0 {
		t.Errorf("statuses written again for %q though nothing changed", names(got))
	}

	src.set(
		Queue{Name: "a", Own: true, State: state("a", 3000)},
		Queue{Name: "b", Own: true, Err: parentErr},
		Queue{Name: "volcano", State: state("volcano", 3000)},
	)
	w.Sync(ctx)
	got = api.take()
	if names(got) != "a" {
		t.Fatalf("statuses written for %q after a's allocation changed, want for a", names(got))
	}
	if q := quantity(got[0].status.Allocated, v1.ResourceCPU); q != "3" {
		t.Errorf("allocated cpu of a %s, want 3", q)
	}
}

// A queue whose children divide its share is valid, and says so.
func TestSyncQueueWithChildren(t *testing.T) {
	api := newFakeAPI(t)
	src := &source{}
	org := state("org", 0)
	org.Children = []string{"a"}
	src.set(Queue{Name: "org", Own: true, State: org})
	newWriter(t, src, api, nil).Sync(context.Background())
	got := api.take()
	if len(got) != 1 {
		t.Fatalf("%d statuses written, want 1", len(got))
	}
	if c := validCondition(t, got[0].status); c.Status != metav1.ConditionTrue || c.Reason != "HasChildren" {
		t.Errorf("Valid condition of org %+v, want True, HasChildren", c)
	}
}

// The Valid condition's lastTransitionTime stays while validity does not
// change, and moves when it does.
func TestSyncKeepsTransitionTime(t *testing.T) {
	ctx := context.Background()
	api := newFakeAPI(t)
	src := &source{}
	src.set(Queue{Name: "a", Own: true, State: state("a", 1000)})
	w := newWriter(t, src, api, nil)
	w.Sync(ctx)
	api.take()
	// As if the queue became valid long ago.
	long := metav1.NewTime(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))
	ws := w.written["a"]
	ws.validFrom = long
	w.written["a"] = ws

	transition := func() metav1.Time {
		t.Helper()
		w.Sync(ctx)
		got := api.take()
		if len(got) != 1 {
			t.Fatalf("%d statuses written, want 1", len(got))
		}
		return validCondition(t, got[0].status).LastTransitionTime
	}
	src.set(Queue{Name: "a", Own: true, State: state("a", 2000)})
	if got := transition(); !got.Equal(&long) {
		t.Errorf("lastTransitionTime %v after the allocation changed, want %v", got, long)
	}
	before := metav1.NewTime(time.Now().Add(-2 * time.Second))
	src.set(Queue{Name: "a", Own: true, Err: errors.New("a cycle")})
	invalidFrom := transition()
	if invalidFrom.Before(&before) {
		t.Errorf("lastTransitionTime %v after the queue became invalid, want about now", invalidFrom)
	}
	src.set(Queue{Name: "a", Own: true, Err: errors.New("another cycle")})
	if got := transition(); !got.Equal(&invalidFrom) {
		t.Errorf("lastTransitionTime %v while the queue stays invalid, want %v", got, invalidFrom)
	}
}

// A status that could not be written is written at the next Sync; a queue
// that went away and came back is written again.
func TestSyncRetries(t *testing.T) {
	ctx := context.Background()
	src := &source{}
	src.set(Queue{Name: "a", Own: true, State: state("a", 1000)})
	for _, err := range []error{errors.New("connection refused"), apierrors.NewNotFound(queueGVR.GroupResource(), "a")} {
		api := newFakeAPI(t)
		w := newWriter(t, src, api, nil)
		api.failWith(err)
		w.Sync(ctx)
		api.failWith(nil)
		w.Sync(ctx)
		if got := api.take(); names(got) != "a" {
			t.Errorf("after a write failed with %v, statuses written for %q, want for a", err, names(got))
		}
	}

	api := newFakeAPI(t)
	w := newWriter(t, src, api, nil)
	w.Sync(ctx)
	if got := api.take(); names(got) != "a" {
		t.Fatalf("statuses written for %q, want for a", names(got))
	}
	src.set()
	w.Sync(ctx)
	src.set(Queue{Name: "a", Own: true, State: state("a", 1000)})
	w.Sync(ctx)
	if got := api.take(); names(got) != "a" {
		t.Errorf("statuses written for %q when a came back, want for a", names(got))
	}
}

// The metrics of every queue, own or not, are set at each Sync, also
// without a client; a queue that went away leaves them.
func TestSyncMetrics(t *testing.T) {
	m, err := metrics.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	a := state("a", 2500)
	a.Allocated[v1.ResourceMemory] = 1 << 30
	a.Limit = framework.ResourceAmounts{v1.ResourceCPU: 8000}
	src := &source{}
	src.set(
		Queue{Name: "a", Own: true, State: a},
		Queue{Name: "volcano", State: state("volcano", 500)},
		Queue{Name: "b", Own: true, Err: errors.New("bad")},
	)
	w := newWriter(t, src, nil, m)
	w.Sync(context.Background())

	// a: allocated cpu and memory, pending, fair share, guaranteed and
	// limit cpu; volcano: the same but memory and limit.
	if n := testutil.CollectAndCount(m.QueueResources); n != 6+4 {
		t.Errorf("%d queue_resources series, want 10", n)
	}
	for _, tt := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"a", "cpu", "allocated"}, 2.5},
		{[]string{"a", "memory", "allocated"}, 1 << 30},
		{[]string{"a", "cpu", "pending"}, 1},
		{[]string{"a", "cpu", "fair_share"}, 4},
		{[]string{"a", "cpu", "guaranteed"}, 1},
		{[]string{"a", "cpu", "limit"}, 8},
		{[]string{"volcano", "cpu", "allocated"}, 0.5},
	} {
		if got := metricstest.GaugeValue(t, m.QueueResources.WithLabelValues(tt.labels...)); got != tt.want {
			t.Errorf("queue_resources%v = %v, want %v", tt.labels, got, tt.want)
		}
	}
	for _, tt := range []struct {
		gauge  func(...string) float64
		labels []string
		want   float64
	}{
		{func(l ...string) float64 { return metricstest.GaugeValue(t, m.QueueJobs.WithLabelValues(l...)) }, []string{"a", "pending"}, 2},
		{func(l ...string) float64 { return metricstest.GaugeValue(t, m.QueueJobs.WithLabelValues(l...)) }, []string{"a", "running"}, 1},
		{func(l ...string) float64 { return metricstest.GaugeValue(t, m.QueueValid.WithLabelValues(l...)) }, []string{"a"}, 1},
		{func(l ...string) float64 { return metricstest.GaugeValue(t, m.QueueValid.WithLabelValues(l...)) }, []string{"b"}, 0},
		{func(l ...string) float64 { return metricstest.GaugeValue(t, m.QueueValid.WithLabelValues(l...)) }, []string{"volcano"}, 1},
	} {
		if got := tt.gauge(tt.labels...); got != tt.want {
			t.Errorf("%v = %v, want %v", tt.labels, got, tt.want)
		}
	}

	src.set(Queue{Name: "a", Own: true, State: a})
	w.Sync(context.Background())
	if n := testutil.CollectAndCount(m.QueueValid); n != 1 {
		t.Errorf("%d queue_valid series after b and volcano went away, want 1", n)
	}
	if n := testutil.CollectAndCount(m.QueueJobs); n != 2 {
		t.Errorf("%d queue_jobs series after volcano went away, want 2", n)
	}
	if n := testutil.CollectAndCount(m.QueueResources); n != 6 {
		t.Errorf("%d queue_resources series after volcano went away, want 6", n)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without a source of queues: no error")
	}
	w, err := New(Options{Queues: func() []Queue { return nil }})
	if err != nil || w.opts.Period != DefaultPeriod {
		t.Errorf("New = %+v, %v, want a writer with period %v", w, err, DefaultPeriod)
	}
}
