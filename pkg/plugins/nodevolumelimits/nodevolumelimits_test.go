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

package nodevolumelimits

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/volumeutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const driver = "csi.example.com"

func csiNode(name string, limit int32) *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: driver, NodeID: name, Allocatable: &storagev1.VolumeNodeResources{Count: &limit}},
		{Name: "unlimited.example.com", NodeID: name},
	}}}
}

// bound returns a claim bound to a CSI volume of drv with handle.
func bound(name, drv, handle string) []runtime.Object {
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + name}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name}, Spec: v1.PersistentVolumeSpec{
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: handle}}}}
	return []runtime.Object{pvc, pv}
}

func unbound(name, class string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class}}
}

func pod(name string, claims ...string) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID("uid-" + name).Obj()
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func newPlugin(t *testing.T, objs ...runtime.Object) *NodeVolumeLimits {
	t.Helper()
	p, _ := testutil.NewSyncedPlugin(t, New, objs...)
	return p.(*NodeVolumeLimits)
}

func TestFilter(t *testing.T) {
	var objs []runtime.Object
	for _, c := range []struct{ name, drv, handle string }{
		{"v1", driver, "h1"}, {"v2", driver, "h2"}, {"v3", driver, "h3"}, {"v1-again", driver, "h1"},
		{"u1", "unlimited.example.com", "x"}, {"other", "other.example.com", "y"},
	} {
		objs = append(objs, bound(c.name, c.drv, c.handle)...)
	}
	objs = append(objs, unbound("new", "fast"), unbound("new2", "fast"), unbound("noclass", "missing"),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: driver},
		csiNode("n2", 2), csiNode("n0", 0))
	pl := newPlugin(t, objs...)
	done := pod("done", "v2")
	done.Status.Phase = v1.PodSucceeded
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     string
		existing []*v1.Pod
		skip     bool
		code     framework.Code
		msg      string
	}{
		{name: "no claims", pod: pod("p"), node: "n0", skip: true},
		{name: "within the limit", pod: pod("p", "v1"), node: "n2", existing: []*v1.Pod{pod("x", "v2")}},
		{name: "over the limit", pod: pod("p", "v1"), node: "n2", existing: []*v1.Pod{pod("x", "v2"), pod("y", "v3")},
			code: framework.Unschedulable, msg: ErrReasonMaxVolumeCountExceeded},
		{name: "limit 0", pod: pod("p", "v1"), node: "n0", code: framework.Unschedulable, msg: ErrReasonMaxVolumeCountExceeded},
		{name: "volume already on the node", pod: pod("p", "v1-again"), node: "n2", existing: []*v1.Pod{pod("x", "v1"), pod("y", "v2")}},
		{name: "same volume twice counts once", pod: pod("p", "v1", "v1-again", "v2"), node: "n2"},
		{name: "three new volumes", pod: pod("p", "v1", "v2", "v3"), node: "n2", code: framework.Unschedulable, msg: ErrReasonMaxVolumeCountExceeded},
		{name: "finished pods do not count", pod: pod("p", "v1"), node: "n2", existing: []*v1.Pod{done, pod("y", "v3")}},
		{name: "driver without a count", pod: pod("p", "u1"), node: "n0"},
		{name: "driver not on the node", pod: pod("p", "other"), node: "n0"},
		{name: "no CSINode", pod: pod("p", "v1", "v2", "v3"), node: "nocsi"},
		{name: "unbound claims counted by provisioner", pod: pod("p", "new", "new2"), node: "n2", existing: []*v1.Pod{pod("x", "v1")},
			code: framework.Unschedulable, msg: ErrReasonMaxVolumeCountExceeded},
		{name: "unbound claim of a missing class not counted", pod: pod("p", "noclass"), node: "n0"},
		{name: "missing claim", pod: pod("p", "nope"), node: "n2", code: framework.UnschedulableAndUnresolvable,
			msg: `looking up PVC ns/nope: persistentvolumeclaim "nope" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := framework.NewCycleState()
			s := pl.PreFilterPod(context.Background(), state, tt.pod, nil)
			if tt.skip {
				if !s.IsSkip() {
					t.Fatalf("PreFilterPod = %v, want Skip", s)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreFilterPod = %v", s)
			}
			got := pl.Filter(context.Background(), state, tt.pod, testutil.NodeInfo(t, st.MakeNode().Name(tt.node).Obj(), tt.existing...))
			if got.Code() != tt.code || got.Message() != tt.msg {
				t.Errorf("Filter = %v, want %v: %q", got, tt.code, tt.msg)
			}
		})
	}
}

// Pods placed earlier in the cycle count: a gang cannot overrun a limit.
func TestGangCountsEarlierPlacements(t *testing.T) {
	var objs []runtime.Object
	objs = append(objs, bound("v1", driver, "h1")...)
	objs = append(objs, bound("v2", driver, "h2")...)
	objs = append(objs, bound("v3", driver, "h3")...)
	pl := newPlugin(t, append(objs, csiNode("n2", 2))...)
	node := testutil.NodeInfo(t, st.MakeNode().Name("n2").Obj()).Clone()
	for i, p := range []*v1.Pod{pod("a", "v1"), pod("b", "v2"), pod("c", "v3")} {
		state := framework.NewCycleState()
		if s := pl.PreFilterPod(context.Background(), state, p, nil); !s.IsSuccess() {
			t.Fatal(s)
		}
		s := pl.Filter(context.Background(), state, p, node)
		if i < 2 && !s.IsSuccess() || i == 2 && s.Message() != ErrReasonMaxVolumeCountExceeded {
			t.Fatalf("task %d: Filter = %v", i, s)
		}
		p.Spec.NodeName = "n2"
		node.AddPod(p)
	}
}

func TestHints(t *testing.T) {
	job := &framework.QueuedJob{Pods: []*v1.Pod{pod("p", "c")}}
	onNode := pod("x", "d")
	onNode.Spec.NodeName = "n"
	noVolumes := pod("y")
	noVolumes.Spec.NodeName = "n"
	for _, tc := range []struct {
		name     string
		hint     framework.QueueingHintFn
		old, new any
		want     framework.QueueingHint
	}{
		{"limit raised", csiNodeUpdatedHint, csiNode("n", 1), csiNode("n", 2), framework.Queue},
		{"limit lowered", csiNodeUpdatedHint, csiNode("n", 2), csiNode("n", 1), framework.QueueSkip},
		// Filter takes a driver without a count, or one the CSINode does
		// not list, as unlimited: a limit going away helps, one appearing
		// does not.
		{"limit lifted: count removed", csiNodeUpdatedHint, csiNode("n", 1), withoutCount(csiNode("n", 1)), framework.Queue},
		{"limit lifted: driver removed", csiNodeUpdatedHint, csiNode("n", 1), withoutDrivers(csiNode("n", 1)), framework.Queue},
		{"limit set where there was none", csiNodeUpdatedHint, withoutCount(csiNode("n", 1)), csiNode("n", 1), framework.QueueSkip},
		{"driver with a limit added", csiNodeUpdatedHint, withoutDrivers(csiNode("n", 1)), csiNode("n", 1), framework.QueueSkip},
		{"limit unchanged", csiNodeUpdatedHint, csiNode("n", 1), csiNode("n", 1), framework.QueueSkip},
		{"CSINode with a limit deleted", csiNodeDeletedHint, csiNode("n", 1), nil, framework.Queue},
		{"CSINode without a limit deleted", csiNodeDeletedHint, withoutCount(csiNode("n", 1)), nil, framework.QueueSkip},
		{"pod with claims deleted", podDeletedHint, onNode, nil, framework.Queue},
		{"pod without volumes deleted", podDeletedHint, noVolumes, nil, framework.QueueSkip},
		{"unassigned pod deleted", podDeletedHint, pod("z", "d"), nil, framework.QueueSkip},
		{"own claim added", volumeutil.ClaimHint, nil, unbound("c", "fast"), framework.Queue},
		{"other claim added", volumeutil.ClaimHint, nil, unbound("d", "fast"), framework.QueueSkip},
	} {
		got, err := tc.hint(klog.Background(), job, tc.old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// withoutCount returns c with no attach count for any driver.
func withoutCount(c *storagev1.CSINode) *storagev1.CSINode {
	c = c.DeepCopy()
	for i := range c.Spec.Drivers {
		c.Spec.Drivers[i].Allocatable = nil
	}
	return c
}

// withoutDrivers returns c listing no driver.
func withoutDrivers(c *storagev1.CSINode) *storagev1.CSINode {
	c = c.DeepCopy()
	c.Spec.Drivers = nil
	return c
}

// The events the handler raises for CSINode deletions and pods bound to a
// node reach the plugin's hints: each is registered, and its hint answers
// as Filter would change its verdict.
func TestRegisteredHints(t *testing.T) {
	var objs []runtime.Object
	for _, c := range []struct{ name, drv, handle string }{
		{"c", driver, "h1"}, {"c-same-handle", driver, "h1"}, {"d", driver, "h2"},
	} {
		objs = append(objs, bound(c.name, c.drv, c.handle)...)
	}
	otherNS := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "c"}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-d"}}
	objs = append(objs, otherNS, unbound("new", "fast"), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: driver})
	pl := newPlugin(t, objs...)

	assigned := func(p *v1.Pod) *v1.Pod {
		p.Spec.NodeName = "n"
		p.Status.Phase = v1.PodRunning
		return p
	}
	finished := assigned(pod("f", "c"))
	finished.Status.Phase = v1.PodSucceeded
	inOtherNS := assigned(pod("o", "c"))
	inOtherNS.Namespace = "other"

	csiNodeDelete := framework.ClusterEvent{Resource: framework.CSINode, ActionType: framework.Delete, Label: "CSINodeDelete"}
	job := &framework.QueuedJob{Pods: []*v1.Pod{pod("p", "c", "new")}}
	for _, tc := range []struct {
		name     string
		event    framework.ClusterEvent
		old, new any
		want     framework.QueueingHint
	}{
		{"CSINode with a limit deleted", csiNodeDelete, csiNode("n", 1), nil, framework.Queue},
		{"CSINode without a limit deleted", csiNodeDelete, withoutCount(csiNode("n", 1)), nil, framework.QueueSkip},
		{"pod bound with the pending pod's claim", framework.EventAssignedPodAdd, nil, assigned(pod("x", "c")), framework.Queue},
		{"pod bound with another claim of the same volume", framework.EventAssignedPodAdd, nil, assigned(pod("x", "c-same-handle")), framework.Queue},
		{"pod bound with the pending pod's unbound claim", framework.EventAssignedPodAdd, nil, assigned(pod("x", "new")), framework.Queue},
		{"pod bound with another volume", framework.EventAssignedPodAdd, nil, assigned(pod("x", "d")), framework.QueueSkip},
		{"pod bound with a claim of the same name in another namespace", framework.EventAssignedPodAdd, nil, inOtherNS, framework.QueueSkip},
		{"pod bound without volumes", framework.EventAssignedPodAdd, nil, assigned(pod("x")), framework.QueueSkip},
		{"pod not bound", framework.EventAssignedPodAdd, nil, pod("x", "c"), framework.QueueSkip},
		{"finished pod", framework.EventAssignedPodAdd, nil, finished, framework.QueueSkip},
	} {
		hint, matched, err := testutil.RegisteredHint(Name, pl.EventsToRegister(), tc.event, job, tc.old, tc.new)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !matched {
			t.Errorf("%s: %v is not registered", tc.name, tc.event)
			continue
		}
		if hint != tc.want {
			t.Errorf("%s: %v; want %v", tc.name, hint, tc.want)
		}
	}
}

// TestRemovePodThenFilterMatchesRerun: the victim search takes a pod off
// a node at its volume limit and calls RemovePod instead of PreFilterPod;
// Filter must then admit the pod, as it does after PreFilterPod again.
func TestRemovePodThenFilterMatchesRerun(t *testing.T) {
	var objs []runtime.Object
	for _, name := range []string{"v1", "v2", "v3"} {
		objs = append(objs, bound(name, driver, "h-"+name)...)
	}
	pl := newPlugin(t, append(objs, csiNode("n2", 2))...)
	ctx := context.Background()
	preemptor := pod("p", "v1")
	x, y := pod("x", "v2"), pod("y", "v3")
	x.Spec.NodeName, y.Spec.NodeName = "n2", "n2"
	node := testutil.NodeInfo(t, st.MakeNode().Name("n2").Obj(), x, y).Clone()
	state := framework.NewCycleState()
	if s := pl.PreFilterPod(ctx, state, preemptor, nil); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := pl.Filter(ctx, state, preemptor, node); s.Message() != ErrReasonMaxVolumeCountExceeded {
		t.Fatalf("Filter with the node full = %v", s)
	}
	victim := node.Pods[0]
	node.RemovePod(victim.GetUID())
	updated := state.Clone()
	if s := pl.RemovePod(ctx, updated, preemptor, victim, node); !s.IsSuccess() {
		t.Fatal(s)
	}
	rerun := framework.NewCycleState()
	if s := pl.PreFilterPod(ctx, rerun, preemptor, nil); !s.IsSuccess() {
		t.Fatal(s)
	}
	got, want := pl.Filter(ctx, updated, preemptor, node), pl.Filter(ctx, rerun, preemptor, node)
	if got.Code() != want.Code() || !got.IsSuccess() {
		t.Errorf("Filter after RemovePod = %v, after PreFilterPod again = %v; want both to admit the pod", got, want)
	}
	node.AddTask(victim)
	if s := pl.AddPod(ctx, updated, preemptor, victim, node); !s.IsSuccess() {
		t.Fatal(s)
	}
	if s := pl.Filter(ctx, updated, preemptor, node); s.Message() != ErrReasonMaxVolumeCountExceeded {
		t.Errorf("Filter after AddPod of the victim back = %v, want %q", s, ErrReasonMaxVolumeCountExceeded)
	}
}
