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

package volumebinding

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/volumeutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const zoneKey = "topology.kubernetes.io/zone"

var (
	wffc      = storagev1.VolumeBindingWaitForFirstConsumer
	immediate = storagev1.VolumeBindingImmediate
)

func class(name, provisioner string, mode storagev1.VolumeBindingMode, zones ...string) *storagev1.StorageClass {
	c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
	if len(zones) > 0 {
		c.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: zoneKey, Values: zones}}}}
	}
	return c
}

func claim(name, className, size string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &className,
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

func boundClaim(name, pvName string) *v1.PersistentVolumeClaim {
	c := claim(name, "static", "1Gi")
	c.Spec.VolumeName = pvName
	c.Annotations = map[string]string{volumehelpers.AnnBindCompleted: "yes"}
	return c
}

func volume(name, className, size string, zones ...string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			StorageClassName:       className,
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp"}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	if len(zones) > 0 {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: zoneKey, Operator: v1.NodeSelectorOpIn, Values: zones}},
		}}}}
	}
	return pv
}

func podWith(name string, claims ...string) *v1.Pod {
	p := st.MakePod().Namespace("ns").Name(name).UID("uid-" + name).Obj()
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func node(name, zone string) *v1.Node { return st.MakeNode().Name(name).Label(zoneKey, zone).Obj() }

// newPlugin builds the plugin over a fake API holding objs, with synced
// informers.
func newPlugin(t *testing.T, objs ...runtime.Object) (*VolumeBinding, *testutil.Handle) {
	t.Helper()
	p, h := testutil.NewSyncedPlugin(t, New, objs...)
	return p.(*VolumeBinding), h
}

var (
	storage = []runtime.Object{
		class("static", volumehelpers.NotSupportedProvisioner, wffc),
		class("dyn", "csi.example.com", wffc, "a"),
		class("dyn-any", "csi.example.com", wffc),
		class("tracked", "tracked.example.com", wffc),
		class("instant", "csi.example.com", immediate),
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "tracked.example.com"}, Spec: storagev1.CSIDriverSpec{StorageCapacity: ptrTo(true)}},
		&storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cap-a"}, StorageClassName: "tracked",
			NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{zoneKey: "a"}}, Capacity: ptrTo(resource.MustParse("5Gi"))},
	}
)

func ptrTo[T any](v T) *T { return &v }

func TestFilter(t *testing.T) {
	nodeA, nodeB := node("na", "a"), node("nb", "b")
	selected := claim("sel", "dyn-any", "1Gi")
	selected.Annotations = map[string]string{volumehelpers.AnnSelectedNode: "nb"}
	lost := boundClaim("lost", "gone")
	lost.Status.Phase = v1.ClaimLost
	tests := []struct {
		name    string
		objs    []runtime.Object
		pod     *v1.Pod
		skip    bool
		preCode framework.Code
		preMsg  string
		// want maps node name to the rejection message; "" fits.
		want map[string]string
	}{
		{name: "no claims", pod: podWith("p"), skip: true},
		{name: "missing claim", pod: podWith("p", "data"), preCode: framework.UnschedulableAndUnresolvable, preMsg: `persistentvolumeclaim "data" not found`},
		{name: "lost claim", objs: []runtime.Object{lost}, pod: podWith("p", "lost"), preCode: framework.UnschedulableAndUnresolvable,
			preMsg: `persistentvolumeclaim "lost" bound to non-existent persistentvolume "gone"`},
		{name: "unbound immediate claim", objs: []runtime.Object{claim("data", "instant", "1Gi")}, pod: podWith("p", "data"),
			preCode: framework.UnschedulableAndUnresolvable, preMsg: ErrReasonUnboundImmediate},
		{name: "missing claim after an unbound immediate one", objs: []runtime.Object{claim("data", "instant", "1Gi")}, pod: podWith("p", "data", "gone"),
			preCode: framework.UnschedulableAndUnresolvable, preMsg: `persistentvolumeclaim "gone" not found`},
		{name: "unbound claim of a missing class is immediate", objs: []runtime.Object{claim("data", "nosuch", "1Gi")}, pod: podWith("p", "data"),
			preCode: framework.UnschedulableAndUnresolvable, preMsg: ErrReasonUnboundImmediate},
		{name: "bound volume with zone affinity", objs: []runtime.Object{boundClaim("data", "pv1"), volume("pv1", "static", "1Gi", "a")},
			pod: podWith("p", "data"), want: map[string]string{"na": "", "nb": ErrReasonNodeConflict}},
		{name: "bound to a missing volume", objs: []runtime.Object{boundClaim("data", "pv1")},
			pod: podWith("p", "data"), want: map[string]string{"na": ErrReasonPVNotExist, "nb": ErrReasonPVNotExist}},
		{name: "static volume in zone a", objs: []runtime.Object{claim("data", "static", "1Gi"), volume("pv1", "static", "2Gi", "a")},
			pod: podWith("p", "data"), want: map[string]string{"na": "", "nb": ErrReasonBindConflict}},
		{name: "static volume too small", objs: []runtime.Object{claim("data", "static", "3Gi"), volume("pv1", "static", "2Gi", "a")},
			pod: podWith("p", "data"), want: map[string]string{"na": ErrReasonBindConflict, "nb": ErrReasonBindConflict}},
		{name: "static volume of another class", objs: []runtime.Object{claim("data", "static", "1Gi"), volume("pv1", "other", "2Gi")},
			pod: podWith("p", "data"), want: map[string]string{"na": ErrReasonBindConflict, "nb": ErrReasonBindConflict}},
		{name: "two claims, one volume", objs: []runtime.Object{claim("d1", "static", "1Gi"), claim("d2", "static", "1Gi"), volume("pv1", "static", "2Gi")},
			pod: podWith("p", "d1", "d2"), want: map[string]string{"na": ErrReasonBindConflict, "nb": ErrReasonBindConflict}},
		{name: "two claims, two volumes", objs: []runtime.Object{claim("d1", "static", "1Gi"), claim("d2", "static", "1Gi"), volume("pv1", "static", "2Gi"), volume("pv2", "static", "2Gi", "b")},
			pod: podWith("p", "d1", "d2"), want: map[string]string{"na": ErrReasonBindConflict, "nb": ""}},
		{name: "provisioning restricted to zone a", objs: []runtime.Object{claim("data", "dyn", "1Gi")},
			pod: podWith("p", "data"), want: map[string]string{"na": "", "nb": ErrReasonBindConflict}},
		{name: "static volume preferred, else provisioned", objs: []runtime.Object{claim("data", "dyn-any", "1Gi"), volume("pv1", "dyn-any", "1Gi", "b")},
			pod: podWith("p", "data"), want: map[string]string{"na": "", "nb": ""}},
		{name: "capacity in zone a only", objs: []runtime.Object{claim("data", "tracked", "1Gi")},
			pod: podWith("p", "data"), want: map[string]string{"na": "", "nb": ErrReasonNotEnoughSpace}},
		{name: "capacity too small", objs: []runtime.Object{claim("data", "tracked", "10Gi")},
			pod: podWith("p", "data"), want: map[string]string{"na": ErrReasonNotEnoughSpace, "nb": ErrReasonNotEnoughSpace}},
		{name: "node already selected", objs: []runtime.Object{selected},
			pod: podWith("p", "sel"), want: map[string]string{"na": ErrReasonBindConflict, "nb": ""}},
		{name: "bound conflict and unbound conflict together", objs: []runtime.Object{boundClaim("b", "pv1"), volume("pv1", "static", "1Gi", "a"), claim("data", "dyn", "1Gi")},
			pod: podWith("p", "b", "data"), want: map[string]string{"na": "", "nb": ErrReasonNodeConflict + ", " + ErrReasonBindConflict}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, _ := newPlugin(t, append(slices.Clone(storage), tt.objs...)...)
			state := framework.NewCycleState()
			nodes := []*framework.NodeInfo{testutil.NodeInfo(t, nodeA), testutil.NodeInfo(t, nodeB)}
			s := pl.PreFilterPod(context.Background(), state, tt.pod, nodes)
			if tt.skip {
				if !s.IsSkip() {
					t.Fatalf("PreFilterPod = %v, want Skip", s)
				}
				return
			}
			if tt.preCode != framework.Success {
				if s.Code() != tt.preCode || s.Message() != tt.preMsg {
					t.Fatalf("PreFilterPod = %v, want %v: %s", s, tt.preCode, tt.preMsg)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreFilterPod = %v", s)
			}
			for _, ni := range nodes {
				got := pl.Filter(context.Background(), state, tt.pod, ni)
				want := tt.want[ni.Name()]
				if want == "" {
					if !got.IsSuccess() {
						t.Errorf("Filter on %s = %v, want success", ni.Name(), got)
					}
					continue
				}
				if got.Code() != framework.UnschedulableAndUnresolvable || got.Message() != want {
					t.Errorf("Filter on %s = %v, want UnschedulableAndUnresolvable: %s", ni.Name(), got, want)
				}
			}
		})
	}
}

// TestGangDoesNotShareVolumes places two pods of a gang, each with its own
// claim, where one volume fits: the second pod must not get it too, until
// the first's reservation is undone.
func TestGangDoesNotShareVolumes(t *testing.T) {
	pl, _ := newPlugin(t, append(slices.Clone(storage), claim("d1", "static", "1Gi"), claim("d2", "static", "1Gi"), volume("pv1", "static", "1Gi"))...)
	ctx := context.Background()
	state := framework.NewCycleState()
	nodes := []*framework.NodeInfo{testutil.NodeInfo(t, node("na", "a"))}
	p1, p2 := podWith("p1", "d1"), podWith("p2", "d2")
	place := func(p *v1.Pod) *framework.Status {
		if s := pl.PreFilterPod(ctx, state, p, nodes); !s.IsSuccess() {
			t.Fatalf("PreFilterPod(%s) = %v", p.Name, s)
		}
		return pl.Filter(ctx, state, p, nodes[0])
	}
	if s := place(p1); !s.IsSuccess() {
		t.Fatalf("first pod: Filter = %v", s)
	}
	if s := pl.Reserve(ctx, state, p1, "na"); !s.IsSuccess() {
		t.Fatalf("Reserve = %v", s)
	}
	if s := place(p2); s.Message() != ErrReasonBindConflict {
		t.Fatalf("second pod: Filter = %v, want %s", s, ErrReasonBindConflict)
	}
	// A new cycle does not see it free either.
	if s := pl.PreFilterPod(ctx, framework.NewCycleState(), p2, nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	pl.Unreserve(ctx, state, p1, "na")
	if s := place(p2); !s.IsSuccess() {
		t.Fatalf("after Unreserve: Filter = %v", s)
	}
}

// pvController plays the PersistentVolume controller (and an external
// provisioner) on the fake API until ctx ends: a claim whose volume names
// it, or that is annotated with a selected node, is completed.
func pvController(ctx context.Context, t *testing.T, h *testutil.Handle) {
	cs := h.Client.CoreV1()
	_ = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pvs, _ := cs.PersistentVolumes().List(ctx, metav1.ListOptions{})
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef == nil {
				continue
			}
			pvc, err := cs.PersistentVolumeClaims(pv.Spec.ClaimRef.Namespace).Get(ctx, pv.Spec.ClaimRef.Name, metav1.GetOptions{})
			if err != nil || fullyBound(pvc) {
				continue
			}
			pvc.Spec.VolumeName = pv.Name
			metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, volumehelpers.AnnBindCompleted, "yes")
			if _, err := cs.PersistentVolumeClaims(pvc.Namespace).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
				t.Logf("pv controller: %v", err)
			}
		}
		pvcs, _ := cs.PersistentVolumeClaims("ns").List(ctx, metav1.ListOptions{})
		for _, pvc := range pvcs.Items {
			if fullyBound(&pvc) || pvc.Annotations[volumehelpers.AnnSelectedNode] == "" {
				continue
			}
			pv := volume("pvc-"+string(pvc.UID), volumehelpers.GetPersistentVolumeClaimClass(&pvc), "1Gi")
			pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID}
			if _, err := cs.PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
				t.Logf("provisioner: %v", err)
			}
		}
		return false, nil
	})
}

func TestBind(t *testing.T) {
	for _, tc := range []struct {
		name     string
		claim    *v1.PersistentVolumeClaim
		objs     []runtime.Object
		wantPV   string
		selected bool
	}{
		{name: "static", claim: claim("data", "static", "1Gi"), objs: []runtime.Object{volume("pv1", "static", "1Gi")}, wantPV: "pv1"},
		{name: "dynamic", claim: claim("data", "dyn", "1Gi"), wantPV: "pvc-uid-data", selected: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, h := newPlugin(t, append(append(slices.Clone(storage), tc.claim), tc.objs...)...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ctx = klog.NewContext(ctx, klog.Background())
			state := framework.NewCycleState()
			pod := podWith("p", "data")
			nodes := []*framework.NodeInfo{testutil.NodeInfo(t, node("na", "a"))}
			if s := pl.PreFilterPod(ctx, state, pod, nodes); !s.IsSuccess() {
				t.Fatal(s)
			}
			if s := pl.Filter(ctx, state, pod, nodes[0]); !s.IsSuccess() {
				t.Fatal(s)
			}
			if s := pl.Reserve(ctx, state, pod, "na"); !s.IsSuccess() {
				t.Fatal(s)
			}
			go pvController(ctx, t, h)
			if s := pl.Bind(ctx, state, pod, "na"); !s.IsSkip() {
				t.Fatalf("Bind = %v, want Skip after binding the volumes", s)
			}
			if len(pl.assumed) != 0 {
				t.Errorf("assumed = %v after the volumes were bound", pl.assumed)
			}
			pvc, err := h.Client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "data", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pvc.Spec.VolumeName != tc.wantPV {
				t.Errorf("claim bound to %q, want %q", pvc.Spec.VolumeName, tc.wantPV)
			}
			if got := pvc.Annotations[volumehelpers.AnnSelectedNode]; tc.selected != (got == "na") {
				t.Errorf("selected-node annotation = %q, want set: %v", got, tc.selected)
			}
			pv, err := h.Client.CoreV1().PersistentVolumes().Get(ctx, tc.wantPV, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
				t.Errorf("volume's claimRef = %+v", pv.Spec.ClaimRef)
			}
			if !tc.selected && pv.Annotations[volumehelpers.AnnBoundByController] != "yes" {
				t.Errorf("volume lacks %s: %v", volumehelpers.AnnBoundByController, pv.Annotations)
			}
		})
	}
	t.Run("nothing to bind", func(t *testing.T) {
		pl, _ := newPlugin(t)
		if s := pl.Bind(context.Background(), framework.NewCycleState(), podWith("p"), "na"); !s.IsSkip() {
			t.Fatalf("Bind = %v, want Skip", s)
		}
	})
	t.Run("claim never bound", func(t *testing.T) {
		// No PersistentVolume controller: Bind must not let the pod through.
		pl, h := newPlugin(t, append(slices.Clone(storage), claim("data", "static", "1Gi"), volume("pv1", "static", "1Gi"))...)
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		state := framework.NewCycleState()
		pod := podWith("p", "data")
		nodes := []*framework.NodeInfo{testutil.NodeInfo(t, node("na", "a"))}
		pl.PreFilterPod(ctx, state, pod, nodes)
		pl.Filter(ctx, state, pod, nodes[0])
		if s := pl.Reserve(ctx, state, pod, "na"); !s.IsSuccess() {
			t.Fatal(s)
		}
		s := pl.Bind(ctx, state, pod, "na")
		if s.Code() != framework.Error || !strings.Contains(s.Message(), `binding volumes of pod ns/p on node "na"`) {
			t.Fatalf("Bind = %v, want an error once the context ends", s)
		}
		pv, err := h.Client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
		if err != nil || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "data" {
			t.Errorf("volume not bound to the claim before the wait: %+v, %v", pv.Spec.ClaimRef, err)
		}
	})
	t.Run("volume taken meanwhile", func(t *testing.T) {
		pl, h := newPlugin(t, append(slices.Clone(storage), claim("data", "static", "1Gi"), volume("pv1", "static", "1Gi"))...)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		state := framework.NewCycleState()
		pod := podWith("p", "data")
		nodes := []*framework.NodeInfo{testutil.NodeInfo(t, node("na", "a"))}
		pl.PreFilterPod(ctx, state, pod, nodes)
		pl.Filter(ctx, state, pod, nodes[0])
		if s := pl.Reserve(ctx, state, pod, "na"); !s.IsSuccess() {
			t.Fatal(s)
		}
		pv, err := h.Client.CoreV1().PersistentVolumes().Get(ctx, "pv1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "other", UID: "uid-other"}
		if _, err := h.Client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
			pv, err := pl.pvs.Get("pv1")
			return err == nil && pv.Spec.ClaimRef != nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		s := pl.Bind(ctx, state, pod, "na")
		if s.Code() != framework.Error || !strings.Contains(s.Message(), "was bound to claim ns/other meanwhile") {
			t.Fatalf("Bind = %v, want an error naming the other claim", s)
		}
		got, _ := h.Client.CoreV1().PersistentVolumes().Get(ctx, "pv1", metav1.GetOptions{})
		if got.Spec.ClaimRef.Name != "other" {
			t.Errorf("Bind overwrote the volume's claimRef: %+v", got.Spec.ClaimRef)
		}
		// The newer version of the volume replaces the assumption.
		pl.Unreserve(ctx, state, pod, "na")
		if len(pl.assumed) != 0 {
			t.Errorf("assumed = %v after Unreserve", pl.assumed)
		}
	})
	t.Run("provisioning fails", func(t *testing.T) {
		pl, h := newPlugin(t, append(slices.Clone(storage), claim("data", "dyn", "1Gi"))...)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		state := framework.NewCycleState()
		pod := podWith("p", "data")
		nodes := []*framework.NodeInfo{testutil.NodeInfo(t, node("na", "a"))}
		pl.PreFilterPod(ctx, state, pod, nodes)
		pl.Filter(ctx, state, pod, nodes[0])
		pl.Reserve(ctx, state, pod, "na")
		// A provisioner that gives up moves the claim to another node.
		go func() {
			_ = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				pvc, err := h.Client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "data", metav1.GetOptions{})
				if err != nil || pvc.Annotations[volumehelpers.AnnSelectedNode] != "na" {
					return false, nil
				}
				pvc.Annotations[volumehelpers.AnnSelectedNode] = "other"
				_, err = h.Client.CoreV1().PersistentVolumeClaims("ns").Update(ctx, pvc, metav1.UpdateOptions{})
				return err == nil, nil
			})
		}()
		s := pl.Bind(ctx, state, pod, "na")
		if s.Code() != framework.Error || !strings.Contains(s.Message(), `provisioning failed for PVC "data"`) {
			t.Fatalf("Bind = %v, want the provisioning failure", s)
		}
	})
}

func TestClaimHint(t *testing.T) {
	job := &framework.QueuedJob{Pods: []*v1.Pod{podWith("p", "data")}}
	for _, tc := range []struct {
		pvc  *v1.PersistentVolumeClaim
		want framework.QueueingHint
	}{
		{claim("data", "static", "1Gi"), framework.Queue},
		{claim("other", "static", "1Gi"), framework.QueueSkip},
	} {
		got, err := volumeutil.ClaimHint(klog.Background(), job, nil, tc.pvc)
		if err != nil || got != tc.want {
			t.Errorf("volumeutil.ClaimHint(%s) = %v, %v; want %v", tc.pvc.Name, got, err, tc.want)
		}
	}
	if _, err := volumeutil.ClaimHint(klog.Background(), job, nil, "junk"); err == nil {
		t.Error("ClaimHint accepted a string")
	}
}

// TestDriverHints: the CSIDriver events the handler raises reach the
// plugin's hints, which retry a job when a driver's storage-capacity check
// goes away, by an update or by the driver's deletion.
func TestDriverHints(t *testing.T) {
	driver := func(tracks *bool) *storagev1.CSIDriver {
		return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "tracked.example.com"}, Spec: storagev1.CSIDriverSpec{StorageCapacity: tracks}}
	}
	update := framework.ClusterEvent{Resource: framework.CSIDriver, ActionType: framework.UpdateGeneric, Label: "CSIDriverUpdate"}
	del := framework.ClusterEvent{Resource: framework.CSIDriver, ActionType: framework.Delete, Label: "CSIDriverDelete"}
	job := &framework.QueuedJob{Pods: []*v1.Pod{podWith("p", "data")}}
	for _, tc := range []struct {
		name     string
		event    framework.ClusterEvent
		old, new any
		want     framework.QueueingHint
	}{
		{"stopped tracking capacity", update, driver(ptrTo(true)), driver(ptrTo(false)), framework.Queue},
		{"tracking unset", update, driver(ptrTo(true)), driver(nil), framework.Queue},
		{"started tracking capacity", update, driver(ptrTo(false)), driver(ptrTo(true)), framework.QueueSkip},
		{"still tracking capacity", update, driver(ptrTo(true)), driver(ptrTo(true)), framework.QueueSkip},
		{"driver tracking capacity deleted", del, driver(ptrTo(true)), nil, framework.Queue},
		{"driver not tracking capacity deleted", del, driver(ptrTo(false)), nil, framework.QueueSkip},
		{"driver without the field deleted", del, driver(nil), nil, framework.QueueSkip},
	} {
		hint, matched, err := testutil.RegisteredHint(Name, (&VolumeBinding{}).EventsToRegister(), tc.event, job, tc.old, tc.new)
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
