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

package defaulthandler_test

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func newHandler(t *testing.T) (*defaulthandler.Handler, *fakeCache) {
	t.Helper()
	fc := newFakeCache(t)
	h, err := defaulthandler.New(t.Context(), fc, nil, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h, fc
}

func tombstone(obj any) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: "some/key", Obj: obj}
}

// Pods used by the pod tests. They are all named default/p, so that an old
// and a new version can be paired freely, and differ in resourceVersion.
func pendingPod(rv string) *st.PodWrapper { return st.MakePod().Name("p").RV(rv) }
func otherPendingPod(rv string) *st.PodWrapper {
	return st.MakePod().Name("p").RV(rv).Scheduler("other-scheduler")
}
func runningPod(rv string) *st.PodWrapper {
	return st.MakePod().Name("p").RV(rv).Node("n1").Phase(v1.PodRunning)
}

// gatedPod is pendingPod with scheduling gates.
func gatedPod(rv string, gates ...string) *st.PodWrapper {
	w := pendingPod(rv)
	for _, g := range gates {
		w.Spec.SchedulingGates = append(w.Spec.SchedulingGates, v1.PodSchedulingGate{Name: g})
	}
	return w
}

const (
	moveAssignedPodDelete = "MoveAll AssignedPodDelete"
	moveAssignedPodAdd    = "MoveAll AssignedPodAdd"
	moveAssignedPodUpdate = "MoveAll AssignedPodUpdate"
	moveAssignedPodShrink = "MoveAll AssignedPodScaleDown"
)

func TestAddPod(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want []string
	}{
		{"pending pod of this scheduler is queued", pendingPod("1").Obj(),
			[]string{"AddPendingPod default/p"}},
		{"pending pod of another scheduler is ignored", otherPendingPod("1").Obj(),
			nil},
		{"pod that failed before being scheduled is ignored", pendingPod("1").Phase(v1.PodFailed).Obj(),
			nil},
		{"pod that succeeded before being scheduled is ignored", pendingPod("1").Phase(v1.PodSucceeded).Obj(),
			nil},
		{"gated pending pod is not queued", gatedPod("1", "example.com/quota").Obj(),
			nil},
		{"gated pod of another scheduler is ignored", gatedPod("1", "example.com/quota").Scheduler("other-scheduler").Obj(),
			nil},
		{"running pod is cached", runningPod("1").Obj(),
			[]string{"AddPod default/p", moveAssignedPodAdd}},
		{"pod bound to a node that is not known yet is just forwarded", runningPod("1").Node("not-yet-added").Obj(),
			[]string{"AddPod default/p", moveAssignedPodAdd}},
		{"assigned pod of another scheduler is cached", runningPod("1").Scheduler("other-scheduler").Obj(),
			[]string{"AddPod default/p", moveAssignedPodAdd}},
		{"bound but not started pod is cached", pendingPod("1").Node("n1").Obj(),
			[]string{"AddPod default/p", moveAssignedPodAdd}},
		{"terminating pod is cached", runningPod("1").Terminating().Obj(),
			[]string{"AddPod default/p", moveAssignedPodAdd}},
		{"succeeded pod is cached, raising nothing", runningPod("1").Phase(v1.PodSucceeded).Obj(),
			[]string{"AddPod default/p"}},
		{"failed pod is cached, raising nothing", runningPod("1").Phase(v1.PodFailed).Obj(),
			[]string{"AddPod default/p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fc := newHandler(t)
			h.AddPod(tt.pod)
			if d := diffCalls(fc.Effects(), tt.want); d != "" {
				t.Error(d)
			}
			checkMoveObjects(t, fc.Moves())
		})
	}
}

func TestUpdatePod(t *testing.T) {
	tests := []struct {
		name     string
		old, new *v1.Pod
		want     []string
	}{
		// Resyncs.
		{"resync of a pending pod is skipped",
			pendingPod("5").Obj(), pendingPod("5").Obj(),
			nil},
		{"resync of a running pod is skipped",
			runningPod("5").Obj(), runningPod("5").Obj(),
			nil},
		{"resync of a pod that is no longer counted is skipped",
			runningPod("5").Phase(v1.PodSucceeded).Obj(), runningPod("5").Phase(v1.PodSucceeded).Obj(),
			nil},
		{"objects without resourceVersion are never taken for a resync",
			pendingPod("").Obj(), pendingPod("").Obj(),
			[]string{"UpdatePendingPod default/p"}},

		// Pending pods.
		{"pending pod updated",
			pendingPod("1").Obj(), pendingPod("2").Label("a", "b").Obj(),
			[]string{"UpdatePendingPod default/p"}},
		{"pending pod bound by this scheduler moves to the assigned pods",
			pendingPod("1").Obj(), pendingPod("2").Node("n1").Obj(),
			[]string{"AddPod default/p", moveAssignedPodAdd}},
		{"pending pod bound and running at once moves to the assigned pods",
			pendingPod("1").Obj(), runningPod("2").Obj(),
			[]string{"AddPod default/p", moveAssignedPodAdd}},
		{"pending pod that stopped being ours leaves the queue",
			pendingPod("1").Obj(), otherPendingPod("2").Obj(),
			[]string{"RemovePendingPod default/p"}},
		{"pending pod that fails before being scheduled leaves the queue",
			pendingPod("1").Obj(), pendingPod("2").Phase(v1.PodFailed).Obj(),
			[]string{"RemovePendingPod default/p"}},
		{"pending terminating pod is updated in the queue",
			pendingPod("1").Obj(), pendingPod("2").Terminating().Obj(),
			[]string{"UpdatePendingPod default/p"}},

		// Scheduling gates: the API server only lets them be removed.
		{"gated pod updated stays out of the queue",
			gatedPod("1", "a", "b").Obj(), gatedPod("2", "a").Obj(),
			nil},
		{"ungated pod is queued",
			gatedPod("1", "a").Obj(), pendingPod("2").Obj(),
			[]string{"AddPendingPod default/p"}},
		{"pending pod that gets gated leaves the queue",
			pendingPod("1").Obj(), gatedPod("2", "a").Obj(),
			[]string{"RemovePendingPod default/p"}},
		{"gated pod that fails is ignored",
			gatedPod("1", "a").Obj(), gatedPod("2", "a").Phase(v1.PodFailed).Obj(),
			nil},
		{"gated pod that became ours is not queued",
			gatedPod("1", "a").Scheduler("other-scheduler").Obj(), gatedPod("2", "a").Obj(),
			nil},
		{"gated pod reported bound is cached",
			gatedPod("1", "a").Obj(), runningPod("2").Obj(),
			[]string{"AddPod default/p", moveAssignedPodAdd}},

		// Other schedulers' pods.
		{"other scheduler's pending pod updated is ignored",
			otherPendingPod("1").Obj(), otherPendingPod("2").Label("a", "b").Obj(),
			nil},
		{"other scheduler's pod bound is cached",
			otherPendingPod("1").Obj(), otherPendingPod("2").Node("n1").Obj(),
			[]string{"AddPod default/p", moveAssignedPodAdd}},
		{"pod that became ours is queued",
			otherPendingPod("1").Obj(), pendingPod("2").Obj(),
			[]string{"AddPendingPod default/p"}},

		// Assigned pods.
		{"running pod updated without a label change raises nothing",
			runningPod("1").Label("a", "b").Obj(), func() *v1.Pod {
				p := runningPod("2").Label("a", "b").Obj()
				p.Annotations = map[string]string{"x": "y"}
				return p
			}(),
			[]string{"UpdatePod default/p"}},
		{"running pod labelled",
			runningPod("1").Obj(), runningPod("2").Label("a", "b").Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodUpdate}},
		{"running pod's label changed",
			runningPod("1").Label("a", "b").Obj(), runningPod("2").Label("a", "c").Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodUpdate}},
		{"running pod's label removed",
			runningPod("1").Label("a", "b").Obj(), runningPod("2").Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodUpdate}},
		{"bound pod that never started labelled",
			pendingPod("1").Node("n1").Obj(), pendingPod("2").Node("n1").Label("a", "b").Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodUpdate}},
		{"running pod relabelled as it succeeds only frees resources",
			runningPod("1").Obj(), runningPod("2").Label("a", "b").Phase(v1.PodSucceeded).Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodDelete}},
		{"succeeded pod reported running again is counted again",
			runningPod("1").Phase(v1.PodSucceeded).Obj(), runningPod("2").Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodAdd}},
		{"bound pod starts running",
			pendingPod("1").Node("n1").Obj(), runningPod("2").Obj(),
			[]string{"UpdatePod default/p"}},
		{"running pod terminating keeps its resources",
			runningPod("1").Obj(), runningPod("2").Terminating().Obj(),
			[]string{"UpdatePod default/p"}},
		{"running pod succeeded frees resources",
			runningPod("1").Obj(), runningPod("2").Phase(v1.PodSucceeded).Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodDelete}},
		{"running pod failed frees resources",
			runningPod("1").Obj(), runningPod("2").Phase(v1.PodFailed).Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodDelete}},
		{"bound pod that never started failed frees resources",
			pendingPod("1").Node("n1").Obj(), pendingPod("2").Node("n1").Phase(v1.PodFailed).Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodDelete}},
		{"terminating pod finished frees resources",
			runningPod("1").Terminating().Obj(), runningPod("2").Terminating().Phase(v1.PodSucceeded).Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodDelete}},
		{"other scheduler's running pod succeeded frees resources",
			runningPod("1").Scheduler("other-scheduler").Obj(), runningPod("2").Scheduler("other-scheduler").Phase(v1.PodSucceeded).Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodDelete}},
		{"succeeded pod updated again frees nothing more",
			runningPod("1").Phase(v1.PodSucceeded).Obj(), runningPod("2").Phase(v1.PodSucceeded).Terminating().Obj(),
			[]string{"UpdatePod default/p"}},
		{"failed pod updated again frees nothing more",
			runningPod("1").Phase(v1.PodFailed).Obj(), runningPod("2").Phase(v1.PodFailed).Label("a", "b").Obj(),
			[]string{"UpdatePod default/p"}},

		{"running pod resized down frees resources",
			runningPod("1").Req(map[v1.ResourceName]string{v1.ResourceMemory: "2Gi"}).Obj(),
			runningPod("2").Req(map[v1.ResourceName]string{v1.ResourceMemory: "1Gi"}).Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodShrink}},
		{"running pod resized down in one resource and up in another frees resources",
			runningPod("1").Req(map[v1.ResourceName]string{v1.ResourceMemory: "2Gi", v1.ResourceCPU: "1"}).Obj(),
			runningPod("2").Req(map[v1.ResourceName]string{v1.ResourceMemory: "1Gi", v1.ResourceCPU: "2"}).Obj(),
			[]string{"UpdatePod default/p", moveAssignedPodShrink}},
		{"running pod resized up frees nothing",
			runningPod("1").Req(map[v1.ResourceName]string{v1.ResourceMemory: "1Gi"}).Obj(),
			runningPod("2").Req(map[v1.ResourceName]string{v1.ResourceMemory: "2Gi"}).Obj(),
			[]string{"UpdatePod default/p"}},
		{"running pod updated with equal requests frees nothing",
			runningPod("1").Req(map[v1.ResourceName]string{v1.ResourceMemory: "1Gi"}).Obj(),
			runningPod("2").Req(map[v1.ResourceName]string{v1.ResourceMemory: "1024Mi"}).Obj(),
			[]string{"UpdatePod default/p"}},
		{"succeeded pod resized down frees nothing more",
			runningPod("1").Phase(v1.PodSucceeded).Req(map[v1.ResourceName]string{v1.ResourceMemory: "2Gi"}).Obj(),
			runningPod("2").Phase(v1.PodSucceeded).Req(map[v1.ResourceName]string{v1.ResourceMemory: "1Gi"}).Obj(),
			[]string{"UpdatePod default/p"}},

		// Assigned to pending cannot happen (spec.nodeName is immutable),
		// but is handled.
		{"running pod unassigned leaves the assigned pods and is queued",
			runningPod("1").Obj(), pendingPod("2").Obj(),
			[]string{"DeletePod default/p", moveAssignedPodDelete, "AddPendingPod default/p"}},
		{"succeeded pod unassigned leaves the assigned pods and is queued, freeing nothing",
			runningPod("1").Phase(v1.PodSucceeded).Obj(), pendingPod("2").Obj(),
			[]string{"DeletePod default/p", "AddPendingPod default/p"}},
		{"running pod unassigned to another scheduler leaves the assigned pods",
			runningPod("1").Obj(), otherPendingPod("2").Obj(),
			[]string{"DeletePod default/p", moveAssignedPodDelete}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fc := newHandler(t)
			h.UpdatePod(tt.old, tt.new)
			if d := diffCalls(fc.Effects(), tt.want); d != "" {
				t.Error(d)
			}
			checkMoveObjects(t, fc.Moves())
		})
	}
}

// checkMoveObjects checks that each pod event carries the pods its hints
// need: the pod that freed resources (oldObj), the pod added (newObj), or
// both versions of a relabelled pod.
func checkMoveObjects(t *testing.T, moves []move) {
	t.Helper()
	for _, m := range moves {
		oldPod, _ := m.OldObj.(*v1.Pod)
		newPod, _ := m.NewObj.(*v1.Pod)
		switch m.Event {
		case framework.EventAssignedPodDelete:
			if oldPod == nil {
				t.Errorf("%v raised without the pod that freed resources (oldObj %T)", m.Event, m.OldObj)
			}
		case framework.EventAssignedPodAdd:
			if m.OldObj != nil || newPod == nil || newPod.Spec.NodeName == "" {
				t.Errorf("%v raised with oldObj %T, newObj %v; want nil and the assigned pod", m.Event, m.OldObj, m.NewObj)
			}
		case framework.EventAssignedPodLabelChange, framework.EventAssignedPodScaleDown:
			if oldPod == nil || newPod == nil {
				t.Errorf("%v raised with oldObj %T, newObj %T; want both pods", m.Event, m.OldObj, m.NewObj)
			}
		}
	}
}

func TestDeletePod(t *testing.T) {
	tests := []struct {
		name string
		obj  any
		want []string
	}{
		{"pending pod leaves the queue", pendingPod("1").Obj(),
			[]string{"DeletePod default/p"}},
		{"pending terminating pod leaves the queue", pendingPod("1").Terminating().Obj(),
			[]string{"DeletePod default/p"}},
		{"other scheduler's pending pod is ignored", otherPendingPod("1").Obj(),
			nil},
		{"pod that failed before being scheduled is ignored", pendingPod("1").Phase(v1.PodFailed).Obj(),
			nil},
		{"running pod frees resources", runningPod("1").Obj(),
			[]string{"DeletePod default/p", moveAssignedPodDelete}},
		{"terminating pod frees resources", runningPod("1").Terminating().Obj(),
			[]string{"DeletePod default/p", moveAssignedPodDelete}},
		{"bound pod that never started frees resources", pendingPod("1").Node("n1").Obj(),
			[]string{"DeletePod default/p", moveAssignedPodDelete}},
		{"other scheduler's running pod frees resources", runningPod("1").Scheduler("other-scheduler").Obj(),
			[]string{"DeletePod default/p", moveAssignedPodDelete}},
		{"succeeded pod had already freed its resources", runningPod("1").Phase(v1.PodSucceeded).Obj(),
			[]string{"DeletePod default/p"}},
		{"failed pod had already freed its resources", runningPod("1").Phase(v1.PodFailed).Obj(),
			[]string{"DeletePod default/p"}},
		{"gated pod was never queued", gatedPod("1", "a").Obj(),
			nil},
		{"tombstone of a gated pod", tombstone(gatedPod("1", "a").Obj()),
			nil},
		{"tombstone of a pending pod", tombstone(pendingPod("1").Obj()),
			[]string{"DeletePod default/p"}},
		{"tombstone of another scheduler's pending pod", tombstone(otherPendingPod("1").Obj()),
			nil},
		{"tombstone of a running pod", tombstone(runningPod("1").Obj()),
			[]string{"DeletePod default/p", moveAssignedPodDelete}},
		{"tombstone of a succeeded pod", tombstone(runningPod("1").Phase(v1.PodSucceeded).Obj()),
			[]string{"DeletePod default/p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fc := newHandler(t)
			h.DeletePod(tt.obj)
			if d := diffCalls(fc.Effects(), tt.want); d != "" {
				t.Error(d)
			}
		})
	}
}

// The handler asks the cache, not the pod, whether a pod is its own, and
// only about pods that are not assigned.
func TestPodResponsibilityIsTheCaches(t *testing.T) {
	t.Run("cache decides", func(t *testing.T) {
		h, fc := newHandler(t)
		fc.responsible = func(p *v1.Pod) bool { return p.Labels["mine"] == "yes" }
		h.AddPod(otherPendingPod("1").Label("mine", "yes").Obj())
		h.AddPod(pendingPod("1").Obj())
		want := []string{"IsResponsibleFor default/p", "AddPendingPod default/p", "IsResponsibleFor default/p"}
		if d := diffCalls(fc.Calls(), want); d != "" {
			t.Error(d)
		}
	})
	t.Run("not asked about assigned pods", func(t *testing.T) {
		h, fc := newHandler(t)
		h.AddPod(runningPod("1").Obj())
		h.UpdatePod(runningPod("1").Obj(), runningPod("2").Obj())
		h.DeletePod(runningPod("2").Obj())
		for _, c := range fc.Calls() {
			if c == "IsResponsibleFor default/p" {
				t.Errorf("IsResponsibleFor called for an assigned pod; calls: %q", fc.Calls())
			}
		}
	})
}

// A cache error is logged; the rest of the event is still handled.
func TestPodCacheErrorsDoNotStopTheHandler(t *testing.T) {
	tests := []struct {
		name string
		do   func(h *defaulthandler.Handler)
		want []string
	}{
		{"bound: event raised although adding failed",
			func(h *defaulthandler.Handler) { h.UpdatePod(pendingPod("1").Obj(), runningPod("2").Obj()) },
			[]string{"AddPod default/p", moveAssignedPodAdd}},
		{"relabelled: event raised although the update failed",
			func(h *defaulthandler.Handler) {
				h.UpdatePod(runningPod("1").Obj(), runningPod("2").Label("app", "db").Obj())
			},
			[]string{"UpdatePod default/p", moveAssignedPodUpdate}},
		{"finished: event raised although the update failed",
			func(h *defaulthandler.Handler) {
				h.UpdatePod(runningPod("1").Obj(), runningPod("2").Phase(v1.PodSucceeded).Obj())
			},
			[]string{"UpdatePod default/p", moveAssignedPodDelete}},
		{"deleted: event raised although the removal failed",
			func(h *defaulthandler.Handler) { h.DeletePod(runningPod("1").Obj()) },
			[]string{"DeletePod default/p", moveAssignedPodDelete}},
		{"pending update", func(h *defaulthandler.Handler) { h.UpdatePod(pendingPod("1").Obj(), pendingPod("2").Obj()) },
			[]string{"UpdatePendingPod default/p"}},
		{"pending add", func(h *defaulthandler.Handler) { h.AddPod(pendingPod("1").Obj()) },
			[]string{"AddPendingPod default/p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, fc := newHandler(t)
			fc.err = errors.New("cache is broken")
			tt.do(h)
			if d := diffCalls(fc.Effects(), tt.want); d != "" {
				t.Error(d)
			}
		})
	}
}

// A pod's whole life, as the informer delivers it.
func TestPodLifecycle(t *testing.T) {
	h, fc := newHandler(t)
	created := pendingPod("1").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"})
	h.AddPod(created.Obj())
	h.UpdatePod(created.Obj(), created.Obj()) // resync
	h.UpdatePod(created.Obj(), created.RV("2").Node("n1").Obj())
	h.UpdatePod(created.Obj(), created.RV("3").Phase(v1.PodRunning).Obj())
	h.UpdatePod(created.Obj(), created.RV("4").Terminating().Obj())
	h.UpdatePod(created.Obj(), created.RV("5").Phase(v1.PodSucceeded).Obj())
	h.DeletePod(created.Obj())
	want := []string{
		"AddPendingPod default/p",
		"AddPod default/p", moveAssignedPodAdd,
		"UpdatePod default/p",
		"UpdatePod default/p",
		"UpdatePod default/p", moveAssignedPodDelete,
		"DeletePod default/p",
	}
	if d := diffCalls(fc.Effects(), want); d != "" {
		t.Error(d)
	}
}
