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

package volumezone

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

func claim(name, class, pv string) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv}}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

func volume(name string, labels map[string]string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func class(name string, mode *storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "p", VolumeBindingMode: mode}
}

func pod(claims ...string) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name("p").UID("uid-p").Obj()
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c + "-vol", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func newPlugin(t *testing.T, objs ...runtime.Object) *VolumeZone {
	t.Helper()
	p, _ := testutil.NewSyncedPlugin(t, New, objs...)
	return p.(*VolumeZone)
}

func TestFilter(t *testing.T) {
	wffc, imm := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	objs := []runtime.Object{
		class("wffc", &wffc), class("imm", &imm), class("nomode", nil),
		volume("pv-a", map[string]string{v1.LabelTopologyZone: "a"}),
		volume("pv-ab", map[string]string{v1.LabelTopologyZone: "a__b"}),
		volume("pv-beta", map[string]string{v1.LabelFailureDomainBetaZone: "b", v1.LabelFailureDomainBetaRegion: "r"}),
		volume("pv-bad", map[string]string{v1.LabelTopologyZone: "a__"}),
		volume("pv-none", nil),
		claim("a", "", "pv-a"), claim("ab", "", "pv-ab"), claim("beta", "", "pv-beta"), claim("bad", "", "pv-bad"),
		claim("none", "", "pv-none"), claim("lost", "", "pv-gone"),
		claim("late", "wffc", ""), claim("waiting", "imm", ""), claim("classless", "", ""), claim("nomode", "nomode", ""),
		claim("noclass", "missing", ""),
	}
	nodeA := st.MakeNode().Name("na").Label(v1.LabelTopologyZone, "a").Obj()
	nodeB := st.MakeNode().Name("nb").Label(v1.LabelTopologyZone, "b").Label(v1.LabelTopologyRegion, "r").Obj()
	nodeBetaB := st.MakeNode().Name("nbb").Label(v1.LabelFailureDomainBetaZone, "b").Label(v1.LabelFailureDomainBetaRegion, "r").Obj()
	bare := st.MakeNode().Name("bare").Obj()
	nodes := []*v1.Node{nodeA, nodeB, nodeBetaB, bare}
	tests := []struct {
		name   string
		pod    *v1.Pod
		skip   bool
		preMsg string
		// fits lists the nodes that pass.
		fits []string
	}{
		{name: "no volumes", pod: pod(), skip: true},
		{name: "volume without zone", pod: pod("none"), skip: true},
		{name: "unbound wait-for-first-consumer claim", pod: pod("late"), skip: true},
		{name: "malformed zone label ignored", pod: pod("bad"), skip: true},
		{name: "zone a", pod: pod("a"), fits: []string{"na", "bare"}},
		{name: "zones a and b", pod: pod("ab"), fits: []string{"na", "nb", "bare"}},
		{name: "beta labels match GA and beta node labels", pod: pod("beta"), fits: []string{"nb", "nbb", "bare"}},
		{name: "two volumes", pod: pod("a", "beta"), fits: []string{"bare"}},
		{name: "missing claim", pod: pod("nope"), preMsg: `persistentvolumeclaim "nope" not found`},
		{name: "missing volume", pod: pod("lost"), preMsg: `persistentvolume "pv-gone" not found`},
		{name: "unbound immediate claim", pod: pod("waiting"), preMsg: "PersistentVolume had no name"},
		{name: "unbound claim without class", pod: pod("classless"), preMsg: "PersistentVolumeClaim had no pv name and storageClass name"},
		{name: "class without binding mode", pod: pod("nomode"), preMsg: `VolumeBindingMode not set for StorageClass "nomode"`},
		{name: "missing class", pod: pod("noclass"), preMsg: `storageclass.storage.k8s.io "missing" not found`},
		{name: "claim without name", pod: pod(""), preMsg: "PersistentVolumeClaim had no name"},
	}
	pl := newPlugin(t, objs...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := framework.NewCycleState()
			s := pl.PreFilterPod(context.Background(), state, tt.pod, nil)
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
			for _, n := range nodes {
				got := pl.Filter(context.Background(), state, tt.pod, testutil.NodeInfo(t, n))
				fits := false
				for _, f := range tt.fits {
					fits = fits || f == n.Name
				}
				if fits && !got.IsSuccess() || !fits && (got.Code() != framework.UnschedulableAndUnresolvable || got.Message() != ErrReasonConflict) {
					t.Errorf("Filter on %s = %v, want fit %v", n.Name, got, fits)
				}
			}
		})
	}
}

func TestHints(t *testing.T) {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	job := &framework.QueuedJob{Pods: []*v1.Pod{pod("c")}}
	zoneA := volume("v", map[string]string{v1.LabelTopologyZone: "a"})
	zoneB := volume("v", map[string]string{v1.LabelTopologyZone: "b"})
	relabelled := zoneA.DeepCopy()
	relabelled.Labels["other"] = "x"
	for _, tc := range []struct {
		name     string
		hint     framework.QueueingHintFn
		old, new any
		want     framework.QueueingHint
	}{
		{"wffc class", classAddedHint, nil, class("c", &wffc), framework.Queue},
		{"immediate class", classAddedHint, nil, class("c", nil), framework.QueueSkip},
		{"own claim", volumeutil.ClaimHint, nil, claim("c", "", ""), framework.Queue},
		{"other claim", volumeutil.ClaimHint, nil, claim("d", "", ""), framework.QueueSkip},
		{"new volume", volumeHint, nil, zoneA, framework.Queue},
		{"zone changed", volumeHint, zoneA, zoneB, framework.Queue},
		{"other label changed", volumeHint, zoneA, relabelled, framework.QueueSkip},
	} {
		got, err := tc.hint(klog.Background(), job, tc.old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
