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

package twolevel

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// evictions answers the eviction calls of a fake clientset: it records
// the pods asked for, in order, and refuses those named in refuse (HTTP
// 429, as for a PodDisruptionBudget) as many times as given there, or
// always for a negative count.
type evictions struct {
	mu       sync.Mutex
	asked    []string
	accepted []string
	refuse   map[string]int
}

func newEvictions(refuse map[string]int) (*fake.Clientset, *evictions) {
	e := &evictions{refuse: map[string]int{}}
	for name, n := range refuse {
		e.refuse[name] = n
	}
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		name := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name
		e.mu.Lock()
		defer e.mu.Unlock()
		e.asked = append(e.asked, name)
		if n := e.refuse[name]; n != 0 {
			e.refuse[name] = n - 1
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		e.accepted = append(e.accepted, name)
		return true, nil, nil
	})
	return client, e
}

// take returns the pods asked for, and those accepted, since the last
// call.
func (e *evictions) take() (asked, accepted []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	asked, accepted = e.asked, e.accepted
	e.asked, e.accepted = nil, nil
	return asked, accepted
}

// nodeEvents records the Events reported, as "node reason note".
type nodeEvents struct{ got []string }

func (r *nodeEvents) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...any) {
	name := "?"
	if n, ok := regarding.(*v1.Node); ok {
		name = n.Name
	}
	r.got = append(r.got, name+" "+reason+" "+fmt.Sprintf(note, args...))
}

// take returns the events of reason recorded since the last call to take
// (every reason's events are dropped).
func (r *nodeEvents) take(reason string) []string {
	var out []string
	for _, e := range r.got {
		if strings.Fields(e)[1] == reason {
			out = append(out, e)
		}
	}
	r.got = nil
	return out
}

// evictRig is a handler with evictOnRevoke over the real cache, grants of
// 16 cpu on n1 and n2, and a watcher driven by hand.
type evictRig struct {
	h      *Handler
	c      *recordingCache
	clk    *testingclock.FakeClock
	w      *watcher
	events *nodeEvents
	ev     *evictions
	pods   map[string]*v1.Pod
}

func newEvictRig(t *testing.T, refuse map[string]int, pods ...*v1.Pod) *evictRig {
	t.Helper()
	client, ev := newEvictions(refuse)
	h, c, clk := setup(t, WithClient(client))
	h.evict = true
	h.AddGrant(mkGrant("grant-n1", "batch", "n1", "16"))
	h.AddGrant(mkGrant("grant-n2", "batch", "n2", "16"))
	r := &evictRig{h: h, c: c, clk: clk, events: &nodeEvents{}, ev: ev, pods: map[string]*v1.Pod{}}
	r.w = newWatcher(h, r.events)
	for _, p := range pods {
		if err := c.AddPod(p); err != nil {
			t.Fatal(err)
		}
		r.pods[p.Name] = p
	}
	return r
}

// grantN1 sets n1's grant to cpu.
func (r *evictRig) grantN1(cpu string) {
	r.h.UpdateGrant(mkGrant("grant-n1", "batch", "n1", "16"), mkGrant("grant-n1", "batch", "n1", cpu))
}

// terminate marks the named pods terminating in the cache, as the API
// server does once their eviction is accepted.
func (r *evictRig) terminate(t *testing.T, names []string) {
	t.Helper()
	for _, name := range names {
		old := r.pods[name]
		p := old.DeepCopy()
		p.DeletionTimestamp = &metav1.Time{Time: r.clk.Now()}
		p.ResourceVersion += "1"
		if err := r.c.UpdatePod(old, p); err != nil {
			t.Fatal(err)
		}
		r.pods[name] = p
	}
}

// pod is one of this scheduler's pods on node, requesting cpu, of
// priority prio and created age before epoch.
func pod(name, node, cpu string, prio int32, age time.Duration) *st.PodWrapper {
	return st.MakePod().Name(name).Node(node).Scheduler("batch").Req(res{"cpu": cpu}).
		Priority(prio).Created(metav1.NewTime(epoch.Add(-age)))
}

// member is pod in the gang group of quorum quorum.
func member(name, node, cpu string, prio int32, age time.Duration, group, quorum string) *v1.Pod {
	return pod(name, node, cpu, prio, age).Group(group).MinAvailable(quorum).Obj()
}

// What one check evicts when n1's grant shrinks, in the order asked.
func TestEvictAboveGrant(t *testing.T) {
	tests := []struct {
		name  string
		pods  []*v1.Pod
		n1Cap string
		want  []string
		// wantGangs are the gangs reported evicted whole.
		wantGangs []string
	}{{
		name: "pods of no gang go lowest priority first, newest first among equals, no more than needed",
		pods: []*v1.Pod{
			pod("high", "n1", "2", 100, time.Hour).Obj(), pod("low-old", "n1", "2", 0, time.Hour).Obj(),
			pod("low-new", "n1", "2", 0, time.Minute).Obj(), pod("mid", "n1", "2", 50, time.Hour).Obj(),
		},
		n1Cap: "5",
		want:  []string{"low-new", "low-old"},
	}, {
		name: "a gang at its quorum goes whole, its members on other nodes too",
		pods: []*v1.Pod{
			member("g-0", "n1", "2", 0, time.Hour, "g", "4"), member("g-1", "n1", "2", 0, time.Hour, "g", "4"),
			member("g-2", "n2", "2", 0, time.Hour, "g", "4"), member("g-3", "n2", "2", 0, time.Hour, "g", "4"),
			pod("high", "n1", "2", 100, time.Minute).Obj(),
		},
		n1Cap:     "3",
		want:      []string{"g-0", "g-1", "g-2", "g-3"},
		wantGangs: []string{"default/g"},
	}, {
		name: "an elastic gang gives only the members above its quorum that the node needs, newest first",
		pods: []*v1.Pod{
			member("e-0", "n1", "1", 0, 3*time.Hour, "e", "2"), member("e-1", "n1", "1", 0, 2*time.Hour, "e", "2"),
			member("e-2", "n1", "1", 0, time.Hour, "e", "2"), member("e-3", "n2", "1", 0, time.Hour, "e", "2"),
		},
		n1Cap: "1",
		want:  []string{"e-2", "e-1"},
	}, {
		name: "an elastic gang goes whole when its members above quorum do not suffice",
		pods: []*v1.Pod{
			member("e-0", "n1", "1", 0, 3*time.Hour, "e", "2"), member("e-1", "n1", "1", 0, 2*time.Hour, "e", "2"),
			member("e-2", "n1", "1", 0, time.Hour, "e", "2"), member("e-3", "n2", "1", 0, time.Hour, "e", "2"),
		},
		n1Cap:     "0",
		want:      []string{"e-0", "e-1", "e-2", "e-3"},
		wantGangs: []string{"default/e"},
	}, {
		name: "a pod of no gang goes before a whole gang of equal priority, even an older pod",
		pods: []*v1.Pod{
			member("r-0", "n1", "2", 0, time.Minute, "r", "2"), member("r-1", "n1", "2", 0, time.Minute, "r", "2"),
			pod("single", "n1", "2", 0, time.Hour).Obj(),
		},
		n1Cap: "4",
		want:  []string{"single"},
	}, {
		name: "a whole gang of lower priority goes before a pod of higher priority",
		pods: []*v1.Pod{
			member("r-0", "n1", "1", 0, time.Hour, "r", "2"), member("r-1", "n1", "1", 0, time.Hour, "r", "2"),
			pod("single", "n1", "2", 10, time.Minute).Obj(),
		},
		n1Cap:     "2",
		want:      []string{"r-0", "r-1"},
		wantGangs: []string{"default/r"},
	}, {
		name: "a pod that frees enough alone spares the smaller one before it",
		pods: []*v1.Pod{
			pod("small", "n1", "1", 0, time.Minute).Obj(), pod("big", "n1", "4", 0, time.Hour).Obj(),
		},
		n1Cap: "2",
		want:  []string{"big"},
	}, {
		name: "members above quorum take a whole gang's place when they suffice with what must go anyway",
		pods: []*v1.Pod{
			member("e-0", "n1", "2", 0, time.Hour, "e", "1"), member("e-1", "n1", "2", 0, time.Minute, "e", "1"),
			pod("single", "n1", "3", 10, time.Hour).Obj(),
		},
		n1Cap: "2",
		want:  []string{"e-1", "single"},
	}, {
		name: "a gang already below its quorum goes whole",
		pods: []*v1.Pod{
			member("b-0", "n1", "2", 0, time.Hour, "b", "3"), member("b-1", "n2", "2", 0, time.Hour, "b", "3"),
		},
		n1Cap:     "1",
		want:      []string{"b-0", "b-1"},
		wantGangs: []string{"default/b"},
	}, {
		name: "a terminating pod counts as gone",
		pods: []*v1.Pod{
			pod("going", "n1", "2", 100, time.Hour).Terminating().Obj(),
			pod("a", "n1", "2", 0, time.Hour).Obj(), pod("b", "n1", "2", 0, time.Hour).Obj(),
		},
		n1Cap: "4",
		want:  nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			r := newEvictRig(t, nil, tt.pods...)
			r.grantN1(tt.n1Cap)
			r.w.check(ctx)
			if asked, _ := r.ev.take(); !slices.Equal(asked, tt.want) {
				t.Errorf("evicted %v, want %v", asked, tt.want)
			}
			var gangs []string
			for _, e := range r.events.got {
				if f := strings.Fields(e); f[1] == ReasonGrantGangEviction {
					if f[0] != "n1" {
						t.Errorf("gang event on node %s, want n1: %s", f[0], e)
					}
					gangs = append(gangs, f[4])
				}
			}
			if !slices.Equal(gangs, tt.wantGangs) {
				t.Errorf("gangs reported evicted %v, want %v (events %q)", gangs, tt.wantGangs, r.events.got)
			}
			if n := len(r.events.take(ReasonGrantEviction)); n != len(tt.want) {
				t.Errorf("%d GrantEviction events, want one per pod evicted (%d)", n, len(tt.want))
			}
			// A second check while the evictions are under way evicts
			// nothing more: the pods asked for count as gone.
			r.clk.Step(time.Second)
			r.w.check(ctx)
			if asked, _ := r.ev.take(); len(asked) != 0 {
				t.Errorf("a second check evicted %v, want nothing", asked)
			}
		})
	}
}

// A gang whose eviction has begun is finished, members refused by a
// PodDisruptionBudget being asked again later, even once the node no
// longer needs it; a gang of which nothing could be evicted is decided
// again.
func TestGangEvictionIsFinished(t *testing.T) {
	gang := func() []*v1.Pod {
		return []*v1.Pod{
			member("g-0", "n1", "2", 0, time.Hour, "g", "4"), member("g-1", "n1", "2", 0, time.Hour, "g", "4"),
			member("g-2", "n2", "2", 0, time.Hour, "g", "4"), member("g-3", "n2", "2", 0, time.Hour, "g", "4"),
		}
	}
	type step struct {
		// after is how long after the previous step the check runs.
		after time.Duration
		// n1Cap, when set, is n1's grant before the check.
		n1Cap string
		want  []string
		// wantRefused is the number of GrantEvictionRefused events.
		wantRefused int
		// wantDraining is whether the gang is still being evicted
		// after the check.
		wantDraining bool
	}
	tests := []struct {
		name   string
		refuse map[string]int
		steps  []step
	}{{
		name:   "one member refused once: the others go at once, it is asked again after the retry interval",
		refuse: map[string]int{"g-2": 1},
		steps: []step{
			{n1Cap: "2", want: []string{"g-0", "g-1", "g-2", "g-3"}, wantRefused: 1, wantDraining: true},
			// The grant is back: the gang is finished all the same.
			{after: time.Second, n1Cap: "16", want: nil, wantDraining: true},
			{after: evictionRetry, want: []string{"g-2"}, wantDraining: true},
			{after: time.Second, want: nil, wantDraining: false},
		},
	}, {
		name:   "one member refused every time: asked again at every retry interval",
		refuse: map[string]int{"g-3": -1},
		steps: []step{
			{n1Cap: "2", want: []string{"g-0", "g-1", "g-2", "g-3"}, wantRefused: 1, wantDraining: true},
			{after: evictionRetry, want: []string{"g-3"}, wantRefused: 1, wantDraining: true},
			{after: evictionRetry, want: []string{"g-3"}, wantRefused: 1, wantDraining: true},
		},
	}, {
		name:   "every member refused while the node needs the room: decided and asked again",
		refuse: map[string]int{"g-0": -1, "g-1": -1, "g-2": -1, "g-3": -1},
		steps: []step{
			{n1Cap: "2", want: []string{"g-0", "g-1", "g-2", "g-3"}, wantRefused: 1, wantDraining: true},
			{after: evictionRetry, want: []string{"g-0", "g-1", "g-2", "g-3"}, wantRefused: 1, wantDraining: true},
		},
	}, {
		name:   "every member refused, then the grant is back: the untouched gang is left alone",
		refuse: map[string]int{"g-0": -1, "g-1": -1, "g-2": -1, "g-3": -1},
		steps: []step{
			{n1Cap: "2", want: []string{"g-0", "g-1", "g-2", "g-3"}, wantRefused: 1, wantDraining: true},
			{after: time.Second, n1Cap: "16", want: nil, wantDraining: true},
			{after: evictionRetry, want: nil, wantDraining: false},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			r := newEvictRig(t, tt.refuse, gang()...)
			for i, s := range tt.steps {
				r.clk.Step(s.after)
				if s.n1Cap != "" {
					r.grantN1(s.n1Cap)
				}
				r.w.check(ctx)
				asked, accepted := r.ev.take()
				if !slices.Equal(asked, s.want) {
					t.Errorf("step %d: evicted %v, want %v", i, asked, s.want)
				}
				if got := r.events.take(ReasonGrantEvictionRefused); len(got) != s.wantRefused ||
					(len(got) > 0 && !strings.Contains(got[0], "gang default/g")) {
					t.Errorf("step %d: refusal events %q, want %d naming gang default/g", i, got, s.wantRefused)
				}
				if draining := len(r.w.draining) == 1; draining != s.wantDraining {
					t.Errorf("step %d: gang being evicted = %v, want %v", i, draining, s.wantDraining)
				}
				r.terminate(t, accepted)
			}
		})
	}
}

// jobless hides the cache's JobSource.
type jobless struct{ eventhandlers.Cache }

// Without a way to list a gang's members, the handler evicts no member of
// a gang, only pods of no gang.
func TestGangsAreLeftAloneWithoutJobSource(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client, ev := newEvictions(nil)
	clk := testingclock.NewFakeClock(epoch)
	c, err := cache.New(cache.Options{SchedulerNames: []string{"batch"}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(jobless{c}, Args{Framework: "batch", EvictOnRevoke: true}, WithClock(clk), WithClient(client))
	if err != nil {
		t.Fatal(err)
	}
	h.AddNode(st.MakeNode().Name("n1").Capacity(res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
	h.AddGrant(mkGrant("grant-n1", "batch", "n1", "0"))
	for _, p := range []*v1.Pod{
		member("g-0", "n1", "2", 0, time.Minute, "g", "1"), member("g-1", "n1", "2", 0, time.Minute, "g", "1"),
		pod("single", "n1", "2", 10, time.Hour).Obj(),
	} {
		if err := c.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	w := newWatcher(h, nil)
	w.check(ctx)
	if asked, _ := ev.take(); !slices.Equal(asked, []string{"single"}) {
		t.Errorf("evicted %v, want only the pod of no gang", asked)
	}
}
