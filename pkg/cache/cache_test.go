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
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTestCache returns a cache with a fake clock and private metrics.
func newTestCache(t *testing.T, opts Options) (*SchedulerCache, *testingclock.FakeClock) {
	t.Helper()
	fakeClock := testingclock.NewFakeClock(epoch)
	if opts.Clock == nil {
		opts.Clock = fakeClock
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, fakeClock
}

func mustNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

type res = map[v1.ResourceName]string

func bigNode(name string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: "10", v1.ResourceMemory: "10Gi", v1.ResourcePods: "110"}).Obj()
}

func TestNewValidatesOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"negative backoff", Options{Queue: schedulingqueue.Options{InitialBackoff: -time.Second}}, "must not be negative"},
		{"initial above max", Options{Queue: schedulingqueue.Options{InitialBackoff: time.Minute, MaxBackoff: time.Second}}, "exceeds max backoff"},
		{"negative assumed pod TTL", Options{AssumedPodTTL: -time.Second}, "negative assumed pod TTL"},
		{"negative resync", Options{ResyncPeriod: -time.Second}, "negative resync period"},
		{"empty scheduler name", Options{SchedulerNames: []string{"a", ""}}, "empty scheduler name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestIsResponsibleFor(t *testing.T) {
	tests := []struct {
		names     []string
		scheduler string
		want      bool
	}{
		{nil, "batch-scheduler", true},
		{nil, "default-scheduler", false},
		{[]string{"a", "b"}, "b", true},
		{[]string{"a", "b"}, "batch-scheduler", false},
	}
	for _, tt := range tests {
		c, _ := newTestCache(t, Options{SchedulerNames: tt.names})
		pod := st.MakePod().Name("p").Scheduler(tt.scheduler).Obj()
		if got := c.IsResponsibleFor(pod); got != tt.want {
			t.Errorf("names %v, scheduler %q: IsResponsibleFor = %v, want %v", tt.names, tt.scheduler, got, tt.want)
		}
	}
}

func TestAccounting(t *testing.T) {
	tests := []struct {
		name        string
		pod         *v1.Pod
		wantCPU     int64 // millicores requested on the node
		wantMem     int64
		wantPods    int64
		wantCounted bool
	}{
		{
			name:    "containers add up",
			pod:     st.MakePod().Name("p").Node("n1").Req(res{v1.ResourceCPU: "500m", v1.ResourceMemory: "1Gi"}).Container("c2", res{v1.ResourceCPU: "250m"}).Obj(),
			wantCPU: 750, wantMem: 1 << 30, wantPods: 1, wantCounted: true,
		},
		{
			name:    "init container larger than the containers wins",
			pod:     st.MakePod().Name("p").Node("n1").Req(res{v1.ResourceCPU: "500m"}).InitReq(res{v1.ResourceCPU: "2"}).Obj(),
			wantCPU: 2000, wantPods: 1, wantCounted: true,
		},
		{
			name:    "sidecar adds to the containers",
			pod:     st.MakePod().Name("p").Node("n1").Req(res{v1.ResourceCPU: "500m"}).SidecarReq(res{v1.ResourceCPU: "200m"}).Obj(),
			wantCPU: 700, wantPods: 1, wantCounted: true,
		},
		{
			name:    "overhead is added",
			pod:     st.MakePod().Name("p").Node("n1").Req(res{v1.ResourceCPU: "500m"}).Overhead(res{v1.ResourceCPU: "100m", v1.ResourceMemory: "64Mi"}).Obj(),
			wantCPU: 600, wantMem: 64 << 20, wantPods: 1, wantCounted: true,
		},
		{
			name:    "running pod is counted",
			pod:     st.MakePod().Name("p").Node("n1").Phase(v1.PodRunning).Req(res{v1.ResourceCPU: "1"}).Obj(),
			wantCPU: 1000, wantPods: 1, wantCounted: true,
		},
		{
			name:    "unknown phase is counted",
			pod:     st.MakePod().Name("p").Node("n1").Phase(v1.PodUnknown).Req(res{v1.ResourceCPU: "1"}).Obj(),
			wantCPU: 1000, wantPods: 1, wantCounted: true,
		},
		{
			name:    "terminating pod is counted until removed",
			pod:     st.MakePod().Name("p").Node("n1").Phase(v1.PodRunning).Terminating().Req(res{v1.ResourceCPU: "1"}).Obj(),
			wantCPU: 1000, wantPods: 1, wantCounted: true,
		},
		{
			name: "succeeded pod is kept but not counted",
			pod:  st.MakePod().Name("p").Node("n1").Phase(v1.PodSucceeded).Req(res{v1.ResourceCPU: "1"}).Obj(),
		},
		{
			name: "failed pod is kept but not counted",
			pod:  st.MakePod().Name("p").Node("n1").Phase(v1.PodFailed).Req(res{v1.ResourceCPU: "1"}).Obj(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCache(t, Options{})
			mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
			mustNoErr(t, "AddPod", c.AddPod(tt.pod))

			ni, ok := c.NodeInfo("n1")
			if !ok {
				t.Fatal("node n1 missing")
			}
			if len(ni.Pods) != 1 || ni.Pods[0].Counted != tt.wantCounted {
				t.Fatalf("pods on node = %v, want the pod with Counted=%v", ni.Pods, tt.wantCounted)
			}
			want := resources.Resource{MilliCPU: tt.wantCPU, Memory: tt.wantMem, Pods: tt.wantPods}
			if got := ni.Requested; got.String() != want.String() {
				t.Errorf("requested = %v, want %v", got, want)
			}
			idle, ok := nodeIdle(c, "n1")
			if !ok {
				t.Fatal("NodeIdle: not ok")
			}
			if wantIdle := (resources.Resource{MilliCPU: 10000 - tt.wantCPU, Memory: 10<<30 - tt.wantMem, Pods: 110 - tt.wantPods}); idle.String() != wantIdle.String() {
				t.Errorf("idle = %v, want %v", idle, wantIdle)
			}

			mustNoErr(t, "RemovePod", deletePod(c, tt.pod))
			if idle, _ := nodeIdle(c, "n1"); idle.MilliCPU != 10000 || idle.Pods != 110 {
				t.Errorf("idle after RemovePod = %v, want the whole node", idle)
			}
			if _, ok := c.Job(dialects.Resolver().JobID(tt.pod)); ok {
				t.Error("job still there after its only pod was removed")
			}
		})
	}
}

func TestUpdatePod(t *testing.T) {
	cpu := func(v string) *st.PodWrapper {
		return st.MakePod().Name("p").Node("n1").Phase(v1.PodRunning).Req(res{v1.ResourceCPU: v})
	}
	tests := []struct {
		name     string
		old, new *v1.Pod
		// want maps node name to requested millicores; a missing node must
		// not exist.
		want map[string]int64
	}{
		{"in-place resize", cpu("1").Obj(), cpu("3").Obj(), map[string]int64{"n1": 3000, "n2": 0}},
		{"phase to succeeded frees the node", cpu("1").Obj(), cpu("1").Phase(v1.PodSucceeded).Obj(), map[string]int64{"n1": 0, "n2": 0}},
		{"terminating stays counted", cpu("1").Obj(), cpu("1").Terminating().Obj(), map[string]int64{"n1": 1000, "n2": 0}},
		{"move to another node", cpu("1").Obj(), cpu("1").Node("n2").Obj(), map[string]int64{"n1": 0, "n2": 1000}},
		{"move to an unknown node makes a placeholder", cpu("1").Obj(), cpu("1").Node("n3").Obj(), map[string]int64{"n1": 0, "n2": 0, "n3": 1000}},
		{"unknown pod is added", nil, cpu("2").Obj(), map[string]int64{"n1": 2000, "n2": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCache(t, Options{})
			mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
			mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n2")))
			old := tt.old
			if old != nil {
				mustNoErr(t, "AddPod", c.AddPod(old))
			} else {
				old = tt.new
			}
			mustNoErr(t, "UpdatePod", c.UpdatePod(old, tt.new))
			for node, want := range tt.want {
				ni, ok := c.NodeInfo(node)
				if !ok {
					t.Fatalf("node %s missing", node)
				}
				if ni.Requested.MilliCPU != want {
					t.Errorf("node %s: requested cpu = %dm, want %dm", node, ni.Requested.MilliCPU, want)
				}
			}
			d := c.Dump()
			if len(d.Nodes) != len(tt.want) {
				t.Errorf("dump has %d nodes, want %d: %+v", len(d.Nodes), len(tt.want), d.Nodes)
			}
			total := 0
			for _, n := range d.Nodes {
				total += len(n.Pods)
			}
			if total != 1 {
				t.Errorf("the pod is on %d nodes, want 1: %+v", total, d.Nodes)
			}
		})
	}
}

func TestRemoveUnknown(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	before := c.Dump()
	pod := st.MakePod().Name("ghost").Node("n1").Obj()
	if err := deletePod(c, pod); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "default/ghost") {
		t.Errorf("RemovePod of an unknown pod: got %v, want ErrNotFound naming the pod", err)
	}
	if err := c.RemovePendingPod(pod); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemovePendingPod of an unknown pod: got %v, want ErrNotFound", err)
	}
	if err := c.RemoveNode(bigNode("nope")); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("RemoveNode of an unknown node: got %v, want ErrNotFound naming it", err)
	}
	if after := c.Dump(); after.Generation != before.Generation || len(after.Nodes) != 1 || len(after.Jobs) != 0 {
		t.Errorf("state changed: before %+v, after %+v", before, after)
	}
}

func TestWrongStateErrors(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	pending := st.MakePod().Name("p").Obj()
	bound := st.MakePod().Name("p").Node("n1").Obj()
	if err := c.AddPod(pending); !errors.Is(err, ErrWrongState) {
		t.Errorf("AddPod of an unassigned pod: got %v, want ErrWrongState", err)
	}
	if err := c.UpdatePod(pending, pending); !errors.Is(err, ErrWrongState) {
		t.Errorf("UpdatePod to an unassigned pod: got %v, want ErrWrongState", err)
	}
	if err := c.AddPendingPod(bound); !errors.Is(err, ErrWrongState) {
		t.Errorf("AddPendingPod of an assigned pod: got %v, want ErrWrongState", err)
	}
	mustNoErr(t, "AddPod", c.AddPod(bound))
	if err := c.UpdatePendingPod(pending, pending); !errors.Is(err, ErrWrongState) || !strings.Contains(err.Error(), `"n1"`) {
		t.Errorf("UpdatePendingPod of a bound pod: got %v, want ErrWrongState naming the node", err)
	}
	if err := c.AddOrUpdateNode(&v1.Node{}); err == nil {
		t.Error("AddOrUpdateNode of a node without name: no error")
	}
	if err := c.RemoveNode(nil); err == nil {
		t.Error("RemoveNode(nil): no error")
	}
}

func TestPlaceholders(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	p1 := st.MakePod().Name("p1").Node("n1").Phase(v1.PodRunning).Req(res{v1.ResourceCPU: "1"}).Obj()
	p2 := st.MakePod().Name("p2").Node("n1").Phase(v1.PodRunning).Req(res{v1.ResourceCPU: "2"}).Obj()

	// Pods before their node: a placeholder holds them and is not
	// schedulable.
	mustNoErr(t, "AddPod p1", c.AddPod(p1))
	mustNoErr(t, "AddPod p2", c.AddPod(p2))
	ni, ok := c.NodeInfo("n1")
	if !ok || !ni.Placeholder || ni.Node != nil || len(ni.Pods) != 2 || ni.Requested.MilliCPU != 3000 {
		t.Fatalf("before the node: framework.NodeInfo = %+v, ok=%v; want a placeholder with both pods", ni, ok)
	}
	if _, ok := nodeIdle(c, "n1"); ok {
		t.Error("NodeIdle of a placeholder: ok")
	}
	if got := metricstest.GaugeValue(t, c.metrics.CacheSize.WithLabelValues(metrics.CachePlaceholderNodes)); got != 1 {
		t.Errorf("placeholder gauge = %v, want 1", got)
	}

	// The node fills the placeholder.
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	idle, ok := nodeIdle(c, "n1")
	if !ok || idle.MilliCPU != 7000 {
		t.Fatalf("after the node: idle = %v, ok=%v; want 7000m", idle, ok)
	}

	// Deleting the node leaves a placeholder holding the pods; the dump
	// shows it.
	mustNoErr(t, "RemoveNode", c.RemoveNode(bigNode("n1")))
	if _, ok := nodeIdle(c, "n1"); ok {
		t.Error("NodeIdle after RemoveNode: ok")
	}
	d := c.Dump()
	if len(d.Nodes) != 1 || !d.Nodes[0].Placeholder || strings.Join(d.Nodes[0].Pods, ",") != "default/p1,default/p2" {
		t.Fatalf("dump nodes = %+v, want placeholder n1 with p1 and p2", d.Nodes)
	}
	if d.Nodes[0].Schedulable.MilliCPU != 0 || d.Nodes[0].Requested.MilliCPU != 3000 {
		t.Errorf("placeholder accounting = %+v", d.Nodes[0])
	}
	if err := c.RemoveNode(bigNode("n1")); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemoveNode of a placeholder: got %v, want ErrNotFound", err)
	}

	// The placeholder goes with its last pod.
	mustNoErr(t, "RemovePod p1", deletePod(c, p1))
	if _, ok := c.NodeInfo("n1"); !ok {
		t.Fatal("placeholder gone while it still has a pod")
	}
	mustNoErr(t, "RemovePod p2", deletePod(c, p2))
	if _, ok := c.NodeInfo("n1"); ok {
		t.Fatal("placeholder still there after its last pod left")
	}
	if got := metricstest.GaugeValue(t, c.metrics.CacheSize.WithLabelValues(metrics.CachePlaceholderNodes)); got != 0 {
		t.Errorf("placeholder gauge = %v, want 0", got)
	}

	// A node without pods is simply removed.
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n2")))
	mustNoErr(t, "RemoveNode", c.RemoveNode(bigNode("n2")))
	if _, ok := c.NodeInfo("n2"); ok {
		t.Error("empty node still there after RemoveNode")
	}
}

func TestNodeUpdateChangesAllocatable(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("p").Node("n1").Req(res{v1.ResourceCPU: "1"}).Obj()))
	before, _ := c.NodeInfo("n1")
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(st.MakeNode().Name("n1").Capacity(res{v1.ResourceCPU: "4", v1.ResourcePods: "10"}).Obj()))
	after, _ := c.NodeInfo("n1")
	if idle := after.Idle(); idle.MilliCPU != 3000 || idle.Pods != 9 {
		t.Errorf("idle = %v, want cpu=3000m pods=9", idle)
	}
	if after.Generation <= before.Generation {
		t.Errorf("generation did not grow: %d -> %d", before.Generation, after.Generation)
	}
}

// The cache shares the informer's objects instead of copying them (a copy
// of every pod would double the scheduler's memory), and must therefore
// never modify them.
func TestCacheSharesAndNeverModifiesObjects(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	node := bigNode("n1")
	pod := st.MakePod().Name("p").Node("n1").Req(res{v1.ResourceCPU: "1"}).Obj()
	pending := st.MakePod().Name("q").Req(res{v1.ResourceCPU: "1"}).Obj()
	nodeBefore, podBefore, pendingBefore := node.DeepCopy(), pod.DeepCopy(), pending.DeepCopy()
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(node))
	mustNoErr(t, "AddPod", c.AddPod(pod))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(pending))
	finished := pod.DeepCopy()
	finished.Status.Phase = v1.PodSucceeded
	mustNoErr(t, "UpdatePod", c.UpdatePod(pod, finished))
	mustNoErr(t, "RemoveNode", c.RemoveNode(node))
	_ = c.Dump()
	if !equality.Semantic.DeepEqual(node, nodeBefore) || !equality.Semantic.DeepEqual(pod, podBefore) || !equality.Semantic.DeepEqual(pending, pendingBefore) {
		t.Error("the cache modified an object it was handed")
	}
	ni, ok := c.NodeInfo("n1")
	// A bound pod is kept as a record that shares the pod's own parts.
	if !ok || len(ni.Pods) != 1 || ni.Pods[0].GetUID() != finished.UID || ni.Pods[0].Phase() != v1.PodSucceeded ||
		&ni.Pods[0].Containers()[0] != &finished.Spec.Containers[0] {
		t.Errorf("the cache should keep the parts of the object it was handed, by reference; got %+v", ni)
	}
}

func TestJobs(t *testing.T) {
	gang := func(name string) *st.PodWrapper { return st.MakePod().Name(name).Group("g") }
	tests := []struct {
		name      string
		pods      []*v1.Pod
		id        framework.JobID
		wantMin   int32
		wantErr   string // substring of the validation error; "" for none
		wantTasks int
	}{
		{"single pod", []*v1.Pod{st.MakePod().Name("solo").Obj()},
			framework.JobID{Namespace: "default", Name: "solo"}, 1, "", 1},
		{"gang with min-available", []*v1.Pod{gang("a").MinAvailable("2").Obj(), gang("b").MinAvailable("2").Obj(), gang("c").MinAvailable("2").Obj()},
			framework.JobID{Namespace: "default", Name: "g", Gang: true}, 2, "", 3},
		{"gang without min-available declares no quorum", []*v1.Pod{gang("a").Obj(), gang("b").Obj()},
			framework.JobID{Namespace: "default", Name: "g", Gang: true}, 0, "declares no quorum: set annotation scheduling.k8s.io/min-available", 2},
		{"non-integer min-available", []*v1.Pod{gang("a").MinAvailable("two").Obj(), gang("b").MinAvailable("two").Obj(), gang("c").MinAvailable("two").Obj()},
			framework.JobID{Namespace: "default", Name: "g", Gang: true}, 0, `min-available="two" must be an integer >= 1`, 3},
		{"zero min-available", []*v1.Pod{gang("a").MinAvailable("0").Obj()},
			framework.JobID{Namespace: "default", Name: "g", Gang: true}, 0, "must be an integer >= 1", 1},
		{"negative min-available", []*v1.Pod{gang("a").MinAvailable("-1").Obj(), gang("b").MinAvailable("-1").Obj()},
			framework.JobID{Namespace: "default", Name: "g", Gang: true}, 0, "must be an integer >= 1", 2},
		{"pods disagree", []*v1.Pod{gang("a").MinAvailable("1").Obj(), gang("b").MinAvailable("2").Obj()},
			framework.JobID{Namespace: "default", Name: "g", Gang: true}, 0, `pods disagree on annotation scheduling.k8s.io/min-available ("1", "2")`, 2},
		{"invalid group name", []*v1.Pod{st.MakePod().Name("a").Group("Not_Valid").MinAvailable("1").Obj()},
			framework.JobID{Namespace: "default", Name: "Not_Valid", Gang: true}, 0, "is not a valid name", 1},
		{"a pod without the quorum among pods with it", []*v1.Pod{gang("a").MinAvailable("2").Obj(), gang("b").Obj()},
			framework.JobID{Namespace: "default", Name: "g", Gang: true}, 0, `pods disagree on annotation scheduling.k8s.io/min-available ("2", <unset>)`, 2},
		{"same group in two namespaces are two jobs", []*v1.Pod{gang("a").MinAvailable("1").Obj(), gang("b").MinAvailable("1").Namespace("other").Obj()},
			framework.JobID{Namespace: "other", Name: "g", Gang: true}, 1, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCache(t, Options{})
			for _, p := range tt.pods {
				mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
			}
			j, ok := c.Job(tt.id)
			if !ok {
				t.Fatalf("job %s missing; dump: %+v", tt.id, c.Dump().Jobs)
			}
			if got := j.MinAvailable(); got != tt.wantMin {
				t.Errorf("MinAvailable = %d, want %d", got, tt.wantMin)
			}
			if len(j.Tasks) != tt.wantTasks {
				t.Errorf("tasks = %d, want %d", len(j.Tasks), tt.wantTasks)
			}
			err := j.ValidationError()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("ValidationError = %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("ValidationError = %v, want one containing %q", err, tt.wantErr)
			}
			// The dump shows the same.
			for _, jd := range c.Dump().Jobs {
				if jd.ID == tt.id.String() {
					if jd.MinAvailable != tt.wantMin || (tt.wantErr != "") != (jd.ValidationError != "") {
						t.Errorf("dump job = %+v", jd)
					}
				}
			}
		})
	}
}

func TestValidationErrorClearsWhenFixed(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	bad := st.MakePod().Name("a").Group("g").MinAvailable("x").Obj()
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(bad))
	id := framework.JobID{Namespace: "default", Name: "g", Gang: true}
	if j, _ := c.Job(id); j.ValidationError() == nil {
		t.Fatal("no validation error for min-available=x")
	}
	good := st.MakePod().Name("a").Group("g").MinAvailable("1").Obj()
	mustNoErr(t, "UpdatePendingPod", c.UpdatePendingPod(bad, good))
	if j, _ := c.Job(id); j.ValidationError() != nil || j.MinAvailable() != 1 {
		t.Errorf("after the fix: err=%v min=%d", j.ValidationError(), j.MinAvailable())
	}
}

func TestJobIDString(t *testing.T) {
	tests := []struct {
		id   framework.JobID
		want string
	}{
		{framework.JobID{Namespace: "ns", Name: "train"}, "ns/pod:train"},
		{framework.JobID{Namespace: "ns", Name: "train", Gang: true}, "ns/train"},
		{framework.JobID{Namespace: "ns", Name: "pod:train", Gang: true}, `ns/"pod:train"`},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		got := tt.id.String()
		if got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.id, got, tt.want)
		}
		if seen[got] {
			t.Errorf("%q is ambiguous", got)
		}
		seen[got] = true
	}
}

func TestPendingToAssigned(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	id := framework.JobID{Namespace: "default", Name: "g", Gang: true}
	pending := []*v1.Pod{
		st.MakePod().Name("a").Group("g").MinAvailable("2").Req(res{v1.ResourceCPU: "1"}).Obj(),
		st.MakePod().Name("b").Group("g").MinAvailable("2").Req(res{v1.ResourceCPU: "1"}).Obj(),
	}
	for _, p := range pending {
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	}
	if l := c.Queue().Lengths(); l.Active != 1 {
		t.Fatalf("queue lengths = %+v, want the gang once in active", l)
	}

	// The handler's sequence for a pod that got bound.
	bound := pending[0].DeepCopy()
	bound.Spec.NodeName = "n1"
	mustNoErr(t, "RemovePendingPod", c.RemovePendingPod(pending[0]))
	mustNoErr(t, "AddPod", c.AddPod(bound))

	j, ok := c.Job(id)
	if !ok {
		t.Fatal("gang disappeared")
	}
	if p, b := countTasks(j); p != 1 || b != 1 {
		t.Errorf("pending, bound = %d, %d; want 1, 1", p, b)
	}
	if j.Tasks["uid-a"].Status != framework.TaskBound || j.Tasks["uid-a"].NodeName != "n1" {
		t.Errorf("task a = %+v, want bound to n1", j.Tasks["uid-a"])
	}
	if j.MinAvailable() != 2 || j.ValidationError() != nil {
		t.Errorf("min-available = %d, err = %v", j.MinAvailable(), j.ValidationError())
	}
	if idle, _ := nodeIdle(c, "n1"); idle.MilliCPU != 9000 {
		t.Errorf("idle cpu = %d, want 9000", idle.MilliCPU)
	}
	qj, err := c.Queue().Pop(t.Context())
	mustNoErr(t, "Pop", err)
	if len(qj.Pods) != 1 || qj.Pods[0].Name != "b" {
		t.Errorf("queued pods = %v, want only b", podNames(qj.Pods))
	}

	// AddPod alone (without RemovePendingPod) also moves a pending pod.
	boundB := pending[1].DeepCopy()
	boundB.Spec.NodeName = "n1"
	mustNoErr(t, "AddPod", c.AddPod(boundB))
	j, _ = c.Job(id)
	if p, b := countTasks(j); p != 0 || b != 2 {
		t.Errorf("pending, bound = %d, %d; want 0, 2", p, b)
	}
	if l := c.Queue().Lengths(); l != (schedulingqueue.Lengths{}) {
		t.Errorf("queue lengths = %+v, want empty", l)
	}
	d := c.Dump()
	if d.Queue.Lengths != (schedulingqueue.Lengths{}) || len(d.Jobs) != 1 || len(d.Jobs[0].Tasks) != 2 {
		t.Errorf("dump = %+v", d)
	}

	// Deleting the bound pods removes the job.
	mustNoErr(t, "RemovePod", deletePod(c, bound))
	mustNoErr(t, "RemovePod", deletePod(c, boundB))
	if _, ok := c.Job(id); ok {
		t.Error("job still there after its last task went")
	}
}

func TestPendingPodChangesGroup(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	old := st.MakePod().Name("a").Group("g1").Obj()
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(old))
	moved := st.MakePod().Name("a").Group("g2").Obj()
	mustNoErr(t, "UpdatePendingPod", c.UpdatePendingPod(old, moved))
	if _, ok := c.Job(framework.JobID{Namespace: "default", Name: "g1", Gang: true}); ok {
		t.Error("old job still there")
	}
	if j, ok := c.Job(framework.JobID{Namespace: "default", Name: "g2", Gang: true}); !ok || len(j.Tasks) != 1 {
		t.Errorf("new job = %+v, %v", j, ok)
	}
	d := c.Queue().Dump()
	if len(d.Active) != 1 || d.Active[0].ID != "default/g2" {
		t.Errorf("active = %+v, want only default/g2", d.Active)
	}
}

func TestRemoveByUIDWhateverTheState(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	bound := st.MakePod().Name("p").Node("n1").Req(res{v1.ResourceCPU: "1"}).Obj()
	mustNoErr(t, "AddPod", c.AddPod(bound))
	// The tombstone of a deleted pod may be older than the cache's state.
	stale := st.MakePod().Name("p").Obj()
	if err := c.RemovePendingPod(stale); !errors.Is(err, ErrWrongState) {
		t.Errorf("RemovePendingPod of a bound pod: got %v, want ErrWrongState", err)
	}
	freed, err := c.DeletePod(stale)
	mustNoErr(t, "DeletePod", err)
	if !freed {
		t.Error("DeletePod of a bound, running pod freed nothing")
	}
	if idle, _ := nodeIdle(c, "n1"); idle.MilliCPU != 10000 {
		t.Errorf("idle = %v, want the whole node", idle)
	}
}

func TestSizeGauges(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("a").Node("n1").Obj()))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("b").Node("ghost").Obj()))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("c").Group("g").Obj()))
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("d").Group("g").Obj()))
	want := map[string]float64{
		metrics.CacheNodes:            1,
		metrics.CachePlaceholderNodes: 1,
		metrics.CacheAssignedPods:     2,
		metrics.CachePendingPods:      2,
		metrics.CacheJobs:             3,
	}
	for typ, w := range want {
		if got := metricstest.GaugeValue(t, c.metrics.CacheSize.WithLabelValues(typ)); got != w {
			t.Errorf("cache_size{type=%q} = %v, want %v", typ, got, w)
		}
	}
	if got := metricstest.GaugeValue(t, c.metrics.PendingJobs.WithLabelValues(metrics.QueueActive)); got != 1 {
		t.Errorf("pending_jobs{queue=active} = %v, want 1", got)
	}
}

func podNames(pods []*v1.Pod) []string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return names
}

// nodeIdle returns what is idle on the named node, false for an unknown
// node or a placeholder.
func nodeIdle(c *SchedulerCache, name string) (resources.Resource, bool) {
	n, ok := c.NodeInfo(name)
	if !ok || n.Placeholder {
		return resources.Resource{}, false
	}
	return n.Idle(), true
}

// countTasks returns how many tasks of j are pending and how many are on a
// node (bound or assumed, finished ones included).
func countTasks(j *framework.JobInfo) (pending, onNode int) {
	c := j.Counts()
	return c.Pending, c.Assumed + c.Bound
}

func mustPop(t *testing.T, q *schedulingqueue.SchedulingQueue, want string) *framework.QueuedJob {
	t.Helper()
	if q.Lengths().Active == 0 {
		t.Fatalf("Pop: active queue is empty, want %s", want)
	}
	qj, err := q.Pop(t.Context())
	mustNoErr(t, "Pop", err)
	if qj.ID.String() != want {
		t.Fatalf("Pop = %s, want %s", qj.ID, want)
	}
	return qj
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, wait.ForeverTestTimeout, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// deletePod deletes pod from c, as the handler does when the informer
// reports it deleted.
func deletePod(c interface {
	DeletePod(*v1.Pod) (bool, error)
}, pod *v1.Pod) error {
	_, err := c.DeletePod(pod)
	return err
}

// A cycle's job comes from the cache alone: its pending pods sorted by
// name (not the assumed or bound ones), the quorum, and the tasks that
// run (assumed and bound, not finished).
func TestCycleJob(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	gang := func(name string) *st.PodWrapper { return st.MakePod().Name(name).Group("g").MinAvailable("3") }
	id := framework.JobID{Namespace: "default", Name: "g", Gang: true}
	for _, p := range []*v1.Pod{gang("d").Obj(), gang("b").Obj(), gang("a").Obj(), gang("c").Obj()} {
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	}
	mustNoErr(t, "AssumePod c", c.AssumePod(gang("c").Obj(), "n1"))
	mustNoErr(t, "AddPod e", c.AddPod(gang("e").Node("n1").Phase(v1.PodRunning).Obj()))
	mustNoErr(t, "AddPod f", c.AddPod(gang("f").Node("n1").Phase(v1.PodSucceeded).Obj()))

	job, ok := c.CycleJob(id)
	if !ok {
		t.Fatalf("CycleJob(%s) found nothing", id)
	}
	if got, want := podNames(job.Pending), []string{"a", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("pending %q, want %q", got, want)
	}
	if job.ID != id || job.MinAvailable != 3 || job.Bound != 2 || job.Err != nil {
		t.Errorf("job = {ID %s, MinAvailable %d, Bound %d, Err %v}, want {%s, 3, 2 (c assumed, e running), nil}", job.ID, job.MinAvailable, job.Bound, job.Err, id)
	}

	for _, name := range []string{"a", "b", "d"} {
		mustNoErr(t, "AssumePod "+name, c.AssumePod(gang(name).Obj(), "n1"))
	}
	if job, ok := c.CycleJob(id); ok {
		t.Errorf("CycleJob of a job with nothing left to place = %+v, want none", job)
	}
	if job, ok := c.CycleJob(framework.JobID{Namespace: "default", Name: "nope"}); ok {
		t.Errorf("CycleJob of an unknown job = %+v, want none", job)
	}

	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("x").Group("bad").MinAvailable("two").Obj()))
	job, ok = c.CycleJob(framework.JobID{Namespace: "default", Name: "bad", Gang: true})
	if !ok || job.Err == nil || !strings.Contains(job.Err.Error(), "two") {
		t.Errorf("CycleJob of an invalid gang = %+v, %v; want its validation error", job, ok)
	}
}
