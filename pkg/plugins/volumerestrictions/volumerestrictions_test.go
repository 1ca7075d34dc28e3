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

package volumerestrictions

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/volumeutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func claim(name string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.PersistentVolumeClaimSpec{AccessModes: modes}}
}

func pod(name string, vols ...v1.VolumeSource) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID("uid-" + name).Obj()
	for i, v := range vols {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: string(rune('a' + i)), VolumeSource: v})
	}
	return p
}

// inNamespace returns p moved to namespace ns.
func inNamespace(ns string, p *v1.Pod) *v1.Pod {
	p.Namespace = ns
	return p
}

func pvcVol(name string) v1.VolumeSource {
	return v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

func gce(name string, ro bool) v1.VolumeSource {
	return v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: name, ReadOnly: ro}}
}

func ebs(id string) v1.VolumeSource {
	return v1.VolumeSource{AWSElasticBlockStore: &v1.AWSElasticBlockStoreVolumeSource{VolumeID: id}}
}

func iscsi(iqn string, ro bool) v1.VolumeSource {
	return v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{IQN: iqn, ReadOnly: ro}}
}

func rbd(mons []string, image string, ro bool) v1.VolumeSource {
	return v1.VolumeSource{RBD: &v1.RBDVolumeSource{CephMonitors: mons, RBDPool: "p", RBDImage: image, ReadOnly: ro}}
}

func newPlugin(t *testing.T, objs ...runtime.Object) *VolumeRestrictions {
	t.Helper()
	p, _ := testutil.NewSyncedPlugin(t, New, objs...)
	return p.(*VolumeRestrictions)
}

func TestFilter(t *testing.T) {
	objs := []runtime.Object{claim("rwop", v1.ReadWriteOncePod), claim("rwo", v1.ReadWriteOnce)}
	n1 := st.MakeNode().Name("n1").Obj()
	n2 := st.MakeNode().Name("n2").Obj()
	finished := pod("done", pvcVol("rwop"))
	finished.Status.Phase = v1.PodSucceeded
	tests := []struct {
		name     string
		pod      *v1.Pod
		on1, on2 []*v1.Pod
		skip     bool
		preMsg   string
		want1    string
		want2    string
	}{
		{name: "no volumes", pod: pod("p"), on1: []*v1.Pod{pod("x", gce("d", false))}, skip: true},
		{name: "unused rwop claim", pod: pod("p", pvcVol("rwop")), skip: true},
		{name: "rwo claim shared", pod: pod("p", pvcVol("rwo")), on1: []*v1.Pod{pod("x", pvcVol("rwo"))}, skip: true},
		{name: "missing claim", pod: pod("p", pvcVol("nope")), preMsg: `persistentvolumeclaim "nope" not found`},
		{name: "rwop claim used on another node", pod: pod("p", pvcVol("rwop")), on2: []*v1.Pod{pod("x", pvcVol("rwop"))},
			want1: ErrReasonReadWriteOncePodConflict, want2: ErrReasonReadWriteOncePodConflict},
		{name: "rwop claim used by a finished pod", pod: pod("p", pvcVol("rwop")), on1: []*v1.Pod{finished}, skip: true},
		{name: "same gce disk", pod: pod("p", gce("d", false)), on1: []*v1.Pod{pod("x", gce("d", true))}, want1: ErrReasonDiskConflict},
		{name: "same gce disk read-only twice", pod: pod("p", gce("d", true)), on1: []*v1.Pod{pod("x", gce("d", true))}},
		{name: "other gce disk", pod: pod("p", gce("d", false)), on1: []*v1.Pod{pod("x", gce("e", false))}},
		{name: "same ebs volume", pod: pod("p", ebs("v")), on2: []*v1.Pod{pod("x", ebs("v"))}, want2: ErrReasonDiskConflict},
		{name: "same iqn", pod: pod("p", iscsi("q", false)), on1: []*v1.Pod{pod("x", iscsi("q", true))}, want1: ErrReasonDiskConflict},
		{name: "same iqn read-only", pod: pod("p", iscsi("q", true)), on1: []*v1.Pod{pod("x", iscsi("q", true))}},
		{name: "rbd overlapping monitors", pod: pod("p", rbd([]string{"m1", "m2"}, "i", false)), on1: []*v1.Pod{pod("x", rbd([]string{"m2"}, "i", false))}, want1: ErrReasonDiskConflict},
		{name: "rbd disjoint monitors", pod: pod("p", rbd([]string{"m1"}, "i", false)), on1: []*v1.Pod{pod("x", rbd([]string{"m2"}, "i", false))}},
		{name: "rbd other image", pod: pod("p", rbd([]string{"m1"}, "i", false)), on1: []*v1.Pod{pod("x", rbd([]string{"m1"}, "j", false))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t, objs...)
			nodes := []*framework.NodeInfo{testutil.NodeInfo(t, n1, tt.on1...), testutil.NodeInfo(t, n2, tt.on2...)}
			state := framework.NewCycleState()
			s := pl.PreFilterPod(context.Background(), state, tt.pod, nodes)
			switch {
			case tt.skip:
				if !s.IsSkip() {
					t.Fatalf("PreFilterPod = %v, want Skip", s)
				}
				return
			case tt.preMsg != "":
				if s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != tt.preMsg {
					t.Fatalf("PreFilterPod = %v, want UnschedulableAndUnresolvable: %s", s, tt.preMsg)
				}
				return
			case !s.IsSuccess():
				t.Fatalf("PreFilterPod = %v", s)
			}
			for i, want := range []string{tt.want1, tt.want2} {
				got := pl.Filter(context.Background(), state, tt.pod, nodes[i])
				if want == "" && !got.IsSuccess() || want != "" && (got.Code() != framework.Unschedulable || got.Message() != want) {
					t.Errorf("Filter on %s = %v, want %q", nodes[i].Name(), got, want)
				}
			}
		})
	}
}

// The second task of a gang sharing a ReadWriteOncePod claim sees the
// first, placed earlier in the cycle.
func TestGangSharingReadWriteOncePod(t *testing.T) {
	pl := newPlugin(t, claim("rwop", v1.ReadWriteOncePod))
	node := testutil.NodeInfo(t, st.MakeNode().Name("n1").Obj()).Clone()
	a, b := pod("a", pvcVol("rwop")), pod("b", pvcVol("rwop"))
	if s := pl.PreFilterPod(context.Background(), framework.NewCycleState(), a, []*framework.NodeInfo{node}); !s.IsSkip() {
		t.Fatalf("first task: PreFilterPod = %v, want Skip", s)
	}
	a.Spec.NodeName = "n1"
	node.AddPod(a)
	state := framework.NewCycleState()
	if s := pl.PreFilterPod(context.Background(), state, b, []*framework.NodeInfo{node}); !s.IsSuccess() {
		t.Fatalf("second task: PreFilterPod = %v", s)
	}
	if s := pl.Filter(context.Background(), state, b, node); s.Message() != ErrReasonReadWriteOncePodConflict {
		t.Errorf("second task: Filter = %v", s)
	}
}

func TestHints(t *testing.T) {
	job := &framework.QueuedJob{Pods: []*v1.Pod{pod("p", pvcVol("c"), gce("d", false), ebs("e"))}}
	for _, tc := range []struct {
		name string
		hint framework.QueueingHintFn
		old  any
		new  any
		want framework.QueueingHint
	}{
		{"deleted pod used the claim", podDeletedHint, pod("x", pvcVol("c")), nil, framework.Queue},
		{"deleted pod used the disk", podDeletedHint, pod("x", gce("d", true)), nil, framework.Queue},
		{"deleted pod unrelated", podDeletedHint, pod("x", pvcVol("other")), nil, framework.QueueSkip},
		// In-tree disks are not namespaced: a pod of another namespace
		// holding the disk blocks the pending pod in Filter, so its
		// deletion must retry it.
		{"deleted pod of another namespace used the disk", podDeletedHint, inNamespace("other", pod("x", gce("d", false))), nil, framework.Queue},
		{"deleted pod of another namespace used an EBS disk", podDeletedHint, inNamespace("other", pod("x", ebs("e"))), nil, framework.Queue},
		// Claims are namespaced: a claim of the same name in another
		// namespace is another claim.
		{"deleted pod of another namespace used a claim of the same name", podDeletedHint, inNamespace("other", pod("x", pvcVol("c"))), nil, framework.QueueSkip},
		{"deleted pod of another namespace used another disk", podDeletedHint, inNamespace("other", pod("x", gce("z", false))), nil, framework.QueueSkip},
		{"claim added", volumeutil.ClaimHint, nil, claim("c"), framework.Queue},
		{"other claim added", volumeutil.ClaimHint, nil, claim("z"), framework.QueueSkip},
	} {
		got, err := tc.hint(klog.Background(), job, tc.old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
