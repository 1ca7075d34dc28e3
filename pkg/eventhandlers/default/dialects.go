package defaulthandler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/podgroups"
)

// dialectResource is a resource whose objects define gangs.
type dialectResource struct {
	gvr  schema.GroupVersionResource
	kind framework.GroupKind
	// policy reads an object's policy; nil: the object defines no gang.
	policy func(u *unstructured.Unstructured) *framework.GroupPolicy
}

// dialectCandidates are the resources looked up by discovery, in order; of
// the native PodGroup only the first served version is used.
var dialectCandidates = []dialectResource{
	{gvr: schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"},
		kind: framework.GroupKindNative, policy: nativePolicy},
	{gvr: schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha3", Resource: "podgroups"},
		kind: framework.GroupKindNative, policy: nativePolicy},
	{gvr: schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"},
		kind: framework.GroupKindCoscheduling, policy: minMemberPolicy(framework.GroupKindCoscheduling)},
	{gvr: schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"},
		kind: framework.GroupKindVolcano, policy: minMemberPolicy(framework.GroupKindVolcano)},
	{gvr: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"},
		kind: framework.GroupKindJob, policy: jobPolicy},
}

// discoverDialects returns the dialect resources the API server serves.
// A group or version that is not served is normal and logged at V(2).
func discoverDialects(rc *rest.Config) ([]dialectResource, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client for the gang dialects: %w", err)
	}
	var found []dialectResource
	seen := map[framework.GroupKind]bool{}
	for _, d := range dialectCandidates {
		if seen[d.kind] {
			continue
		}
		list, err := dc.ServerResourcesForGroupVersion(d.gvr.GroupVersion().String())
		if err != nil {
			if apierrors.IsNotFound(err) {
				klog.V(2).InfoS("Gang dialect not served by the API server", "groupVersion", d.gvr.GroupVersion().String(), "kind", d.kind)
				continue
			}
			return nil, fmt.Errorf("discovering %s for gang dialect %s: %w", d.gvr.GroupVersion(), d.kind, err)
		}
		for _, r := range list.APIResources {
			if r.Name == d.gvr.Resource {
				found = append(found, d)
				seen[d.kind] = true
				klog.V(2).InfoS("Gang dialect served; watching it", "resource", eventhandlers.DynamicResourceName(d.gvr), "kind", d.kind)
				break
			}
		}
	}
	return found, nil
}

// dialectState is what the handler's Run found and started.
type dialectState struct {
	mu sync.Mutex
	// dialects are the gang dialect resources watched, once discovered.
	dialects []dialectResource
	// discovered is set once discovery succeeded; regs are the handlers
	// on the dialect informers.
	discovered   bool
	regs         []toolscache.ResourceEventHandlerRegistration
	statusWriter *podgroups.Writer
}

var (
	_ eventhandlers.Runner       = (*Handler)(nil)
	_ eventhandlers.SyncReporter = (*Handler)(nil)
)

// SyncName implements eventhandlers.SyncReporter.
func (h *Handler) SyncName() string { return "gang-dialects" }

// HasSynced implements eventhandlers.SyncReporter: true without gang
// dialects, or once they are discovered and each informer delivered its
// initial list.
func (h *Handler) HasSynced() bool {
	if h.dialectConfig == nil {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.discovered {
		return false
	}
	for _, r := range h.regs {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

// Run implements eventhandlers.Runner. With WithGangDialects it discovers
// the gang dialects, retrying until the API server answers, watches them
// and writes their status until ctx ends.
func (h *Handler) Run(ctx context.Context) {
	rc := h.dialectConfig
	if rc == nil {
		return
	}
	var found []dialectResource
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(context.Context) (bool, error) {
		var err error
		if found, err = discoverDialects(rc); err != nil {
			klog.ErrorS(err, "Discovering the gang dialects; retrying")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return
	}
	client, err := dynamic.NewForConfig(rc)
	if err != nil {
		klog.ErrorS(err, "Creating the client of the gang dialects; only the annotations are read")
		h.mu.Lock()
		h.discovered = true
		h.mu.Unlock()
		return
	}
	var writer *podgroups.Writer
	gvrs := map[framework.GroupKind]schema.GroupVersionResource{}
	for _, d := range found {
		if d.kind != framework.GroupKindJob {
			gvrs[d.kind] = d.gvr
		}
	}
	if jobs, ok := h.cache.(podgroups.JobSource); ok && len(gvrs) > 0 {
		writer = podgroups.New(client, jobs, gvrs)
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	var regs []toolscache.ResourceEventHandlerRegistration
	for _, d := range found {
		informer := factory.ForResource(d.gvr).Informer()
		if err := informer.SetTransform(slimGroupObject); err != nil {
			klog.ErrorS(err, "Setting the transform of a gang dialect informer", "resource", eventhandlers.DynamicResourceName(d.gvr))
		}
		reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { h.setGroup(d.gvr, obj, false) },
			UpdateFunc: func(_, obj any) { h.setGroup(d.gvr, obj, false) },
			DeleteFunc: func(obj any) { h.setGroup(d.gvr, obj, true) },
		})
		if err != nil {
			klog.ErrorS(err, "Registering on a gang dialect informer", "resource", eventhandlers.DynamicResourceName(d.gvr))
			continue
		}
		regs = append(regs, reg)
	}
	h.mu.Lock()
	h.dialects, h.regs, h.statusWriter, h.discovered = found, regs, writer, true
	h.mu.Unlock()
	factory.Start(ctx.Done())
	if writer != nil {
		go writer.Run(ctx)
	}
	<-ctx.Done()
	factory.Shutdown()
}

// dialectFor returns the dialect resource of gvr, if it is one, and the
// status writer.
func (h *Handler) dialectFor(gvr schema.GroupVersionResource) (dialectResource, *podgroups.Writer, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.dialects {
		if d.gvr == gvr {
			return d, h.statusWriter, true
		}
	}
	return dialectResource{}, nil, false
}

// setGroup records the policy of obj (nil: deleted) in the cache. It
// reports whether gvr is a dialect resource.
func (h *Handler) setGroup(gvr schema.GroupVersionResource, obj any, deleted bool) bool {
	d, writer, ok := h.dialectFor(gvr)
	if !ok {
		return false
	}
	gc, ok := h.cache.(eventhandlers.GroupPolicyCache)
	if !ok {
		return true
	}
	u, ok := eventhandlers.ObjectAs[*unstructured.Unstructured](obj)
	if !ok {
		klog.ErrorS(nil, "Ignoring an event of a gang group object that is not unstructured", "resource", eventhandlers.DynamicResourceName(gvr), "type", fmt.Sprintf("%T", obj))
		return true
	}
	var p *framework.GroupPolicy
	if !deleted {
		p = d.policy(u)
	}
	klog.V(4).InfoS("Gang group object changed", "kind", d.kind, "object", klog.KObj(u), "deleted", deleted, "policy", p)
	gc.SetGroupPolicy(d.kind, u.GetNamespace(), u.GetName(), p)
	if writer != nil {
		writer.ObjectChanged(d.kind, u, deleted)
	}
	return true
}

// noteGang tells the status writer that a pod of a gang changed, after the
// cache has it.
func (h *Handler) noteGang(obj any) {
	if h.dialectConfig == nil {
		return
	}
	h.mu.Lock()
	writer := h.statusWriter
	h.mu.Unlock()
	if writer == nil {
		return
	}
	pod, ok := eventhandlers.ObjectAs[*v1.Pod](obj)
	if !ok {
		return
	}
	if refs := framework.PodGroupRefs(pod); len(refs) > 0 {
		writer.GangChanged(refs[0].Kind, pod.Namespace, refs[0].Name)
	}
}

// slimGroupObject keeps of a group object what the handler and the status
// writer use: a Job shrinks to its name and the fields jobPolicy reads
// (Jobs carry whole pod templates, and every Job is watched); a PodGroup
// loses its managedFields.
func slimGroupObject(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	if u.GetKind() != "Job" {
		u.SetManagedFields(nil)
		return u, nil
	}
	slim := &unstructured.Unstructured{Object: map[string]any{}}
	slim.SetAPIVersion(u.GetAPIVersion())
	slim.SetKind(u.GetKind())
	slim.SetNamespace(u.GetNamespace())
	slim.SetName(u.GetName())
	slim.SetUID(u.GetUID())
	slim.SetResourceVersion(u.GetResourceVersion())
	for _, field := range [][]string{{"spec", "parallelism"}, {"spec", "completions"},
		{"spec", "template", "metadata", "annotations", framework.JobGangAnnotation}} {
		if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, field...); found {
			if err := unstructured.SetNestedField(slim.Object, runtime.DeepCopyJSONValue(v), field...); err != nil {
				return nil, fmt.Errorf("slimming Job %s/%s: %w", u.GetNamespace(), u.GetName(), err)
			}
		}
	}
	return slim, nil
}

func source(kind framework.GroupKind, u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", kind, u.GetNamespace(), u.GetName())
}

// nativePolicy reads spec.schedulingPolicy of a scheduling.k8s.io PodGroup:
// gang.minCount is the quorum; a basic policy is a group of one.
func nativePolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	p := &framework.GroupPolicy{Source: source(framework.GroupKindNative, u)}
	if n, found, err := unstructured.NestedInt64(u.Object, "spec", "schedulingPolicy", "gang", "minCount"); found && err == nil && n >= 1 && n <= 1<<31-1 {
		p.MinMember = int32(n)
		return p
	}
	if _, found, _ := unstructured.NestedMap(u.Object, "spec", "schedulingPolicy", "basic"); found {
		p.MinMember = 1
		return p
	}
	p.Err = fmt.Errorf("%s has neither spec.schedulingPolicy.gang.minCount >= 1 nor a basic policy", p.Source)
	return p
}

// minMemberPolicy reads spec.minMember, as both the scheduler-plugins and
// the Volcano PodGroup spell the quorum.
func minMemberPolicy(kind framework.GroupKind) func(u *unstructured.Unstructured) *framework.GroupPolicy {
	return func(u *unstructured.Unstructured) *framework.GroupPolicy {
		p := &framework.GroupPolicy{Source: source(kind, u)}
		n, found, err := unstructured.NestedInt64(u.Object, "spec", "minMember")
		if !found || err != nil || n < 1 || n > 1<<31-1 {
			p.Err = fmt.Errorf("%s has no usable spec.minMember (an integer >= 1)", p.Source)
			return p
		}
		p.MinMember = int32(n)
		if kind == framework.GroupKindCoscheduling {
			if t, found, err := unstructured.NestedInt64(u.Object, "spec", "scheduleTimeoutSeconds"); found && err == nil && t > 0 {
				p.ScheduleTimeoutSeconds = int32(min(t, 1<<31-1))
			}
		}
		return p
	}
}

// jobPolicy reads a batch/v1 Job whose pod template opts in with
// framework.JobGangAnnotation: the quorum is spec.parallelism (default 1),
// at most spec.completions. Other Jobs define no gang.
func jobPolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	optIn, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", framework.JobGangAnnotation)
	if optIn != "true" {
		return nil
	}
	p := &framework.GroupPolicy{Source: source(framework.GroupKindJob, u)}
	parallelism, found, err := unstructured.NestedInt64(u.Object, "spec", "parallelism")
	if !found || err != nil {
		parallelism = 1
	}
	if completions, found, err := unstructured.NestedInt64(u.Object, "spec", "completions"); found && err == nil {
		parallelism = min(parallelism, completions)
	}
	if parallelism < 1 || parallelism > 1<<31-1 {
		p.Err = errors.New(p.Source + " runs no pods at once (spec.parallelism or spec.completions is 0)")
		return p
	}
	p.MinMember = int32(parallelism)
	return p
}
