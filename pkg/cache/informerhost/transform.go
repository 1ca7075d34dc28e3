package informerhost

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
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
// last-applied-configuration annotation from every object, status.images
// from nodes, and from pods what stripPod lists. Objects handed to a
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
			// Unstructured objects return a copy of their annotations.
			accessor.SetAnnotations(annotations)
		}
	}
	switch o := obj.(type) {
	case *v1.Node:
		o.Status.Images = nil
	case *v1.Pod:
		stripPod(o)
	}
	return obj, nil
}

// stripPod drops from pod what neither the scheduler (cache, queue,
// plugins, default event handler) nor the helpers it calls read: of each
// container (init and ephemeral too) all but keptContainerFields; the
// container statuses; and the contents of the volumes that never affect
// placement (projected, secret, config map and downward API volumes keep
// their name and kind). Then the maps the replicas of a workload have in
// common are shared (see interner). At 150,000 pods this is most of the memory of a
// pod that a kubelet reports running. TestStrippedFieldsUnread in
// strip_test.go proves by type-checking every package of this module (and
// the component-helpers packages it calls) that none of them reads what
// is dropped; a new reader must keep the field here first.
func stripPod(pod *v1.Pod) {
	// The transform runs twice on the objects of a watch-list (the
	// reflector's temporary store, then the informer's queue), and by the
	// second time the containers may be shared with other pods: nothing
	// already stripped is written again.
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
	for i := range pod.Spec.Volumes {
		src := &pod.Spec.Volumes[i].VolumeSource
		switch {
		case src.Projected != nil && (len(src.Projected.Sources) > 0 || src.Projected.DefaultMode != nil):
			src.Projected = &v1.ProjectedVolumeSource{}
		case src.Secret != nil && (src.Secret.SecretName != "" || len(src.Secret.Items) > 0 || src.Secret.DefaultMode != nil || src.Secret.Optional != nil):
			src.Secret = &v1.SecretVolumeSource{}
		case src.ConfigMap != nil && (src.ConfigMap.Name != "" || len(src.ConfigMap.Items) > 0 || src.ConfigMap.DefaultMode != nil || src.ConfigMap.Optional != nil):
			src.ConfigMap = &v1.ConfigMapVolumeSource{}
		case src.DownwardAPI != nil && (len(src.DownwardAPI.Items) > 0 || src.DownwardAPI.DefaultMode != nil):
			src.DownwardAPI = &v1.DownwardAPIVolumeSource{}
		}
	}
	pod.Status.ContainerStatuses = nil
	pod.Status.InitContainerStatuses = nil
	pod.Status.EphemeralContainerStatuses = nil
	podInterner.internPod(pod)
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
func NewInformerFactory(client kubernetes.Interface, resync time.Duration) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithTransform(StripForScheduler))
}
