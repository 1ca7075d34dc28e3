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

package tenancy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// strictWeight is an order policy of this test only: the heavier tenant
// queue first, whatever it uses.
var strictWeight = tenancy.OrderPolicyFunc(func(s *framework.QueueSnapshot) map[string]int {
	ranks := map[string]int{}
	for name, q := range s.Queues {
		ranks[name] = -int(q.Weight)
	}
	return ranks
})

// firstPopped builds a cache whose tenant queues are ordered by the policy
// named order (registered from policies), with tenant queue a (weight 3)
// running 3 of 8 cpus and waiting with a job of priority aPrio, and b
// (weight 1) running nothing and waiting with one of priority bPrio; it
// returns the job the scheduling queue pops first.
func firstPopped(t *testing.T, order string, policies tenancy.OrderPolicies, aPrio, bPrio int32) string {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := cache.New(cache.Options{Clock: clk, Tenancy: tenancy.Options{OrderPolicy: order, OrderPolicies: policies}})
	if err != nil {
		t.Fatalf("cache.New: %v", err)
	}
	node := st.MakeNode().Name("n1").Allocatable(map[v1.ResourceName]string{"cpu": "8", "memory": "64Gi", "pods": "110"}).Obj()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("AddOrUpdateNode", c.AddOrUpdateNode(node))
	a := &framework.QueueSpec{Name: "a", Weight: 3, Borrow: true, Lend: true, Reclaimable: true, Source: "Queue a"}
	b := &framework.QueueSpec{Name: "b", Weight: 1, Borrow: true, Lend: true, Reclaimable: true, Source: "Queue b"}
	c.SetTenantQueue(tenancy.SourceOwn, "a", a)
	c.SetTenantQueue(tenancy.SourceOwn, "b", b)
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	running := st.MakePod().Name("a-running").UID("a-running").Label(framework.QueueLabel, "a").Req(cpu("3")).Obj()
	must("AddPendingPod", c.AddPendingPod(running))
	must("AssumePod", c.AssumePod(running, "n1"))
	boundPod := running.DeepCopy()
	boundPod.Spec.NodeName, boundPod.ResourceVersion = "n1", "2"
	must("AddPod", c.AddPod(boundPod))
	must("AddPendingPod", c.AddPendingPod(st.MakePod().Name("a-waits").UID("a-waits").Label(framework.QueueLabel, "a").Priority(aPrio).Req(cpu("1")).Obj()))
	must("AddPendingPod", c.AddPendingPod(st.MakePod().Name("b-waits").UID("b-waits").Label(framework.QueueLabel, "b").Priority(bPrio).Req(cpu("1")).Obj()))
	// A cycle's snapshot divides the capacity and hands the tenant queues'
	// order to the scheduling queue.
	c.TenantQueueSnapshot()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	qj, err := c.Queue().Pop(ctx)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return qj.ID.Name
}

// Another order of jobs across tenant queues is a policy registered by
// name and chosen in the options (the configuration's tenantQueueOrder),
// with no change of the cache or the scheduling queue: the default policy
// serves b, the tenant queue below its share, first; the registered one
// serves the heavier a first; Unranked leaves it to priority.
func TestRegisteredOrderPolicyChangesTheSchedulingQueue(t *testing.T) {
	policies := tenancy.InTreeOrderPolicies()
	if err := policies.Register("StrictWeight", strictWeight); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		order        string
		aPrio, bPrio int32
		want         string
	}{
		{order: "", aPrio: 1, bPrio: 100, want: "b-waits"},
		{order: tenancy.FairShareOrder, aPrio: 1, bPrio: 100, want: "b-waits"},
		{order: "StrictWeight", aPrio: 1, bPrio: 100, want: "a-waits"},
		{order: tenancy.UnrankedOrder, aPrio: 1, bPrio: 100, want: "b-waits"},
		{order: tenancy.FairShareOrder, aPrio: 100, bPrio: 1, want: "b-waits"},
		{order: "StrictWeight", aPrio: 100, bPrio: 1, want: "a-waits"},
		{order: tenancy.UnrankedOrder, aPrio: 100, bPrio: 1, want: "a-waits"},
	} {
		if got := firstPopped(t, tt.order, policies, tt.aPrio, tt.bPrio); got != tt.want {
			t.Errorf("order policy %q, priorities a %d b %d: popped %s first, want %s", tt.order, tt.aPrio, tt.bPrio, got, tt.want)
		}
	}
	// Without the registration, the name is unknown.
	_, err := cache.New(cache.Options{Tenancy: tenancy.Options{OrderPolicy: "StrictWeight"}})
	if err == nil || !strings.Contains(err.Error(), `unknown tenant queue order policy "StrictWeight"`) || !strings.Contains(err.Error(), tenancy.FairShareOrder) {
		t.Errorf("cache.New with an unregistered order policy: %v, want an error naming it and the registered ones", err)
	}
}
