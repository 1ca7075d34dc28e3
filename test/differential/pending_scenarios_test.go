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

package differential

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// Scenarios for the filters issue 11 adds: InterPodAffinity,
// PodTopologySpread and the volume filters. They are plain scenarios; one
// fails, naming the plugin, while batch-scheduler's default profile lacks
// the plugin it exercises.
//
// Without a PV controller here, kube-scheduler never finishes binding a
// claim it chose a volume for (it waits in PreBind), so no pod in these
// scenarios is placed through a claim that still has to be bound: placed
// pods use claims bound beforehand (volumeName set, bind-completed
// annotation, phase Bound), and unbound claims only ever make pods
// unschedulable.

const (
	interPodAffinity   = "InterPodAffinity"
	podTopologySpread  = "PodTopologySpread"
	volumeBinding      = "VolumeBinding"
	volumeRestrictions = "VolumeRestrictions"
	volumeZone         = "VolumeZone"
	nodeVolumeLimits   = "NodeVolumeLimits"

	zoneLabel     = v1.LabelTopologyZone
	hostnameLabel = v1.LabelHostname
	// csiDriver is the CSI driver of NodeVolumeLimits' scenario.
	csiDriver = "csi.example.com"
)

// zonedNode is node() with a hostname label and, unless empty, a zone.
func zonedNode(name, zone string) *st.NodeWrapper {
	w := node(name, "4", "8Gi").Label(hostnameLabel, name)
	if zone != "" {
		w = w.Label(zoneLabel, zone)
	}
	return w
}

// podAffinityTerm selects pods with label app=value over topologyKey.
func podAffinityTerm(value, topologyKey string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": value}},
		TopologyKey:   topologyKey,
	}
}

// withPodAffinity adds required pod affinity terms.
func withPodAffinity(p *v1.Pod, terms ...v1.PodAffinityTerm) *v1.Pod {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	if p.Spec.Affinity.PodAffinity == nil {
		p.Spec.Affinity.PodAffinity = &v1.PodAffinity{}
	}
	a := p.Spec.Affinity.PodAffinity
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	return p
}

// withPodAntiAffinity adds required pod anti-affinity terms.
func withPodAntiAffinity(p *v1.Pod, terms ...v1.PodAffinityTerm) *v1.Pod {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	if p.Spec.Affinity.PodAntiAffinity == nil {
		p.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	a := p.Spec.Affinity.PodAntiAffinity
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	return p
}

// withSpread adds a topology spread constraint over app=value.
func withSpread(p *v1.Pod, value, topologyKey string, maxSkew int32, when v1.UnsatisfiableConstraintAction) *v1.Pod {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew:           maxSkew,
		TopologyKey:       topologyKey,
		WhenUnsatisfiable: when,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": value}},
	})
	return p
}

// withClaim mounts claim as volume "data-CLAIM".
func withClaim(p *v1.Pod, claim string) *v1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "data-" + claim, VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}})
	return p
}

// withGCEDisk mounts GCE persistent disk pd, read-write, as volume "disk-PD".
func withGCEDisk(p *v1.Pod, pd string) *v1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "disk-" + pd, VolumeSource: v1.VolumeSource{
		GCEPersistentDisk: &v1.GCEPersistentDiskVolumeSource{PDName: pd},
	}})
	return p
}

// storageClass returns a class without a provisioner.
func storageClass(name string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode,
	}
}

// claim returns an unbound claim of class for 1Gi.
func claim(name, class string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      modes,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// volume returns an available 1Gi volume of class (a host path; a CSI
// volume of csiDriver if csi).
func volume(name, class string, csi bool, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	if len(modes) == 0 {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			StorageClassName: class,
			AccessModes:      modes,
			Capacity:         v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeSource: v1.PersistentVolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: "/data/" + name},
			},
		},
	}
	if csi {
		pv.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: csiDriver, VolumeHandle: name}}
	}
	return pv
}

// onNodes restricts pv to nodes by hostname.
func onNodes(pv *v1.PersistentVolume, nodes ...string) *v1.PersistentVolume {
	pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: hostnameLabel, Operator: v1.NodeSelectorOpIn, Values: nodes}},
	}}}}
	return pv
}

// inZone labels pv with a zone, as VolumeZone reads it.
func inZone(pv *v1.PersistentVolume, zone string) *v1.PersistentVolume {
	pv.Labels = map[string]string{zoneLabel: zone}
	return pv
}

// bind binds pv and c to each other as the PV controller would have: the
// claim names the volume and carries bind-completed, both are Bound. The
// volume is named after the namespace, so that each run has its own.
func bind(ns string, pv *v1.PersistentVolume, c *v1.PersistentVolumeClaim) []client.Object {
	pv, c = pv.DeepCopy(), c.DeepCopy()
	pv.Name = pv.Name + "-" + ns
	if pv.Spec.CSI != nil {
		pv.Spec.CSI.VolumeHandle = pv.Name
	}
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: c.Name}
	pv.Status.Phase = v1.VolumeBound
	c.Namespace = ns
	c.Spec.VolumeName = pv.Name
	c.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
	c.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: c.Spec.AccessModes, Capacity: pv.Spec.Capacity}
	return []client.Object{pv, c}
}

func pendingScenarios() []scenario {
	return []scenario{
		{
			name:    "InterPodAffinity",
			plugins: []string{interPodAffinity},
			nodes: []*v1.Node{
				zonedNode("ipa-1", "a").Obj(),
				zonedNode("ipa-2", "a").Obj(),
				zonedNode("ipa-3", "b").Obj(),
			},
			existing: []*v1.Pod{
				pod("db", "100m", "").Label("app", "db").Node("ipa-1").Obj(),
				withPodAntiAffinity(pod("cache", "100m", "").Label("app", "cache").Node("ipa-3").Obj(), podAffinityTerm("web", hostnameLabel)),
			},
			pods: []*v1.Pod{
				// No pod matches the term, and the pod does not match it
				// itself: no node qualifies.
				withPodAffinity(pod("with-missing", "100m", "").Obj(), podAffinityTerm("missing", zoneLabel)),
				// Anti-affinity to db over zones: zone a is out; ipa-3 is
				// out by its node selector.
				withPodAntiAffinity(pod("away-from-db", "100m", "").NodeSelector(map[string]string{zoneLabel: "a"}).Obj(), podAffinityTerm("db", zoneLabel)),
				// cache's anti-affinity keeps web pods off ipa-3.
				pod("web-in-b", "100m", "").Label("app", "web").NodeSelector(map[string]string{zoneLabel: "b"}).Obj(),
				// Affinity to db by hostname, but only zone b allowed.
				withPodAffinity(pod("near-db-in-b", "100m", "").NodeSelector(map[string]string{zoneLabel: "b"}).Obj(), podAffinityTerm("db", hostnameLabel)),
				withPodAffinity(pod("near-db", "100m", "").Obj(), podAffinityTerm("db", zoneLabel)),
				// The first pod of a group with affinity to itself.
				withPodAffinity(pod("self-first", "100m", "").Label("app", "self").Obj(), podAffinityTerm("self", zoneLabel)),
			},
		},
		{
			name:    "PodTopologySpread",
			plugins: []string{podTopologySpread},
			nodes: []*v1.Node{
				zonedNode("pts-1", "a").Obj(),
				zonedNode("pts-2", "a").Obj(),
				zonedNode("pts-3", "b").Taint("dedicated", "b", v1.TaintEffectNoSchedule).Obj(),
				zonedNode("pts-4", "").Obj(),
			},
			existing: []*v1.Pod{
				pod("spread-1", "100m", "").Label("app", "spread").Node("pts-1").Obj(),
				pod("spread-2", "100m", "").Label("app", "spread").Node("pts-2").Obj(),
			},
			pods: []*v1.Pod{
				// Zone b (count 0) keeps zone a (count 2) out at max skew
				// 1; pts-3 is tainted (taints do not remove it from the
				// domains by default), pts-4 has no zone label.
				withSpread(pod("skewed", "100m", "").Label("app", "spread").Obj(), "spread", zoneLabel, 1, v1.DoNotSchedule),
				// Max skew 3 allows zone a.
				withSpread(pod("loose", "100m", "").Label("app", "spread").NodeSelector(map[string]string{zoneLabel: "a"}).Obj(), "spread", zoneLabel, 3, v1.DoNotSchedule),
				withSpread(pod("soft", "100m", "").Label("app", "other").Obj(), "spread", zoneLabel, 1, v1.ScheduleAnyway),
				withSpread(pod("tolerates-b", "100m", "").Label("app", "spread").Toleration("dedicated", "b", v1.TaintEffectNoSchedule).Obj(), "spread", zoneLabel, 1, v1.DoNotSchedule),
			},
		},
		{
			name:    "VolumeBinding",
			plugins: []string{volumeBinding},
			nodes: []*v1.Node{
				zonedNode("vb-1", "a").Obj(),
				zonedNode("vb-2", "a").Obj(),
			},
			objects: []client.Object{
				storageClass("diff-wffc", storagev1.VolumeBindingWaitForFirstConsumer),
				storageClass("diff-immediate", storagev1.VolumeBindingImmediate),
				// The only volume of diff-wffc is on vb-1.
				onNodes(volume("diff-local-vb-1", "diff-wffc", false), "vb-1"),
			},
			phaseObjects: func(ns string) []client.Object {
				objs := []client.Object{
					claim("wffc", "diff-wffc"),
					claim("wffc-big", "diff-wffc"),
					claim("immediate", "diff-immediate"),
				}
				objs[1].(*v1.PersistentVolumeClaim).Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("10Gi")
				objs = append(objs, bind(ns, onNodes(volume("diff-pinned", "diff-bound", false), "vb-2"), claim("pinned", "diff-bound"))...)
				objs = append(objs, bind(ns, onNodes(volume("diff-gone", "diff-bound", false), "vb-9"), claim("pinned-gone", "diff-bound"))...)
				return objs
			},
			pods: []*v1.Pod{
				withClaim(pod("missing-claim", "100m", "").Obj(), "nope"),
				withClaim(pod("unbound-immediate", "100m", "").Obj(), "immediate"),
				// No volume of the class is big enough anywhere.
				withClaim(pod("wffc-too-big", "100m", "").Obj(), "wffc-big"),
				// The volume is on vb-1; the pod may only go to vb-2.
				withClaim(pod("wffc-elsewhere", "100m", "").NodeSelector(map[string]string{hostnameLabel: "vb-2"}).Obj(), "wffc"),
				// Bound to a volume on a node that does not exist.
				withClaim(pod("bound-nowhere", "100m", "").Obj(), "pinned-gone"),
				// Bound to a volume on vb-2.
				withClaim(pod("bound-pinned", "100m", "").Obj(), "pinned"),
			},
		},
		{
			name:    "VolumeRestrictions",
			plugins: []string{volumeRestrictions},
			nodes: []*v1.Node{
				zonedNode("vr-1", "a").Obj(),
				zonedNode("vr-2", "a").Obj(),
			},
			phaseObjects: func(ns string) []client.Object {
				return bind(ns, volume("diff-rwop", "diff-rwop", false, v1.ReadWriteOncePod), claim("rwop", "diff-rwop", v1.ReadWriteOncePod))
			},
			existing: []*v1.Pod{
				withClaim(pod("rwop-user", "100m", "").Node("vr-1").Obj(), "rwop"),
				withGCEDisk(pod("disk-user-1", "100m", "").Node("vr-1").Obj(), "disk-1"),
				withGCEDisk(pod("disk-user-2", "100m", "").Node("vr-2").Obj(), "disk-1"),
			},
			pods: []*v1.Pod{
				withClaim(pod("rwop-second", "100m", "").Obj(), "rwop"),
				withGCEDisk(pod("disk-taken", "100m", "").Obj(), "disk-1"),
				withGCEDisk(pod("disk-free", "100m", "").Obj(), "disk-2"),
			},
		},
		{
			name:    "VolumeZone",
			plugins: []string{volumeZone},
			nodes: []*v1.Node{
				zonedNode("vz-1", "a").Obj(),
				zonedNode("vz-2", "b").Obj(),
				zonedNode("vz-3", "b").Obj(),
			},
			phaseObjects: func(ns string) []client.Object {
				objs := bind(ns, inZone(volume("diff-zone-c", "diff-zoned", false), "c"), claim("in-c", "diff-zoned"))
				return append(objs, bind(ns, inZone(volume("diff-zone-a", "diff-zoned", false), "a"), claim("in-a", "diff-zoned"))...)
			},
			pods: []*v1.Pod{
				withClaim(pod("zone-c", "100m", "").Obj(), "in-c"),
				withClaim(pod("zone-a-but-b", "100m", "").NodeSelector(map[string]string{zoneLabel: "b"}).Obj(), "in-a"),
				withClaim(pod("zone-a", "100m", "").Obj(), "in-a"),
			},
		},
		{
			name:    "NodeVolumeLimits",
			plugins: []string{nodeVolumeLimits},
			nodes:   []*v1.Node{zonedNode("nvl-1", "a").Obj()},
			objects: []client.Object{
				&storagev1.CSINode{
					ObjectMeta: metav1.ObjectMeta{Name: "nvl-1"},
					Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
						Name: csiDriver, NodeID: "nvl-1", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](1)},
					}}},
				},
			},
			phaseObjects: func(ns string) []client.Object {
				objs := bind(ns, volume("diff-csi-1", "diff-csi", true), claim("csi-1", "diff-csi"))
				return append(objs, bind(ns, volume("diff-csi-2", "diff-csi", true), claim("csi-2", "diff-csi"))...)
			},
			existing: []*v1.Pod{
				withClaim(pod("csi-user", "100m", "").Node("nvl-1").Obj(), "csi-1"),
			},
			pods: []*v1.Pod{
				withClaim(pod("csi-second", "100m", "").Obj(), "csi-2"),
				// The volume already on the node does not count twice.
				withClaim(pod("csi-shared", "100m", "").Obj(), "csi-1"),
				pod("no-volume", "100m", "").Obj(),
			},
		},
	}
}
