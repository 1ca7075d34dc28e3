package defaulthandler_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type rl = map[v1.ResourceName]string

// node1 is a schedulable node with 4 CPUs, 8Gi and room for 10 pods.
func node1(rv string) *st.NodeWrapper {
	return st.MakeNode().Name("n1").RV(rv).Label("zone", "a").
		Capacity(rl{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"})
}

// smallJob is a job whose pod fits on an idle node1.
var smallJob = []*v1.Pod{pendingPod("1").Req(rl{v1.ResourceCPU: "1"}).Obj()}

func TestAddNode(t *testing.T) {
	t.Run("cached, then NodeAdd raised with a check", func(t *testing.T) {
		h, fc := newHandler(t)
		fc.idle["n1"] = resources.Resource{MilliCPU: 4000, Memory: 8 << 30, Pods: 10}
		fc.jobs = [][]*v1.Pod{smallJob}
		h.AddNode(node1("1").Obj())
		want := []string{"AddOrUpdateNode n1", "NodeIdle n1", "MoveAll NodeAdd"}
		if d := diffCalls(fc.Calls(), want); d != "" {
			t.Error(d)
		}
		if got, want := fc.Moves(), []move{{framework.EventNodeAdd, true, []bool{true}}}; !slices.EqualFunc(got, want, moveEqual) {
			t.Errorf("moves = %+v, want %+v", got, want)
		}
	})
	t.Run("event raised although the cache failed", func(t *testing.T) {
		h, fc := newHandler(t)
		fc.err = errors.New("cache is broken")
		h.AddNode(node1("1").Obj())
		want := []string{"AddOrUpdateNode n1", "MoveAll NodeAdd"}
		if d := diffCalls(fc.Effects(), want); d != "" {
			t.Error(d)
		}
	})
	t.Run("pods that arrived before their node are left to the cache", func(t *testing.T) {
		h, fc := newHandler(t)
		h.AddPod(runningPod("1").Obj())
		h.AddNode(node1("1").Obj())
		want := []string{"AddPod default/p", "AddOrUpdateNode n1", "MoveAll NodeAdd"}
		if d := diffCalls(fc.Effects(), want); d != "" {
			t.Error(d)
		}
	})
}

func moveEqual(a, b move) bool {
	return a.Event == b.Event && a.Checked == b.Checked && slices.Equal(a.Verdicts, b.Verdicts)
}

func TestUpdateNode(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	tests := []struct {
		name     string
		old, new *v1.Node
		// want lists the labels of the events raised, in order.
		want []string
	}{
		{"resync",
			node1("5").Obj(), node1("5").Obj(),
			nil},
		{"heartbeat only",
			node1("1").Heartbeat(t0, "KubeletReady", "ok").Obj(), node1("2").Heartbeat(t1, "KubeletReady", "ok").Obj(),
			nil},
		{"condition reason, message and transition time only",
			node1("1").Heartbeat(t0, "KubeletReady", "ok").Obj(),
			node1("2").Heartbeat(t0, "KubeletReady", "still ok").ConditionTransition(v1.NodeReady, t1).Obj(),
			nil},
		{"annotation only",
			node1("1").Obj(), node1("2").Annotation("note", "x").Obj(),
			nil},
		{"capacity only",
			node1("1").Obj(), node1("2").Capacity(rl{v1.ResourceCPU: "8", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).
				Allocatable(rl{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).Obj(),
			nil},
		{"allocatable written differently but equal",
			node1("1").Obj(), node1("2").Allocatable(rl{v1.ResourceCPU: "4000m", v1.ResourceMemory: "8192Mi", v1.ResourcePods: "10"}).Obj(),
			nil},
		{"became unschedulable",
			node1("1").Obj(), node1("2").Unschedulable(true).Obj(),
			nil},
		{"became schedulable",
			node1("1").Unschedulable(true).Obj(), node1("2").Obj(),
			[]string{"NodeBecameSchedulable"}},
		{"allocatable grew",
			node1("1").Obj(), node1("2").Allocatable(rl{v1.ResourceCPU: "8", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).Obj(),
			[]string{"NodeAllocatableChange"}},
		{"allocatable shrank",
			node1("1").Obj(), node1("2").Allocatable(rl{v1.ResourceCPU: "2", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).Obj(),
			[]string{"NodeAllocatableChange"}},
		{"extended resource appeared",
			node1("1").Obj(), node1("2").Allocatable(rl{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10", "example.com/gpu": "2"}).Obj(),
			[]string{"NodeAllocatableChange"}},
		{"label added",
			node1("1").Obj(), node1("2").Label("gpu", "true").Obj(),
			[]string{"NodeLabelChange"}},
		{"label value changed",
			node1("1").Obj(), node1("2").Label("zone", "b").Obj(),
			[]string{"NodeLabelChange"}},
		{"label removed",
			node1("1").Label("gpu", "true").Obj(), node1("2").Obj(),
			[]string{"NodeLabelChange"}},
		{"taint added",
			node1("1").Obj(), node1("2").Taint("dedicated", "batch", v1.TaintEffectNoSchedule).Obj(),
			[]string{"NodeTaintChange"}},
		{"taint removed",
			node1("1").Taint("dedicated", "batch", v1.TaintEffectNoSchedule).Obj(), node1("2").Obj(),
			[]string{"NodeTaintChange"}},
		{"taint effect changed",
			node1("1").Taint("dedicated", "batch", v1.TaintEffectNoSchedule).Obj(),
			node1("2").Taint("dedicated", "batch", v1.TaintEffectPreferNoSchedule).Obj(),
			[]string{"NodeTaintChange"}},
		{"ready condition changed",
			node1("1").Condition(v1.NodeReady, v1.ConditionFalse).Obj(), node1("2").Obj(),
			[]string{"NodeConditionChange"}},
		{"condition added",
			node1("1").Obj(), node1("2").Condition(v1.NodeMemoryPressure, v1.ConditionFalse).Obj(),
			[]string{"NodeConditionChange"}},
		{"several changes raise one event each, in a fixed order",
			node1("1").Unschedulable(true).Obj(),
			node1("2").Label("gpu", "true").Taint("gpu", "", v1.TaintEffectNoSchedule).
				Allocatable(rl{v1.ResourceCPU: "8", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"}).
				Condition(v1.NodeReady, v1.ConditionUnknown).Obj(),
			[]string{"NodeBecameSchedulable", "NodeAllocatableChange", "NodeLabelChange", "NodeTaintChange", "NodeConditionChange"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fc := newHandler(t)
			fc.idle["n1"] = resources.Resource{MilliCPU: 4000, Memory: 8 << 30, Pods: 10}
			fc.jobs = [][]*v1.Pod{smallJob}
			h.UpdateNode(tt.old, tt.new)

			var want []string
			if tt.old.ResourceVersion != tt.new.ResourceVersion {
				want = append(want, "AddOrUpdateNode n1")
			}
			if len(tt.want) > 0 {
				// The idle resources are read once, before any event.
				want = append(want, "NodeIdle n1")
			}
			for _, label := range tt.want {
				want = append(want, "MoveAll "+label)
			}
			if d := diffCalls(fc.Calls(), want); d != "" {
				t.Error(d)
			}
			for _, m := range fc.Moves() {
				if m.Event.Resource != framework.Node || !m.Checked {
					t.Errorf("event %+v (checked: %v), want a node event with a pre-enqueue check", m.Event, m.Checked)
				}
			}
			if got := labels(defaulthandler.NodeUpdateEvents(tt.old, tt.new)); !slices.Equal(got, tt.want) {
				t.Errorf("NodeUpdateEvents = %q, want %q", got, tt.want)
			}
		})
	}
}

func labels(events []framework.ClusterEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Label)
	}
	return out
}

// Each node change raises the well-known event for it, so that the queue
// can match it against what rejected a job.
func TestNodeUpdateEventsAreTheWellKnownOnes(t *testing.T) {
	old := node1("1").Unschedulable(true).Obj()
	updated := node1("2").Label("gpu", "true").Taint("gpu", "", v1.TaintEffectNoSchedule).
		Allocatable(rl{v1.ResourceCPU: "8"}).Condition(v1.NodeReady, v1.ConditionFalse).Obj()
	got := defaulthandler.NodeUpdateEvents(old, updated)
	want := []framework.ClusterEvent{
		framework.EventNodeBecameSchedulable,
		framework.EventNodeAllocatableChange,
		framework.EventNodeLabelChange,
		framework.EventNodeTaintChange,
		framework.EventNodeConditionChange,
	}
	if !slices.Equal(got, want) {
		t.Errorf("NodeUpdateEvents = %v, want %v", got, want)
	}
}

func TestUpdateNodeEventsRaisedAlthoughTheCacheFailed(t *testing.T) {
	h, fc := newHandler(t)
	fc.err = errors.New("cache is broken")
	h.UpdateNode(node1("1").Obj(), node1("2").Label("gpu", "true").Obj())
	want := []string{"AddOrUpdateNode n1", "MoveAll NodeLabelChange"}
	if d := diffCalls(fc.Effects(), want); d != "" {
		t.Error(d)
	}
}

func TestDeleteNode(t *testing.T) {
	tests := []struct {
		name string
		obj  any
	}{
		{"node", node1("1").Obj()},
		{"tombstone", tombstone(node1("1").Obj())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fc := newHandler(t)
			h.DeleteNode(tt.obj)
			// Losing a node helps no waiting job: nothing is raised.
			if d := diffCalls(fc.Calls(), []string{"RemoveNode n1"}); d != "" {
				t.Error(d)
			}
		})
	}
	t.Run("cache error", func(t *testing.T) {
		h, fc := newHandler(t)
		fc.err = errors.New("cache is broken")
		h.DeleteNode(node1("1").Obj())
		if d := diffCalls(fc.Calls(), []string{"RemoveNode n1"}); d != "" {
			t.Error(d)
		}
	})
	t.Run("with pods on it", func(t *testing.T) {
		// The node goes first; its pods' deletes follow and still free
		// resources. The cache keeps the pods on a placeholder meanwhile.
		h, fc := newHandler(t)
		finished := st.MakePod().Name("done").Node("n1").Phase(v1.PodSucceeded).Obj()
		h.AddNode(node1("1").Obj())
		h.AddPod(runningPod("1").Obj())
		h.AddPod(finished)
		fc.Reset()
		h.DeleteNode(tombstone(node1("1").Obj()))
		h.DeletePod(tombstone(runningPod("1").Obj()))
		h.DeletePod(finished)
		want := []string{"RemoveNode n1", "RemovePod default/p", moveAssignedPodDelete, "RemovePod default/done"}
		if d := diffCalls(fc.Effects(), want); d != "" {
			t.Error(d)
		}
	})
}

func TestPreCheckForNode(t *testing.T) {
	idle := resources.Resource{MilliCPU: 2000, Memory: 4 << 30, Pods: 5, Scalar: map[v1.ResourceName]int64{"example.com/gpu": 1}}
	node := func() *st.NodeWrapper { return node1("1") }
	pod := func() *st.PodWrapper { return pendingPod("1").Req(rl{v1.ResourceCPU: "1", v1.ResourceMemory: "1Gi"}) }
	tests := []struct {
		name  string
		node  *v1.Node
		idle  *resources.Resource // nil: the node is unknown to the cache
		jobs  [][]*v1.Pod
		wants []bool
	}{
		{"fits", node().Obj(), &idle,
			[][]*v1.Pod{{pod().Obj()}}, []bool{true}},
		{"pod without requests fits", node().Obj(), &idle,
			[][]*v1.Pod{{pendingPod("1").Obj()}}, []bool{true}},
		{"exactly fits", node().Obj(), &idle,
			[][]*v1.Pod{{pod().Req(rl{v1.ResourceCPU: "2", v1.ResourceMemory: "4Gi", "example.com/gpu": "1"}).Obj()}}, []bool{true}},
		{"too much cpu", node().Obj(), &idle,
			[][]*v1.Pod{{pod().Req(rl{v1.ResourceCPU: "2500m"}).Obj()}}, []bool{false}},
		{"too much memory", node().Obj(), &idle,
			[][]*v1.Pod{{pod().Req(rl{v1.ResourceMemory: "5Gi"}).Obj()}}, []bool{false}},
		{"too many gpus", node().Obj(), &idle,
			[][]*v1.Pod{{pod().Req(rl{"example.com/gpu": "2"}).Obj()}}, []bool{false}},
		{"extended resource the node lacks", node().Obj(), &idle,
			[][]*v1.Pod{{pod().Req(rl{"example.com/fpga": "1"}).Obj()}}, []bool{false}},
		{"init container too big", node().Obj(), &idle,
			[][]*v1.Pod{{pod().InitReq(rl{v1.ResourceCPU: "3"}).Obj()}}, []bool{false}},
		{"no room for another pod", node().Obj(), &resources.Resource{MilliCPU: 2000, Memory: 4 << 30},
			[][]*v1.Pod{{pod().Obj()}}, []bool{false}},
		{"unknown idle resources are not checked", node().Obj(), nil,
			[][]*v1.Pod{{pod().Req(rl{v1.ResourceCPU: "100"}).Obj()}}, []bool{true}},
		{"gang: one pod that fits is enough", node().Obj(), &idle,
			[][]*v1.Pod{{pod().Req(rl{v1.ResourceCPU: "3"}).Obj(), pod().Obj()}}, []bool{true}},
		{"gang: no pod fits", node().Obj(), &idle,
			[][]*v1.Pod{{pod().Req(rl{v1.ResourceCPU: "3"}).Obj(), pod().Req(rl{v1.ResourceMemory: "5Gi"}).Obj()}}, []bool{false}},
		{"job without pending pods", node().Obj(), &idle,
			[][]*v1.Pod{{}}, []bool{false}},
		{"each job is judged on its own", node().Obj(), &idle,
			[][]*v1.Pod{{pod().Obj()}, {pod().Req(rl{v1.ResourceCPU: "3"}).Obj()}}, []bool{true, false}},

		{"unschedulable node", node().Unschedulable(true).Obj(), &idle,
			[][]*v1.Pod{{pod().Obj()}}, []bool{false}},
		{"unschedulable node, tolerated", node().Unschedulable(true).Obj(), &idle,
			[][]*v1.Pod{{pod().Toleration(v1.TaintNodeUnschedulable, "", v1.TaintEffectNoSchedule).Obj()}}, []bool{true}},
		{"unschedulable node, tolerated by exists", node().Unschedulable(true).Obj(), &idle,
			[][]*v1.Pod{{pod().TolerationExists(v1.TaintNodeUnschedulable, "").Obj()}}, []bool{true}},

		{"NoSchedule taint", node().Taint("dedicated", "ml", v1.TaintEffectNoSchedule).Obj(), &idle,
			[][]*v1.Pod{{pod().Obj()}}, []bool{false}},
		{"NoExecute taint", node().Taint("dedicated", "ml", v1.TaintEffectNoExecute).Obj(), &idle,
			[][]*v1.Pod{{pod().Obj()}}, []bool{false}},
		{"PreferNoSchedule taint does not block", node().Taint("dedicated", "ml", v1.TaintEffectPreferNoSchedule).Obj(), &idle,
			[][]*v1.Pod{{pod().Obj()}}, []bool{true}},
		{"NoSchedule taint tolerated", node().Taint("dedicated", "ml", v1.TaintEffectNoSchedule).Obj(), &idle,
			[][]*v1.Pod{{pod().Toleration("dedicated", "ml", v1.TaintEffectNoSchedule).Obj()}}, []bool{true}},
		{"NoSchedule taint tolerated with another value is not tolerated", node().Taint("dedicated", "ml", v1.TaintEffectNoSchedule).Obj(), &idle,
			[][]*v1.Pod{{pod().Toleration("dedicated", "web", v1.TaintEffectNoSchedule).Obj()}}, []bool{false}},
		{"one of two taints untolerated", node().Taint("a", "", v1.TaintEffectNoSchedule).Taint("b", "", v1.TaintEffectNoExecute).Obj(), &idle,
			[][]*v1.Pod{{pod().TolerationExists("a", "").Obj()}}, []bool{false}},
		{"gang: the pod that tolerates the taint is enough", node().Taint("dedicated", "ml", v1.TaintEffectNoSchedule).Obj(), &idle,
			[][]*v1.Pod{{pod().Obj(), pod().TolerationExists("dedicated", v1.TaintEffectNoSchedule).Obj()}}, []bool{true}},

		{"numeric taint tolerated by Gt", node().Taint("slo", "100", v1.TaintEffectNoSchedule).Obj(), &idle,
			[][]*v1.Pod{{tolerationGt(pod(), "slo", "50").Obj()}}, []bool{true}},
		{"numeric taint not tolerated by Gt", node().Taint("slo", "10", v1.TaintEffectNoSchedule).Obj(), &idle,
			[][]*v1.Pod{{tolerationGt(pod(), "slo", "50").Obj()}}, []bool{false}},

		{"node selector matches", node().Obj(), &idle,
			[][]*v1.Pod{{pod().NodeSelector(map[string]string{"zone": "a"}).Obj()}}, []bool{true}},
		{"node selector does not match", node().Obj(), &idle,
			[][]*v1.Pod{{pod().NodeSelector(map[string]string{"zone": "b"}).Obj()}}, []bool{false}},
		{"required node affinity matches", node().Obj(), &idle,
			[][]*v1.Pod{{pod().NodeAffinityIn("zone", "b", "a").Obj()}}, []bool{true}},
		{"required node affinity does not match", node().Obj(), &idle,
			[][]*v1.Pod{{pod().NodeAffinityIn("zone", "b").Obj()}}, []bool{false}},
		{"either affinity term may match", node().Obj(), &idle,
			[][]*v1.Pod{{pod().NodeAffinityIn("gpu", "true").NodeAffinityIn("zone", "a").Obj()}}, []bool{true}},
		{"selector and affinity must both match", node().Obj(), &idle,
			[][]*v1.Pod{{pod().NodeSelector(map[string]string{"zone": "b"}).NodeAffinityIn("zone", "a").Obj()}}, []bool{false}},
		{"malformed affinity matches nothing", node().Obj(), &idle,
			[][]*v1.Pod{{malformedAffinity(pod()).Obj()}}, []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Run("PreCheckForNode", func(t *testing.T) {
				h, fc := newHandler(t)
				if tt.idle != nil {
					fc.idle["n1"] = *tt.idle
				}
				check := h.PreCheckForNode(tt.node)
				if d := diffCalls(fc.Calls(), []string{"NodeIdle n1"}); d != "" {
					t.Error(d)
				}
				for i, job := range tt.jobs {
					if got := check(job); got != tt.wants[i] {
						t.Errorf("check(job %d) = %v, want %v", i, got, tt.wants[i])
					}
				}
			})
			t.Run("AddNode", func(t *testing.T) {
				h, fc := newHandler(t)
				if tt.idle != nil {
					fc.idle["n1"] = *tt.idle
				}
				fc.jobs = tt.jobs
				h.AddNode(tt.node)
				want := []move{{framework.EventNodeAdd, true, tt.wants}}
				if got := fc.Moves(); !slices.EqualFunc(got, want, moveEqual) {
					t.Errorf("moves = %+v, want %+v", got, want)
				}
			})
		})
	}
}

// The check uses the idle resources read when it was made, not later ones.
func TestPreCheckForNodeCapturesIdleResources(t *testing.T) {
	h, fc := newHandler(t)
	fc.idle["n1"] = resources.Resource{MilliCPU: 2000, Memory: 4 << 30, Pods: 5}
	check := h.PreCheckForNode(node1("1").Obj())
	fc.idle["n1"] = resources.Resource{}
	if !check(smallJob) {
		t.Error("check rejected a job that fitted when the check was made")
	}
}

func tolerationGt(p *st.PodWrapper, key, value string) *st.PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpGt, Value: value, Effect: v1.TaintEffectNoSchedule})
	return p
}

func malformedAffinity(p *st.PodWrapper) *st.PodWrapper {
	pod := p.NodeAffinityIn("zone", "a")
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	terms[0].MatchExpressions[0].Operator = "Bogus"
	return pod
}
