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

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const e2eZoneKey = "topology.kubernetes.io/zone"

// mustClass creates a WaitForFirstConsumer StorageClass named after the
// namespace, restricted to zones if any, and deletes it after the test.
func mustClass(t *testing.T, ns, provisioner string, zones ...string) string {
	t.Helper()
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: ns}, Provisioner: provisioner, VolumeBindingMode: &mode}
	if len(zones) > 0 {
		c.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: e2eZoneKey, Values: zones}}}}
	}
	if _, err := cp.Client.StorageV1().StorageClasses().Create(t.Context(), c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StorageClass %s: %v", c.Name, err)
	}
	t.Cleanup(func() {
		_ = cp.Client.StorageV1().StorageClasses().Delete(context.Background(), c.Name, metav1.DeleteOptions{})
	})
	return c.Name
}

// e2eVolume is a 1Gi local volume of class on node nodeName (nodeAffinity
// on the node's hostname label).
func e2eVolume(name, class, nodeName string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			StorageClassName:       class,
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/" + name}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}},
			}}}},
		},
	}
}

// mustVolume creates pv, Available as the PersistentVolume controller
// (which does not run here) would make it, and deletes it after the test.
func mustVolume(t *testing.T, pv *v1.PersistentVolume) {
	t.Helper()
	created, err := cp.Client.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating PersistentVolume %s: %v", pv.Name, err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	created.Status.Phase = v1.VolumeAvailable
	if _, err := cp.Client.CoreV1().PersistentVolumes().UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("making PersistentVolume %s Available: %v", pv.Name, err)
	}
}

// mustClaim creates a 1Gi claim of class.
func mustClaim(t *testing.T, ns, name, class string) {
	t.Helper()
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating claim %s/%s: %v", ns, name, err)
	}
}

// withClaims returns pod with a volume for each claim.
func withClaims(w *st.PodWrapper, claims ...string) *v1.Pod {
	p := w.Obj()
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

// volumeNode is the node a volume's hostname nodeAffinity names.
func volumeNode(pv *v1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range term.MatchExpressions {
			if e.Key == v1.LabelHostname && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// playVolumeControllers stands in, until the test ends, for the
// PersistentVolume controller and an external provisioner of class
// provisioned (none when ""), which do not run here: a claim of ns a
// volume's claimRef names is bound to it; a claim of class provisioned
// with a selected node gets a new volume on that node, bound to it. It
// returns the names of the volumes it provisioned, by claim name.
func playVolumeControllers(t *testing.T, ns, provisioned string) *sync.Map {
	made := &sync.Map{}
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); <-done })
	cs := cp.Client.CoreV1()
	bind := func(ctx context.Context, pvc *v1.PersistentVolumeClaim, pvName string) {
		pvc.Spec.VolumeName = pvName
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, volumehelpers.AnnBindCompleted, "yes")
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, volumehelpers.AnnBoundByController, "yes")
		updated, err := cs.PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{})
		if err != nil {
			return // a conflict: the next round retries
		}
		updated.Status.Phase = v1.ClaimBound
		_, _ = cs.PersistentVolumeClaims(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	}
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			claims, err := cs.PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			pvs, err := cs.PersistentVolumes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for i := range claims.Items {
				pvc := &claims.Items[i]
				if pvc.Spec.VolumeName != "" {
					continue
				}
				for _, pv := range pvs.Items {
					if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == ns && ref.Name == pvc.Name && ref.UID == pvc.UID {
						bind(ctx, pvc, pv.Name)
						break
					}
				}
				selected := pvc.Annotations[volumehelpers.AnnSelectedNode]
				if provisioned == "" || selected == "" || pvc.Spec.VolumeName != "" ||
					pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != provisioned {
					continue
				}
				if _, ok := made.Load(pvc.Name); ok {
					continue
				}
				pv := e2eVolume("pvc-"+string(pvc.UID), provisioned, selected)
				pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: pvc.Name, UID: pvc.UID}
				if _, err := cs.PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
					continue
				}
				made.Store(pvc.Name, pv.Name)
				name := pv.Name
				t.Cleanup(func() { _ = cs.PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
			}
			return false, nil
		})
	}()
	return made
}

// claimVolume returns the volume claim ns/name is bound to.
func claimVolume(t *testing.T, ns, name string) *v1.PersistentVolume {
	t.Helper()
	pvc, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Spec.VolumeName == "" {
		t.Fatalf("claim %s/%s is not bound", ns, name)
	}
	pv, err := cp.Client.CoreV1().PersistentVolumes().Get(t.Context(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID {
		t.Fatalf("volume %s of claim %s/%s has claimRef %+v", pv.Name, ns, name, ref)
	}
	return pv
}

// A gang of two pods, each with a WaitForFirstConsumer claim of a class
// without a provisioner, and one local volume on each of two nodes: the
// scheduler binds each claim to its own volume and each pod to its
// volume's node. A third pod whose claim no free volume can satisfy is
// unschedulable with kube-scheduler's reason.
func TestWaitForFirstConsumerStaticVolumes(t *testing.T) {
	ns := createNamespace(t)
	big := res{"cpu": "4", "memory": "8Gi", "pods": "10"}
	mustNode(t, poolNode(t, ns+"-n1", big).Label(v1.LabelHostname, ns+"-n1").Obj())
	mustNode(t, poolNode(t, ns+"-n2", big).Label(v1.LabelHostname, ns+"-n2").Obj())
	class := mustClass(t, ns, volumehelpers.NotSupportedProvisioner)
	mustVolume(t, e2eVolume(ns+"-pv1", class, ns+"-n1"))
	mustVolume(t, e2eVolume(ns+"-pv2", class, ns+"-n2"))
	playVolumeControllers(t, ns, "")
	startPoolScheduler(t)

	for _, name := range []string{"c0", "c1", "c2"} {
		mustClaim(t, ns, name, class)
	}
	member := func(name string) *st.PodWrapper {
		return st.MakePod().Namespace(ns).Name(name).Group("g").MinAvailable("2").Req(res{"cpu": "1"})
	}
	mustPod(t, withClaims(member("g-0"), "c0"))
	mustPod(t, withClaims(member("g-1"), "c1"))
	placed := waitForPods(t, ns, "the gang bound", func(n map[string]string) bool { return n["g-0"] != "" && n["g-1"] != "" })
	pv0, pv1 := claimVolume(t, ns, "c0"), claimVolume(t, ns, "c1")
	if pv0.Name == pv1.Name {
		t.Fatalf("both claims bound to volume %s", pv0.Name)
	}
	for pod, pv := range map[string]*v1.PersistentVolume{"g-0": pv0, "g-1": pv1} {
		if placed[pod] != volumeNode(pv) {
			t.Errorf("pod %s is on %s, its volume %s on %s", pod, placed[pod], pv.Name, volumeNode(pv))
		}
		if pv.Annotations[volumehelpers.AnnBoundByController] != "yes" {
			t.Errorf("volume %s lacks the %s annotation: %v", pv.Name, volumehelpers.AnnBoundByController, pv.Annotations)
		}
	}

	mustPod(t, withClaims(st.MakePod().Namespace(ns).Name("late").Req(res{"cpu": "1"}), "c2"))
	waitUnschedulable(t, ns, "late", "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.")
}

// A pod with a WaitForFirstConsumer claim of a provisioning class limited
// to zone b gets a node of zone b, selected on the claim; the provisioner
// (played by the test) creates the volume there and binds the claim, and
// the pod binds to that node. (Without the claim bound the pod would not
// bind: Bind waits for it; see the volumebinding unit tests.)
func TestWaitForFirstConsumerProvisioning(t *testing.T) {
	ns := createNamespace(t)
	big := res{"cpu": "4", "memory": "8Gi", "pods": "10"}
	mustNode(t, poolNode(t, ns+"-a", big).Label(e2eZoneKey, "a").Label(v1.LabelHostname, ns+"-a").Obj())
	mustNode(t, poolNode(t, ns+"-b", big).Label(e2eZoneKey, "b").Label(v1.LabelHostname, ns+"-b").Obj())
	class := mustClass(t, ns, "example.com/e2e", "b")
	made := playVolumeControllers(t, ns, class)
	startPoolScheduler(t)

	mustClaim(t, ns, "data", class)
	mustPod(t, withClaims(st.MakePod().Namespace(ns).Name("p").Req(res{"cpu": "1"}), "data"))
	placed := waitForPods(t, ns, "the pod bound", func(n map[string]string) bool { return n["p"] != "" })
	if placed["p"] != ns+"-b" {
		t.Errorf("pod on %s, want the zone b node %s", placed["p"], ns+"-b")
	}
	pvc, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pvc.Annotations[volumehelpers.AnnSelectedNode]; got != ns+"-b" {
		t.Errorf("selected-node annotation = %q, want %q", got, ns+"-b")
	}
	want, _ := made.Load("data")
	if pv := claimVolume(t, ns, "data"); pv.Name != want {
		t.Errorf("claim bound to %s, want the provisioned %v", pv.Name, want)
	}
}

// A claim of a class that binds immediately and is not bound keeps the
// pod pending, with kube-scheduler's reason.
func TestUnboundImmediateClaim(t *testing.T) {
	ns := createNamespace(t)
	mustNode(t, poolNode(t, ns+"-n1", res{"cpu": "4", "memory": "8Gi", "pods": "10"}).Obj())
	startPoolScheduler(t)
	mustClaim(t, ns, "data", "no-such-class-"+ns)
	mustPod(t, withClaims(st.MakePod().Namespace(ns).Name("p").Req(res{"cpu": "1"}), "data"))
	mustPod(t, withClaims(st.MakePod().Namespace(ns).Name("q").Req(res{"cpu": "1"}), "missing"))
	waitUnschedulable(t, ns, "p", "0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
	waitUnschedulable(t, ns, "q", `0/1 nodes are available: persistentvolumeclaim "missing" not found.`)
}

// mustBoundClaim creates a claim already bound to a new CSI volume of
// driver with the given labels, as the PersistentVolume controller would
// leave them.
func mustBoundClaim(t *testing.T, ns, name, driver string, labels map[string]string) {
	t.Helper()
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name, Labels: labels},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: ns + "-" + name}},
			ClaimRef:               &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name},
		},
	}
	mustVolume(t, pv)
	empty := ""
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{volumehelpers.AnnBindCompleted: "yes"}},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &empty,
			VolumeName:       pv.Name,
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := cp.Client.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating claim %s/%s: %v", ns, name, err)
	}
}

// A pod whose bound volume is in zone b lands in zone b (VolumeZone); a
// node whose CSI driver can attach one volume takes one pod with a volume
// of that driver, and a second one is unschedulable there with
// kube-scheduler's reason (NodeVolumeLimits).
func TestVolumeZoneAndAttachLimits(t *testing.T) {
	ns := createNamespace(t)
	big := res{"cpu": "4", "memory": "8Gi", "pods": "10"}
	nodeA, nodeB := ns+"-a", ns+"-b"
	mustNode(t, poolNode(t, nodeA, big).Label(e2eZoneKey, "a").Obj())
	mustNode(t, poolNode(t, nodeB, big).Label(e2eZoneKey, "b").Obj())
	driver := "e2e.example.com"
	one := int32(1)
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: nodeA}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: driver, NodeID: nodeA, Allocatable: &storagev1.VolumeNodeResources{Count: &one}}}}}
	if _, err := cp.Client.StorageV1().CSINodes().Create(t.Context(), csiNode, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CSINode: %v", err)
	}
	t.Cleanup(func() {
		_ = cp.Client.StorageV1().CSINodes().Delete(context.Background(), nodeA, metav1.DeleteOptions{})
	})
	mustBoundClaim(t, ns, "zoned", driver, map[string]string{e2eZoneKey: "b"})
	mustBoundClaim(t, ns, "first", driver, map[string]string{e2eZoneKey: "a"})
	mustBoundClaim(t, ns, "second", driver, map[string]string{e2eZoneKey: "a"})
	startPoolScheduler(t)

	mustPod(t, withClaims(st.MakePod().Namespace(ns).Name("zoned").Req(res{"cpu": "1"}), "zoned"))
	mustPod(t, withClaims(st.MakePod().Namespace(ns).Name("first").Req(res{"cpu": "1"}), "first"))
	placed := waitForPods(t, ns, "both pods bound", func(n map[string]string) bool { return n["zoned"] != "" && n["first"] != "" })
	if placed["zoned"] != nodeB || placed["first"] != nodeA {
		t.Errorf("placements %v; want zoned on %s, first on %s", placed, nodeB, nodeA)
	}
	mustPod(t, withClaims(st.MakePod().Namespace(ns).Name("second").Req(res{"cpu": "1"}), "second"))
	waitUnschedulable(t, ns, "second",
		"0/2 nodes are available: 1 node(s) exceed max volume count, 1 node(s) had no available volume zone.")
}
