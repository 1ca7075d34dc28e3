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

package cache_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// probeCache is the cache as the handler sees it, recording what node n1
// looked like right after each call that takes a pod out of the queue: a
// pod leaving the queue before it is accounted as bound would make its
// node look free for a moment.
type probeCache struct {
	*cache.SchedulerCache

	mu       sync.Mutex
	idleSeen []int64
	errs     []error
}

func (p *probeCache) record(err error) {
	n, _ := p.NodeInfo("n1")
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idleSeen = append(p.idleSeen, n.Idle().MilliCPU)
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

func (p *probeCache) RemovePendingPod(pod *v1.Pod) error {
	err := p.SchedulerCache.RemovePendingPod(pod)
	p.record(err)
	return err
}

func (p *probeCache) AddPod(pod *v1.Pod) error {
	err := p.SchedulerCache.AddPod(pod)
	p.record(err)
	return err
}

func nodeIdleCPU(c *cache.SchedulerCache, name string) int64 {
	n, ok := c.NodeInfo(name)
	if !ok {
		return -1
	}
	return n.Idle().MilliCPU
}

func n1() *v1.Node {
	return st.MakeNode().Name("n1").Capacity(res{"cpu": "10", "memory": "10Gi", "pods": "110"}).Obj()
}

func gangPod(name string) *v1.Pod {
	return st.MakePod().Name(name).Group("g").MinAvailable("2").Req(res{"cpu": "1"}).Obj()
}

func boundTo(pod *v1.Pod, node, rv string) *v1.Pod {
	b := pod.DeepCopy()
	b.Spec.NodeName = node
	b.ResourceVersion = rv
	return b
}

func mustOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

var gangID = framework.JobID{Namespace: "default", Name: "g", Gang: true}

// The default handler turns the informer's report that an assumed pod is
// bound into one AddPod. The pod ends bound, counted once, and its room
// never looks free.
func TestDefaultHandlerConfirmsAssumedPod(t *testing.T) {
	tests := []struct {
		name     string
		node     string // where the informer reports the pod bound
		finished bool   // FinishBinding before the informer's report
		wantIdle int64  // of n1 at the end
	}{
		{name: "after FinishBinding", node: "n1", finished: true, wantIdle: 8000},
		{name: "before FinishBinding", node: "n1", wantIdle: 8000},
		{name: "bound elsewhere", node: "n2", finished: true, wantIdle: 9000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := cache.New(cache.Options{})
			mustOK(t, "New", err)
			probe := &probeCache{SchedulerCache: c}
			h, err := defaulthandler.New(t.Context(), probe, nil, nil)
			mustOK(t, "defaulthandler.New", err)
			mustOK(t, "AddOrUpdateNode", c.AddOrUpdateNode(n1()))
			mustOK(t, "AddOrUpdateNode", c.AddOrUpdateNode(st.MakeNode().Name("n2").Capacity(res{"cpu": "10", "pods": "110"}).Obj()))
			a, b := gangPod("a"), gangPod("b")
			h.AddPod(a)
			h.AddPod(b)

			qj, err := c.Queue().Pop(t.Context())
			mustOK(t, "Pop", err)
			mustOK(t, "AssumePod a", c.AssumePod(a, "n1"))
			mustOK(t, "AssumePod b", c.AssumePod(b, "n1"))
			c.Queue().Done(qj.ID)
			if tt.finished {
				mustOK(t, "FinishBinding", c.FinishBinding(a))
			}

			h.UpdatePod(a, boundTo(a, tt.node, "2"))
			if !tt.finished {
				mustOK(t, "FinishBinding", c.FinishBinding(a))
			}

			probe.mu.Lock()
			seen, errs := probe.idleSeen, probe.errs
			probe.mu.Unlock()
			if len(seen) != 1 || seen[0] != tt.wantIdle {
				t.Errorf("n1 idle CPU after each call = %v, want one call leaving %dm: the room must stay taken", seen, tt.wantIdle)
			}
			if len(errs) != 0 {
				t.Errorf("the cache rejected the handler's calls: %v", errs)
			}
			if idle := nodeIdleCPU(c, "n1"); idle != tt.wantIdle {
				t.Errorf("n1 idle CPU = %dm, want %dm", idle, tt.wantIdle)
			}
			job, ok := c.Job(gangID)
			if !ok {
				t.Fatal("the job is gone")
			}
			if got := job.Counts(); got != (framework.TaskCounts{Assumed: 1, Bound: 1}) {
				t.Errorf("job counts = %+v, want 1 assumed, 1 bound", got)
			}
			if ta := job.Tasks[a.UID]; ta.Status != framework.TaskBound || ta.NodeName != tt.node {
				t.Errorf("task a = %s on %q, want Bound on %q", ta.Status, ta.NodeName, tt.node)
			}
			// b's bind is still in flight: the job waits, holding b only.
			if l := c.Queue().Lengths(); l != (schedulingqueue.Lengths{AwaitingBinding: 1}) {
				t.Errorf("queue = %+v, want the job awaiting binding", l)
			}
			// b is confirmed too: the job leaves the queue.
			h.UpdatePod(b, boundTo(b, "n1", "3"))
			if l := c.Queue().Lengths(); l != (schedulingqueue.Lengths{}) {
				t.Errorf("queue = %+v, want empty", l)
			}
			if idle := nodeIdleCPU(c, "n1"); idle != tt.wantIdle {
				t.Errorf("n1 idle CPU = %dm after b was confirmed where it was assumed, want still %dm", idle, tt.wantIdle)
			}
		})
	}
}

// The whole path, informer and dispatcher included: an assumed pod the
// informer reports bound ends bound; one it reports deleted while its bind
// is in flight is dropped at once.
func TestInformerConfirmsAndDeletesAssumedPods(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := fake.NewClientset()
	_, err := client.CoreV1().Nodes().Create(ctx, n1(), metav1.CreateOptions{})
	mustOK(t, "creating n1", err)
	c, err := cache.New(cache.Options{Client: client, Resources: []framework.EventResource{}})
	mustOK(t, "New", err)
	h, err := defaulthandler.New(ctx, c, nil, nil)
	mustOK(t, "defaulthandler.New", err)
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	inf := custominformer.New(src, &v1.Pod{}, custominformer.Options{Name: "pods"})
	mustOK(t, "AddCustomInformer", c.AddCustomInformer(cache.CustomInformer{Name: "pods", Resource: framework.Pod, Informer: inf}))
	mustOK(t, "Run", c.Run(ctx, h))
	mustOK(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))

	poll := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, wait.ForeverTestTimeout, true,
			func(context.Context) (bool, error) { return cond(), nil })
		if err != nil {
			t.Fatalf("waiting for %s: %v; dump: %+v", what, err, c.Dump().Jobs)
		}
	}
	idle := func() int64 { return nodeIdleCPU(c, "n1") }
	a, b := gangPod("a"), gangPod("b")
	src.Add(a)
	src.Add(b)
	poll("the gang", func() bool {
		j, ok := c.Job(gangID)
		return ok && len(j.Tasks) == 2 && idle() == 10000
	})
	qj, err := c.Queue().Pop(ctx)
	mustOK(t, "Pop", err)
	mustOK(t, "AssumePod a", c.AssumePod(a, "n1"))
	mustOK(t, "AssumePod b", c.AssumePod(b, "n1"))
	c.Queue().Done(qj.ID)
	mustOK(t, "FinishBinding a", c.FinishBinding(a))
	if got := idle(); got != 8000 {
		t.Fatalf("idle = %dm after assuming, want 8000m", got)
	}

	src.Modify(boundTo(a, "n1", ""))
	poll("a bound", func() bool {
		j, _ := c.Job(gangID)
		return j.Tasks[a.UID].Status == framework.TaskBound
	})
	if got := idle(); got != 8000 {
		t.Errorf("idle = %dm after a was confirmed, want 8000m", got)
	}

	// b is deleted while its bind is in flight.
	src.Delete(b)
	poll("b dropped", func() bool {
		j, _ := c.Job(gangID)
		_, ok := j.Tasks[b.UID]
		return !ok
	})
	if got := idle(); got != 9000 {
		t.Errorf("idle = %dm after b was deleted, want 9000m", got)
	}
	if err := c.ForgetPod(b); err == nil {
		t.Error("ForgetPod of the deleted pod: no error")
	}
	if l := c.Queue().Lengths(); l != (schedulingqueue.Lengths{}) {
		t.Errorf("queue = %+v, want empty", l)
	}
	d := c.Dump()
	if len(d.Nodes) != 1 || fmt.Sprint(d.Nodes[0].Pods) != "[default/a]" || len(d.Nodes[0].AssumedPods) != 0 {
		t.Errorf("nodes = %+v", d.Nodes)
	}
}
