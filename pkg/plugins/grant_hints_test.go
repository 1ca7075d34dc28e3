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
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/twolevel"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// grantVariant is this framework's grant on the node, nil for none.
type grantVariant *v1.ResourceList

func grantVariants() []grantVariant {
	list := func(kv ...string) grantVariant {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return &l
	}
	return []grantVariant{nil, list("cpu", "1", "memory", "8Gi"), list("cpu", "4", "memory", "8Gi"),
		list("cpu", "4"), list("memory", "8Gi")}
}

func describeGrant(g grantVariant) string {
	if g == nil {
		return "none"
	}
	return fmt.Sprint(*g)
}

// The same rule holds for grants: for every change of this framework's
// grant on a node (through the real two-level handler) and every pod that
// NodeResourcesFit rejected there before the change, the job is retried
// exactly when Fit passes the pod after it.
func TestGrantHintsAgreeWithFit(t *testing.T) {
	factory, err := plugins.NewInTreeRegistry().Lookup("NodeResourcesFit")
	if err != nil {
		t.Fatal(err)
	}
	pl, err := factory(t.Context(), nil, testutil.NewHandle())
	if err != nil {
		t.Fatal(err)
	}
	fit := pl.(framework.FilterPlugin)
	var pods []*v1.Pod
	for _, req := range []res{{}, {"cpu": "2"}, {"memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}, {"cpu": "3"}} {
		pods = append(pods, st.MakePod().Name(fmt.Sprintf("p-%d", len(pods))).Scheduler("batch").Req(req).Obj())
	}
	outcomes := map[bool]int{}
	for _, oldG := range grantVariants() {
		for _, newG := range grantVariants() {
			if oldG == newG {
				continue
			}
			for _, pod := range pods {
				env := newGrantEnv(t)
				env.setGrant(oldG)
				if fit.Filter(t.Context(), nil, pod, env.nodeInfo()).IsSuccess() {
					continue // not rejected: nothing for the hint to undo
				}
				env.park(pod, fit)
				env.setGrant(newG)
				want := fit.Filter(t.Context(), nil, pod, env.nodeInfo()).IsSuccess()
				got := env.c.Queue().Lengths().Unschedulable == 0
				if got != want {
					t.Errorf("pod %s, grant %s -> %s: retried %v, Fit passes after the change %v",
						pod.Name, describeGrant(oldG), describeGrant(newG), got, want)
				}
				outcomes[want]++
			}
		}
	}
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Errorf("outcomes exercised %v; want both a retry and none", outcomes)
	}
}

type grantEnv struct {
	t   *testing.T
	c   *cache.SchedulerCache
	h   *twolevel.Handler
	clk *testingclock.FakeClock
	rv  int
	cur *v1alpha1.Grant
}

func newGrantEnv(t *testing.T) *grantEnv {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := cache.New(cache.Options{Clock: clk, SchedulerNames: []string{"batch"}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := twolevel.New(c, twolevel.Args{Framework: "batch"}, twolevel.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	h.AddNode(st.MakeNode().Name("n1").Capacity(res{"cpu": "8", "memory": "16Gi", "pods": "10"}).Obj())
	return &grantEnv{t: t, c: c, h: h, clk: clk}
}

// setGrant makes g this framework's only grant on n1.
func (e *grantEnv) setGrant(g grantVariant) {
	if g == nil {
		if e.cur != nil {
			e.h.DeleteGrant(e.cur)
			e.cur = nil
		}
		return
	}
	e.rv++
	next := &v1alpha1.Grant{
		ObjectMeta: metav1.ObjectMeta{Name: "batch.n1", ResourceVersion: fmt.Sprint(e.rv)},
		Spec:       v1alpha1.GrantSpec{Framework: "batch", NodeName: "n1", Issuer: "test", Resources: *g},
	}
	if e.cur == nil {
		e.h.AddGrant(next)
	} else {
		e.h.UpdateGrant(e.cur, next)
	}
	e.cur = next
}

func (e *grantEnv) nodeInfo() *framework.NodeInfo {
	info, ok := e.c.NodeInfo("n1")
	if !ok {
		e.t.Fatal("n1 not in the cache")
	}
	return info
}

// park queues pod's job and parks it as rejected by Fit, with Fit's events.
func (e *grantEnv) park(pod *v1.Pod, fit framework.FilterPlugin) {
	e.h.AddPod(pod)
	qj, err := e.c.Queue().Pop(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	var events []framework.PluginEvent
	for _, ev := range fit.(framework.EnqueueExtensions).EventsToRegister() {
		events = append(events, framework.PluginEvent{Plugin: "NodeResourcesFit", ClusterEventWithHint: ev})
	}
	if err := e.c.Queue().AddUnschedulable(qj, schedulingqueue.Attempt{Reason: "rejected", Events: events}); err != nil {
		e.t.Fatal(err)
	}
	e.clk.Step(schedulingqueue.DefaultMaxBackoff)
}
