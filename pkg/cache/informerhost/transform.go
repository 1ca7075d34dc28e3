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

package informerhost

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// What the informers' transform drops of every object before it is
// stored: the scheduler never reads it.

// LastAppliedConfigAnnotation is written by kubectl apply. It holds a
// copy of the whole object and nothing the scheduler reads, so the
// informers drop it.
const LastAppliedConfigAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// StripForScheduler is the informers' transform: it drops what the
// scheduler never reads but every object carries, before the object is
// stored. It removes metadata.managedFields and the kubectl
// last-applied-configuration annotation from every object, from nodes
// what stripNode lists, and from pods what stripPod lists. Objects handed to a
// transform are fresh from the decoder and not yet shared, so they are
// changed in place.
func StripForScheduler(obj any) (any, error) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		inner, err := StripForScheduler(tomb.Obj)
		if err != nil {
			return nil, err
		}
		tomb.Obj = inner
		return tomb, nil
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		// Not an object with metadata; nothing to strip.
		return obj, nil
	}
	if accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	if annotations := accessor.GetAnnotations(); annotations != nil {
		if _, ok := annotations[LastAppliedConfigAnnotation]; ok {
			delete(annotations, LastAppliedConfigAnnotation)
			if len(annotations) == 0 {
				// As the stream decoder leaves it (streamdecode.go).
				annotations = nil
			}
			// Unstructured objects return a copy of their annotations.
			accessor.SetAnnotations(annotations)
		}
	}
	switch o := obj.(type) {
	case *v1.Node:
		stripNode(o)
	case *v1.Pod:
		stripPod(o)
		if o.Spec.NodeName != "" {
			// A bound pod is kept as the record of what the scheduler
			// reads of it: the v1.Pod struct goes (see
			// framework.PodRecord).
			return framework.NewPodRecord(o), nil
		}
	}
	return obj, nil
}

// stripNode drops from node the parts of its status that no scheduling
// decision reads: the images (a kilobyte or more a node), the system
// information the kubelet reports, the addresses, the daemon endpoints,
// the volumes in use and attached, and the config source. At 5,000 nodes
// that is several megabytes; TestStrippedFieldsUnread proves that none
// of them is read.
func stripNode(node *v1.Node) {
	st := &node.Status
	st.Images, st.Addresses, st.VolumesInUse, st.VolumesAttached, st.Config = nil, nil, nil, nil, nil
	st.NodeInfo, st.DaemonEndpoints = v1.NodeSystemInfo{}, v1.NodeDaemonEndpoints{}
}

// stripPod drops from pod what neither the scheduler (cache, queue,
// plugins, default event handler) nor the helpers it calls read:
//   - of each container (init and ephemeral too), all but
//     keptContainerFields;
//   - the container statuses, the pod's and host's IPs, and the times of
//     the conditions but a PodScheduled condition that is not True: the
//     scheduler compares type, status, reason and message, and keeps the
//     transition time only when it rewrites its own PodScheduled
//     condition of a pending pod (pkg/scheduler, patchCondition);
//   - the pod's security context;
//   - the volumes that never affect placement (see placementFree).
//
// Then what pods repeat is shared (see interner). At 150,000 pods this is
// most of the memory of a pod that a kubelet reports running.
//
// slimRules (streamdecode.go) leaves the same parts out while decoding
// from the wire; a change here goes there too, and
// TestStreamDecodingStoresWhatClientGoStores fails until it does.
//
// TestStrippedFieldsUnread in transform_test.go proves by type-checking
// every package of this module (and the component-helpers packages it
// calls) that none of them reads what is dropped; a new reader must keep
// the field here first.
func stripPod(pod *v1.Pod) {
	// The transform runs twice on the objects of a watch-list (the
	// reflector's temporary store, then the informer's queue), and by the
	// second time the containers and conditions may be shared with other
	// pods: nothing already stripped is written again.
	for i := range pod.Spec.InitContainers {
		slimContainer(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		slimContainer(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		c := &pod.Spec.EphemeralContainers[i]
		if slim := (v1.EphemeralContainerCommon{Name: c.Name, Image: c.Image}); !equality.Semantic.DeepEqual(c.EphemeralContainerCommon, slim) {
			c.EphemeralContainerCommon = slim
		}
	}
	pod.Spec.Volumes = placementVolumes(pod.Spec.Volumes)
	if pod.Spec.SecurityContext != nil {
		pod.Spec.SecurityContext = nil
	}
	status := &pod.Status
	if status.ContainerStatuses != nil || status.InitContainerStatuses != nil || status.EphemeralContainerStatuses != nil {
		status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses = nil, nil, nil
	}
	if status.PodIP != "" || status.PodIPs != nil || status.HostIP != "" || status.HostIPs != nil {
		status.PodIP, status.PodIPs, status.HostIP, status.HostIPs = "", nil, "", nil
	}
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if c.Type == v1.PodScheduled && c.Status != v1.ConditionTrue {
			continue
		}
		if !c.LastProbeTime.IsZero() || !c.LastTransitionTime.IsZero() {
			c.LastProbeTime, c.LastTransitionTime = metav1.Time{}, metav1.Time{}
		}
	}
	podInterner.internPod(pod)
}

// placementFree reports whether v is a volume that no scheduling decision
// reads: its contents come from the API server or the pod itself
// (projected, secret, config map, downward API) or it is scratch space on
// the node (empty dir), which only the containers' ephemeral-storage
// requests account for.
func placementFree(v *v1.Volume) bool {
	src := &v.VolumeSource
	return src.Projected != nil || src.Secret != nil || src.ConfigMap != nil || src.DownwardAPI != nil || src.EmptyDir != nil
}

// placementVolumes returns vols without the placement-free ones: vols
// itself when it has none, nil when it has nothing else.
func placementVolumes(vols []v1.Volume) []v1.Volume {
	keep := 0
	for i := range vols {
		if !placementFree(&vols[i]) {
			keep++
		}
	}
	switch keep {
	case len(vols):
		return vols
	case 0:
		return nil
	}
	out := make([]v1.Volume, 0, keep)
	for i := range vols {
		if !placementFree(&vols[i]) {
			out = append(out, vols[i])
		}
	}
	return out
}

// keptContainerFields are the fields of v1.Container that stripPod keeps:
// the requests and limits (NodeResourcesFit, the cache's accounting,
// resize), the host ports (NodePorts), the restart policy (sidecar init
// containers count as running), the name and image.
var keptContainerFields = []string{"Name", "Image", "Ports", "Resources", "ResizePolicy", "RestartPolicy", "RestartPolicyRules"}

// slimContainer keeps only keptContainerFields of c; a container already
// slim is not written.
func slimContainer(c *v1.Container) {
	if c.Command == nil && c.Args == nil && c.WorkingDir == "" && c.EnvFrom == nil && c.Env == nil &&
		c.VolumeMounts == nil && c.VolumeDevices == nil && c.LivenessProbe == nil && c.ReadinessProbe == nil &&
		c.StartupProbe == nil && c.Lifecycle == nil && c.TerminationMessagePath == "" && c.TerminationMessagePolicy == "" &&
		c.ImagePullPolicy == "" && c.SecurityContext == nil && !c.Stdin && !c.StdinOnce && !c.TTY {
		return
	}
	*c = v1.Container{
		Name:               c.Name,
		Image:              c.Image,
		Ports:              c.Ports,
		Resources:          c.Resources,
		ResizePolicy:       c.ResizePolicy,
		RestartPolicy:      c.RestartPolicy,
		RestartPolicyRules: c.RestartPolicyRules,
	}
}

// NewInformerFactory returns a shared informer factory of client whose
// informers are stripped of what the scheduler never reads (see
// StripForScheduler), with the given resync period. The cache's Run and
// the plugins' listers share one.
//
// Its pod informer has no namespace index: nothing in the scheduler
// lists pods by namespace, and at 150,000 pods the index is a set entry
// per pod (about 5 MB, 10 MB at the peak of the initial sync).
//
// Do not use its pod lister: the store holds a *framework.PodRecord for
// every bound pod, which the generated lister's type assertion does not
// expect. Read the informer's indexer through framework.StoredPod.
func NewInformerFactory(client kubernetes.Interface, resync time.Duration) informers.SharedInformerFactory {
	f := informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithTransform(StripForScheduler))
	f.InformerFor(&v1.Pod{}, func(client kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
		return coreinformers.NewPodInformer(client, metav1.NamespaceAll, resync, toolscache.Indexers{})
	})
	return f
}
