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

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// The spaces explored for each plugin whose verdict reads more than the
// node object (see hints_explore_test.go). Each dimension is something
// the plugin's rule looks at and its events are about; the pending pods
// are ones the plugin can reject in some of the clusters.

// exploredNS is the namespace of the explored pods and claims.
const exploredNS = "ns"

const (
	zoneKey     = v1.LabelTopologyZone
	hostnameKey = v1.LabelHostname
	csiDriver   = "csi.example.com"
	gpuDriver   = "gpu.example.com"
)

// hnode returns a node with room for every explored pod, labelled with
// the key/value pairs of labels.
func hnode(name string, labels ...string) *v1.Node {
	w := st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"})
	for i := 0; i+1 < len(labels); i += 2 {
		w = w.Label(labels[i], labels[i+1])
	}
	return w.Obj()
}

// withTaint returns n with a NoSchedule taint no explored pod tolerates.
func withTaint(n *v1.Node) *v1.Node {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule})
	return n
}

func hpod(name string) *st.PodWrapper { return st.MakePod().Namespace(exploredNS).Name(name) }

// on returns pod bound to node and running.
func on(node string, pod *v1.Pod) *v1.Pod {
	pod = pod.DeepCopy()
	pod.Spec.NodeName = node
	pod.Status.Phase = v1.PodRunning
	return pod
}

// done returns pod finished.
func done(pod *v1.Pod) *v1.Pod {
	pod = pod.DeepCopy()
	pod.Status.Phase = v1.PodSucceeded
	return pod
}

// withVolumes adds volumes to pod, named after their position.
func withVolumes(pod *v1.Pod, vols ...v1.VolumeSource) *v1.Pod {
	for _, v := range vols {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: fmt.Sprintf("v%d", len(pod.Spec.Volumes)), VolumeSource: v})
	}
	return pod
}

func claimVol(name string) v1.VolumeSource {
	return v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

func gceVol(disk string, readOnly bool) v1.VolumeSource {
	return v1.VolumeSource{GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: disk, ReadOnly: readOnly}}
}

// pvc returns an unbound claim of 1Gi in class (none for "").
func pvc(name, class string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: exploredNS, Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: modes,
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

// boundTo returns c bound to the volume pv by the volume controller.
func boundTo(c *v1.PersistentVolumeClaim, pv string) *v1.PersistentVolumeClaim {
	c = c.DeepCopy()
	c.Spec.VolumeName = pv
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, volumehelpers.AnnBindCompleted, "yes")
	c.Status.Phase = v1.ClaimBound
	return c
}

// pv returns an available CSI volume of 1Gi in class, with handle; when
// zone is set, it is labelled with it (read by VolumeZone) and its node
// affinity requires it (read by VolumeBinding).
func pv(name, class, handle, zone string) *v1.PersistentVolume {
	v := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName:       class,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: csiDriver, VolumeHandle: handle}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	if zone != "" {
		v.Labels = map[string]string{zoneKey: zone}
		v.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: zoneKey, Operator: v1.NodeSelectorOpIn, Values: []string{zone}}},
		}}}}
	}
	return v
}

// class returns a storage class; zones, when given, are its allowed
// topologies.
func class(name string, mode storagev1.VolumeBindingMode, provisioner string, zones ...string) *storagev1.StorageClass {
	c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
	if len(zones) > 0 {
		c.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: zoneKey, Values: zones}}}}
	}
	return c
}

// fitSpace: a node of 4 cpus, a pod and an external workload taking some,
// and pending pods asking for 1 to 3. Node changes are explored by
// exploreNodeRules, grants by TestGrantHintsAgreeWithFit.
func fitSpace() space {
	used := func(cpu string, labels ...string) *v1.Pod {
		w := hpod("used").Req(res{v1.ResourceCPU: cpu})
		for i := 0; i+1 < len(labels); i += 2 {
			w = w.Label(labels[i], labels[i+1])
		}
		return on("n1", w.Obj())
	}
	vm := func(cpu string, phase v1alpha1.ExternalWorkloadPhase) *v1alpha1.ExternalWorkload {
		return &v1alpha1.ExternalWorkload{
			ObjectMeta: metav1.ObjectMeta{Name: "vm"},
			Spec:       v1alpha1.ExternalWorkloadSpec{NodeName: "n1", Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}},
			Status:     v1alpha1.ExternalWorkloadStatus{Phase: phase},
		}
	}
	var pods []*v1.Pod
	for _, cpu := range []string{"1", "2", "3"} {
		pods = append(pods, hpod("p-cpu"+cpu).Req(res{v1.ResourceCPU: cpu}).Obj())
	}
	return space{
		fixed: []runtime.Object{hnode("n1")},
		dims: []dimension{
			dim("pod", val("none"), val("cpu3", used("3")), val("cpu3-finished", done(used("3"))),
				val("cpu1", used("1")), val("cpu3-relabelled", used("3", "x", "y"))),
			dim("vm", val("none"), val("cpu2", vm("2", v1alpha1.ExternalWorkloadRunning)),
				val("cpu1", vm("1", v1alpha1.ExternalWorkloadRunning)), val("stopped", vm("2", v1alpha1.ExternalWorkloadStopped))),
		},
		pods: pods,
	}
}

// nodePortsSpace: pods on n1 holding host port 80 in various ways, a
// second node coming and going, pending pods wanting the port.
func nodePortsSpace() space {
	return space{
		fixed: []runtime.Object{hnode("n1")},
		dims: []dimension{
			dim("n2", val("none"), val("present", hnode("n2"))),
			dim("holder", val("none"),
				val("tcp", on("n1", withHostPort("a-tcp", "", v1.ProtocolTCP, 80))),
				val("tcp-finished", done(on("n1", withHostPort("a-tcp", "", v1.ProtocolTCP, 80)))),
				val("udp", on("n1", withHostPort("a-udp", "", v1.ProtocolUDP, 80))),
				val("other-ip", on("n1", withHostPort("a-ip2", "10.0.0.2", v1.ProtocolTCP, 80)))),
			dim("second holder", val("none"), val("tcp", on("n1", withHostPort("b-tcp", "", v1.ProtocolTCP, 80)))),
		},
		pods: []*v1.Pod{
			withHostPort("p-tcp", "10.0.0.1", "", 80),
			withHostPort("p-udp", "", v1.ProtocolUDP, 80),
			st.MakePod().Name("p-none").Obj(),
		},
	}
}

// volumeRestrictionsSpace: pods on n1 using an in-tree disk (in the
// pending pods' namespace or another) or a ReadWriteOncePod claim, the
// claim coming and going, a second node.
func volumeRestrictionsSpace() space {
	gceHolder := func(name, namespace string, readOnly bool) *v1.Pod {
		return on("n1", withVolumes(st.MakePod().Namespace(namespace).Name(name).Obj(), gceVol("d", readOnly)))
	}
	rwopHolder := on("n1", withVolumes(hpod("h-rwop").Obj(), claimVol("rwop")))
	return space{
		fixed: []runtime.Object{hnode("n1"), pvc("rwo", "")},
		dims: []dimension{
			dim("n2", val("none"), val("present", hnode("n2"))),
			dim("rwop claim", val("none"), val("present", pvc("rwop", "", v1.ReadWriteOncePod))),
			dim("holder", val("none"),
				val("gce", gceHolder("h-gce", exploredNS, false)),
				val("gce-finished", done(gceHolder("h-gce", exploredNS, false))),
				val("gce-ro", gceHolder("h-gce-ro", exploredNS, true)),
				val("gce-other-ns", gceHolder("h-other", "other", false)),
				val("rwop", rwopHolder),
				val("rwop-finished", done(rwopHolder))),
		},
		pods: []*v1.Pod{
			withVolumes(hpod("p-gce").Obj(), gceVol("d", false)),
			withVolumes(hpod("p-gce-ro").Obj(), gceVol("d", true)),
			withVolumes(hpod("p-rwop").Obj(), claimVol("rwop")),
			withVolumes(hpod("p-rwo").Obj(), claimVol("rwo")),
		},
	}
}

// nodeVolumeLimitsSpace: n1's CSINode with various limits of the driver,
// pods on n1 attaching its volumes, a claim to provision coming and going.
func nodeVolumeLimitsSpace() space {
	csiNode := func(drivers ...storagev1.CSINodeDriver) *storagev1.CSINode {
		return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{Drivers: drivers}}
	}
	limited := func(n int32) storagev1.CSINodeDriver {
		return storagev1.CSINodeDriver{Name: csiDriver, NodeID: "n1", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(n)}}
	}
	fixed := []runtime.Object{hnode("n1"), class("csi", storagev1.VolumeBindingWaitForFirstConsumer, csiDriver)}
	for _, c := range []string{"c1", "c2", "c4"} {
		fixed = append(fixed, boundTo(pvc(c, "csi"), "pv-"+c), pv("pv-"+c, "csi", "h-"+c, ""))
	}
	holder := on("n1", withVolumes(hpod("h").Obj(), claimVol("c1")))
	return space{
		fixed: fixed,
		dims: []dimension{
			dim("csinode", val("none"), val("limit1", csiNode(limited(1))), val("limit2", csiNode(limited(2))),
				val("no-count", csiNode(storagev1.CSINodeDriver{Name: csiDriver, NodeID: "n1"})), val("no-driver", csiNode())),
			dim("holder", val("none"), val("c1", holder), val("c1-finished", done(holder))),
			dim("second holder", val("none"), val("c4", on("n1", withVolumes(hpod("h2").Obj(), claimVol("c4"))))),
			dim("claim c3", val("none"), val("unbound", pvc("c3", "csi"))),
		},
		pods: []*v1.Pod{
			withVolumes(hpod("p1").Obj(), claimVol("c1")),
			withVolumes(hpod("p2").Obj(), claimVol("c2")),
			withVolumes(hpod("p3").Obj(), claimVol("c3")),
			withVolumes(hpod("p23").Obj(), claimVol("c2"), claimVol("c3")),
		},
	}
}

// volumeBindingStaticSpace: a claim bound, or to be bound to an existing
// volume, whose node affinity matches one zone; classes that cannot
// provision.
func volumeBindingStaticSpace() space {
	return space{
		dims: []dimension{
			dim("n1", val("zone-a", hnode("n1", zoneKey, "a")), val("zone-b", hnode("n1", zoneKey, "b"))),
			dim("n2", val("none"), val("zone-a", hnode("n2", zoneKey, "a"))),
			dim("class", val("none"),
				val("wffc-no-provisioner", class("sc", storagev1.VolumeBindingWaitForFirstConsumer, volumehelpers.NotSupportedProvisioner)),
				val("immediate", class("sc", storagev1.VolumeBindingImmediate, csiDriver))),
			dim("claim", val("none"), val("unbound", pvc("c", "sc")), val("bound", boundTo(pvc("c", "sc"), "pv"))),
			dim("volume", val("none"), val("zone-a", pv("pv", "sc", "h", "a")), val("zone-b", pv("pv", "sc", "h", "b"))),
		},
		pods: []*v1.Pod{withVolumes(hpod("p").Obj(), claimVol("c"))},
	}
}

// volumeBindingProvisionSpace: a claim to provision, a class whose
// allowed topologies change, a driver that may track storage capacity
// and a capacity in one zone.
func volumeBindingProvisionSpace() space {
	driver := func(tracks bool) *storagev1.CSIDriver {
		return &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: csiDriver}, Spec: storagev1.CSIDriverSpec{StorageCapacity: ptr.To(tracks)}}
	}
	capacity := &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Namespace: "kube-system", Name: "cap-a"},
		StorageClassName: "sc",
		NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{zoneKey: "a"}},
		Capacity:         ptr.To(resource.MustParse("10Gi")),
	}
	return space{
		dims: []dimension{
			dim("n1", val("zone-a", hnode("n1", zoneKey, "a")), val("zone-b", hnode("n1", zoneKey, "b"))),
			dim("n2", val("none"), val("zone-a", hnode("n2", zoneKey, "a"))),
			dim("class", val("none"),
				val("wffc", class("sc", storagev1.VolumeBindingWaitForFirstConsumer, csiDriver)),
				val("wffc-zone-b", class("sc", storagev1.VolumeBindingWaitForFirstConsumer, csiDriver, "b"))),
			dim("claim", val("none"), val("unbound", pvc("c", "sc"))),
			dim("driver", val("none"), val("tracks-capacity", driver(true)), val("untracked", driver(false))),
			dim("capacity", val("none"), val("zone-a", capacity)),
		},
		pods: []*v1.Pod{withVolumes(hpod("p").Obj(), claimVol("c"))},
	}
}

// volumeZoneSpace: nodes in zones (or none), a volume in a zone, a claim
// bound to it or waiting for its first consumer, classes coming and
// going.
func volumeZoneSpace() space {
	return space{
		dims: []dimension{
			dim("n1", val("no-zone", hnode("n1")), val("zone-a", hnode("n1", zoneKey, "a")), val("zone-b", hnode("n1", zoneKey, "b"))),
			dim("n2", val("none"), val("zone-a", hnode("n2", zoneKey, "a"))),
			dim("class", val("none"),
				val("wffc", class("sc", storagev1.VolumeBindingWaitForFirstConsumer, csiDriver)),
				val("immediate", class("sc", storagev1.VolumeBindingImmediate, csiDriver))),
			dim("claim", val("none"), val("unbound", pvc("c", "sc")), val("bound", boundTo(pvc("c", "sc"), "pv"))),
			dim("volume", val("none"), val("zone-a", pv("pv", "sc", "h", "a")), val("zone-b", pv("pv", "sc", "h", "b"))),
		},
		pods: []*v1.Pod{withVolumes(hpod("p").Obj(), claimVol("c"))},
	}
}

// term is a required pod (anti-)affinity term selecting app=app over key.
func term(key, app string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key}
}

func withAffinity(pod *v1.Pod, affinity, anti []v1.PodAffinityTerm) *v1.Pod {
	pod.Spec.Affinity = &v1.Affinity{}
	if len(affinity) > 0 {
		pod.Spec.Affinity.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: affinity}
	}
	if len(anti) > 0 {
		pod.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: anti}
	}
	return pod
}

// interPodAffinitySpace: two nodes in zones, a pod on n1 that pending pods
// want near or away from, a pod on n1 whose anti-affinity keeps some of
// them away from its zone.
func interPodAffinitySpace() space {
	x := func(app string) *v1.Pod { return on("n1", hpod("x").Label("app", app).Obj()) }
	return space{
		dims: []dimension{
			dim("n1", val("zone-a", hnode("n1", zoneKey, "a", hostnameKey, "n1")), val("zone-b", hnode("n1", zoneKey, "b", hostnameKey, "n1"))),
			dim("n2", val("none"), val("zone-b", hnode("n2", zoneKey, "b", hostnameKey, "n2")), val("zone-a", hnode("n2", zoneKey, "a", hostnameKey, "n2"))),
			dim("x", val("none"), val("app-x", x("x")), val("app-y", x("y")), val("app-x-finished", done(x("x")))),
			dim("anti", val("none"), val("present", on("n1", withAffinity(hpod("anti").Label("app", "z").Obj(), nil, []v1.PodAffinityTerm{term(zoneKey, "p")})))),
		},
		pods: []*v1.Pod{
			withAffinity(hpod("p-aff").Label("app", "p").Obj(), []v1.PodAffinityTerm{term(zoneKey, "x")}, nil),
			withAffinity(hpod("p-anti").Label("app", "q").Obj(), nil, []v1.PodAffinityTerm{term(zoneKey, "x")}),
			withAffinity(hpod("p-anti-host").Label("app", "q").Obj(), nil, []v1.PodAffinityTerm{term(hostnameKey, "x")}),
			hpod("p-plain").Label("app", "p").Obj(),
		},
	}
}

// spread returns a pending pod labelled app=x with a DoNotSchedule
// constraint of skew 1 over zones counting app=x.
func spread(name string, minDomains *int32, taints *v1.NodeInclusionPolicy) *v1.Pod {
	pod := hpod(name).Label("app", "x").Obj()
	pod.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: zoneKey, WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
		MinDomains:    minDomains, NodeTaintsPolicy: taints,
	}}
	return pod
}

// podTopologySpreadSpace: n1 in zone a, n2 in zone b (or without a zone,
// or absent), either tainted, and pods on n1 that the constraints count.
func podTopologySpreadSpace() space {
	x := func(name, app string) *v1.Pod { return on("n1", hpod(name).Label("app", app).Obj()) }
	return space{
		dims: []dimension{
			dim("n1", val("zone-a", hnode("n1", zoneKey, "a")), val("zone-a-tainted", withTaint(hnode("n1", zoneKey, "a")))),
			dim("n2", val("none"), val("zone-b", hnode("n2", zoneKey, "b")), val("zone-b-tainted", withTaint(hnode("n2", zoneKey, "b"))),
				val("no-zone", hnode("n2"))),
			dim("x1", val("none"), val("app-x", x("x1", "x")), val("app-y", x("x1", "y")), val("app-x-finished", done(x("x1", "x")))),
			dim("x2", val("none"), val("app-x", x("x2", "x"))),
		},
		pods: []*v1.Pod{
			spread("s", nil, nil),
			spread("s-min-domains", ptr.To[int32](2), nil),
			spread("s-honor-taints", nil, ptr.To(v1.NodeInclusionPolicyHonor)),
		},
	}
}

// rclaim returns a resource claim asking for one device of class gpu.
func rclaim(name string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: exploredNS, Name: name, UID: types.UID("uid-" + name)},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name:    "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
}

// allocatedTo returns c allocated the device dev of n1's pool, usable on
// the nodes selector selects.
func allocatedTo(c *resourcev1.ResourceClaim, dev string, selector v1.NodeSelectorTerm) *resourcev1.ResourceClaim {
	c = c.DeepCopy()
	c.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
			{Request: "gpu", Driver: gpuDriver, Pool: "n1", Device: dev},
		}},
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{selector}},
	}
	return c
}

// dynamicResourcesSpace: a device class, n1's slice with one device, a
// claim of another pod holding it, the pending pod's own claim
// (unallocated, or allocated for nodes labelled pool=p1), n1's label and
// a second node with it.
func dynamicResourcesSpace() space {
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "n1-gpus"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: gpuDriver, NodeName: ptr.To("n1"),
			Pool:    resourcev1.ResourcePool{Name: "n1", Generation: 1, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0"}},
		},
	}
	onN1 := v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1"}}}}
	inPool := v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "pool", Operator: v1.NodeSelectorOpIn, Values: []string{"p1"}}}}
	pod := hpod("p").Obj()
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("mine")}}
	return space{
		dims: []dimension{
			dim("class", val("none"), val("present", &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}})),
			dim("slice", val("none"), val("one-device", slice)),
			dim("held", val("none"), val("allocated", allocatedTo(rclaim("held"), "gpu-0", onN1)), val("deallocated", rclaim("held"))),
			dim("mine", val("none"), val("unallocated", rclaim("mine")), val("allocated", allocatedTo(rclaim("mine"), "gpu-1", inPool))),
			dim("n1", val("unlabelled", hnode("n1")), val("pool-p1", hnode("n1", "pool", "p1"))),
			dim("n2", val("none"), val("pool-p1", hnode("n2", "pool", "p1"))),
		},
		pods: []*v1.Pod{pod},
	}
}
