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

package tenancy

import (
	"maps"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// fakeSchedulingQueue records what Tenants tells the scheduling queue.
type fakeSchedulingQueue struct {
	mu         sync.Mutex
	ranks      map[string]int
	rankCalls  int
	jobTenants map[framework.JobID]string
	moves      []framework.ClusterEvent
}

func newFakeSchedulingQueue() *fakeSchedulingQueue {
	return &fakeSchedulingQueue{jobTenants: map[framework.JobID]string{}}
}

func (f *fakeSchedulingQueue) SetJobTenantQueue(id framework.JobID, tenantQueue string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobTenants[id] = tenantQueue
}

func (f *fakeSchedulingQueue) SetTenantQueueRanks(ranks map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ranks, f.rankCalls = maps.Clone(ranks), f.rankCalls+1
}

func (f *fakeSchedulingQueue) RoomWaiters() map[string]framework.RoomWaiter { return nil }

func (f *fakeSchedulingQueue) MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, _, _ any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moves = append(f.moves, event)
}

// The scheduling queue's ranks keep the policy's order, dense from 1
// (0 is for tenant queues that do not exist), with the default tenant
// queue named "".
func TestSchedulingRanks(t *testing.T) {
	got := schedulingRanks(map[string]int{"a": -3, "b": 10, framework.DefaultQueue: 10, "c": 7})
	want := map[string]int{"a": 1, "c": 2, "b": 3, "": 3}
	if !maps.Equal(got, want) {
		t.Errorf("schedulingRanks = %v, want %v", got, want)
	}
	if got := schedulingRanks(nil); got != nil {
		t.Errorf("schedulingRanks(nil) = %v, want nil (every tenant queue equal)", got)
	}
}

// FairShare serves first the tenant queue whose use is the smallest part
// of its fair share, level by level; equal ones in name order.
func TestFairShareOrder(t *testing.T) {
	state := func(name, parent string, depth int, used, fair int64) *framework.QueueState {
		return &framework.QueueState{QueueSpec: framework.QueueSpec{Name: name, Parent: parent}, Depth: depth,
			Allocated: framework.ResourceAmounts{v1.ResourceCPU: used}, FairShare: framework.ResourceAmounts{v1.ResourceCPU: fair}}
	}
	s := &framework.QueueSnapshot{Queues: map[string]*framework.QueueState{
		// org-x uses half its share, org-y a quarter: all of org-y's
		// children go before org-x's, whatever their own use.
		"org-x": state("org-x", "", 1, 2000, 4000), "x1": state("x1", "org-x", 2, 0, 2000),
		"org-y": state("org-y", "", 1, 1000, 4000), "y1": state("y1", "org-y", 2, 1000, 2000), "y2": state("y2", "org-y", 2, 0, 2000),
		"z": state("z", "", 1, 1000, 4000),
	}}
	ranks := FairShare(s)
	order := make([]string, len(ranks))
	for name, r := range ranks {
		order[r] = name
	}
	if got, want := strings.Join(order, ","), "org-y,z,y2,y1,org-x,x1"; got != want {
		t.Errorf("FairShare order %s, want %s", got, want)
	}
}

// Policies are looked up by name; a name is registered once; New refuses
// an unknown one and Unranked ranks every tenant queue equal.
func TestOrderPolicies(t *testing.T) {
	r := InTreeOrderPolicies()
	if err := r.Register(FairShareOrder, OrderPolicyFunc(FairShare)); err == nil {
		t.Errorf("registering %s twice succeeded", FairShareOrder)
	}
	if _, err := r.Lookup("Nope"); err == nil || !strings.Contains(err.Error(), "FairShare, Unranked") {
		t.Errorf("Lookup of an unknown policy: %v, want an error naming the registered ones", err)
	}
	if _, err := New(newFakeSchedulingQueue(), Options{OrderPolicy: "Nope"}); err == nil {
		t.Errorf("New with an unknown policy succeeded")
	}
	for _, tt := range []struct {
		policy string
		want   map[string]int
	}{
		{policy: UnrankedOrder, want: nil},
		{policy: FairShareOrder, want: map[string]int{"a": 1, "": 2}},
	} {
		q := newFakeSchedulingQueue()
		tn, err := New(q, Options{OrderPolicy: tt.policy})
		if err != nil {
			t.Fatal(err)
		}
		tn.SetQueue(SourceOwn, "a", &framework.QueueSpec{Name: "a", Weight: 1, Borrow: true, Lend: true, Source: "Queue a"})
		if s := tn.Snapshot(func() resources.Resource { return resources.Resource{MilliCPU: 4000} }); s == nil || s.Queues["a"] == nil {
			t.Fatalf("%s: snapshot %+v, want tenant queue a", tt.policy, s)
		}
		if q.rankCalls == 0 || !maps.Equal(q.ranks, tt.want) {
			t.Errorf("%s: the scheduling queue got ranks %v (%d calls), want %v", tt.policy, q.ranks, q.rankCalls, tt.want)
		}
		if len(q.moves) != 1 || q.moves[0] != framework.EventQueueChange {
			t.Errorf("%s: SetQueue raised %v, want one EventQueueChange", tt.policy, q.moves)
		}
		// Deleting the last tenant queue turns the order off.
		tn.SetQueue(SourceOwn, "a", nil)
		if q.ranks != nil {
			t.Errorf("%s: ranks %v after the last tenant queue left, want nil", tt.policy, q.ranks)
		}
	}
}
