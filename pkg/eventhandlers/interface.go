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

package eventhandlers

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// Every method of every handler interface below receives objects exactly as
// the informer delivers them: typed as interface{} (any), because an
// informer's store can hold anything a ListerWatcher returns. A handler must
// therefore:
//   - check the dynamic type and log and ignore an object of the wrong type
//     (never panic; see ObjectAs);
//   - unwrap cache.DeletedFinalStateUnknown tombstones in every Delete method
//     (see ObjectAs);
//   - return promptly: do small cache updates inline and push anything slow
//     to a workqueue of its own. The informer's delivery to every other
//     handler of the same resource waits while a method runs.
//
// Objects are shared with the informer's store and with other handlers:
// never mutate them. Copy with DeepCopy first.
//
// The dispatcher in pkg/cache/informerhost recovers a panic in any method, logs it with
// the object's key, counts it, and goes on with the next event.

// PodEventHandler receives Pod events. The objects are *v1.Pod (or
// tombstones holding one), unless the handler takes records
// (PodRecordHandler).
type PodEventHandler interface {
	AddPod(obj any)
	UpdatePod(oldObj, newObj any)
	DeletePod(obj any)
}

// PodRecordHandler is an optional interface of a handler whose pod
// methods take, for a pod that has a node, the *framework.PodRecord the
// informers keep of it (what the scheduler reads of a bound pod, without
// the rest of the v1.Pod) instead of a *v1.Pod made from it. The informers
// keep bound pods as records whatever the handler; the dispatcher makes a
// pod of each record it delivers to a handler that does not take them,
// so a handler written for pods keeps working unchanged.
//
// TakesPodRecords reports whether registered, the handler the events go
// to, is one that takes records. It is given the registered handler
// because a type that embeds a handler inherits this method, and may
// override AddPod with code that expects a *v1.Pod: the default handler
// answers true only when registered is itself. A type that embeds it and
// leaves the pod methods alone can answer the same for itself (the
// two-level handler does).
type PodRecordHandler interface {
	TakesPodRecords(registered Interface) bool
}

// NodeEventHandler receives Node events. Native nodes and nodes produced by
// custom informers (hosts known only to an external manager) both arrive
// here.
type NodeEventHandler interface {
	AddNode(obj any)
	UpdateNode(oldObj, newObj any)
	DeleteNode(obj any)
}

// PersistentVolumeEventHandler receives PersistentVolume events.
type PersistentVolumeEventHandler interface {
	AddPersistentVolume(obj any)
	UpdatePersistentVolume(oldObj, newObj any)
	DeletePersistentVolume(obj any)
}

// PersistentVolumeClaimEventHandler receives PersistentVolumeClaim events.
type PersistentVolumeClaimEventHandler interface {
	AddPersistentVolumeClaim(obj any)
	UpdatePersistentVolumeClaim(oldObj, newObj any)
	DeletePersistentVolumeClaim(obj any)
}

// StorageClassEventHandler receives StorageClass events.
type StorageClassEventHandler interface {
	AddStorageClass(obj any)
	UpdateStorageClass(oldObj, newObj any)
	DeleteStorageClass(obj any)
}

// CSINodeEventHandler receives CSINode events.
type CSINodeEventHandler interface {
	AddCSINode(obj any)
	UpdateCSINode(oldObj, newObj any)
	DeleteCSINode(obj any)
}

// CSIDriverEventHandler receives CSIDriver events.
type CSIDriverEventHandler interface {
	AddCSIDriver(obj any)
	UpdateCSIDriver(oldObj, newObj any)
	DeleteCSIDriver(obj any)
}

// CSIStorageCapacityEventHandler receives CSIStorageCapacity events.
type CSIStorageCapacityEventHandler interface {
	AddCSIStorageCapacity(obj any)
	UpdateCSIStorageCapacity(oldObj, newObj any)
	DeleteCSIStorageCapacity(obj any)
}

// PriorityClassEventHandler receives PriorityClass events.
type PriorityClassEventHandler interface {
	AddPriorityClass(obj any)
	UpdatePriorityClass(oldObj, newObj any)
	DeletePriorityClass(obj any)
}

// DynamicEventHandler receives events of resources served by dynamic
// informers (see DynamicResourceRequester and
// DiscoveredResourceRequester). Objects are
// *unstructured.Unstructured; gvr says which resource they belong to.
type DynamicEventHandler interface {
	AddDynamic(gvr schema.GroupVersionResource, obj any)
	UpdateDynamic(gvr schema.GroupVersionResource, oldObj, newObj any)
	DeleteDynamic(gvr schema.GroupVersionResource, obj any)
}

// Interface is an event handler: the one sink for events of every informer
// the scheduler cache runs, native and custom alike.
//
// The simplest way to write one is to build on the default handler
// (pkg/eventhandlers/default): give it a Policy to change how nodes, pods
// and external workloads are treated (every event path obeys it), and
// embed it to add behaviour for other resources. Handlers for resources
// added in later versions are optional interfaces, found by type
// assertion, so that existing handlers keep compiling.
type Interface interface {
	PodEventHandler
	NodeEventHandler
	PersistentVolumeEventHandler
	PersistentVolumeClaimEventHandler
	StorageClassEventHandler
	CSINodeEventHandler
	CSIDriverEventHandler
	CSIStorageCapacityEventHandler
	PriorityClassEventHandler
	DynamicEventHandler
}

// DynamicResourceRequester is an optional interface. The cache starts one
// dynamic informer per returned resource and delivers its events to the
// handler's DynamicEventHandler methods. It is called once, before the
// informers start.
type DynamicResourceRequester interface {
	DynamicResources() []schema.GroupVersionResource
}

// DiscoveredResource is a resource an event handler would like watched
// if, and while, the API server serves it (see
// DiscoveredResourceRequester).
type DiscoveredResource struct {
	// GVR is the resource.
	GVR schema.GroupVersionResource
	// Transform, when set, runs on each object after the cache's own
	// transform (which drops managedFields and the last-applied
	// annotation) and before the object is stored: a handler keeps of an
	// object only what it reads, for resources whose objects are large
	// (pod templates) and many. It must accept what an informer's
	// transform gets (an object, or a cache.DeletedFinalStateUnknown
	// holding one), return quickly, be idempotent (it may run twice on
	// one object), and may change the object in place: objects handed to
	// a transform are not shared yet.
	Transform toolscache.TransformFunc
	// FirstServedVersionOnly marks alternatives: of the candidates with
	// this flag and the same group and resource, only the first one served,
	// in the order of the list, is watched (e.g. the v1beta1 of a resource
	// where served, else its v1alpha3). Once one is watched, no other is
	// started, even if it becomes served later.
	FirstServedVersionOnly bool
}

// DiscoveredResourceRequester is an optional interface. When the cache
// runs, it asks the API server's discovery which of the returned
// resources are served (retrying until the API server answers), starts a
// dynamic informer for each served one, in its own dynamic informer
// factory and registered like every other informer (event counting,
// panic recovery, the backlog probe, the sync barrier of
// WaitForHandlersSync and /readyz), and delivers its events to the
// handler's DynamicEventHandler methods. Until the first discovery
// succeeded, the cache reports the handler not synced ("discovery").
// It re-runs discovery periodically and starts an informer for each
// resource served since (a CRD installed after start-up). Resources
// that are not served are normal and not an error.
//
// It is called once, before the informers start. A resource that
// DynamicResourceRequester also asks for is watched once, by the
// informer that one starts (without Transform).
type DiscoveredResourceRequester interface {
	DiscoveredResources() []DiscoveredResource
}

// Runner is an optional interface for handlers that own background work,
// such as a workqueue. The cache calls Run in its own goroutine when it
// starts its informers; Run returns when ctx is done.
type Runner interface {
	Run(ctx context.Context)
}

// GrantEventHandler is an optional interface: a handler that implements it
// receives the events of Grant objects (pkg/apis/batchscheduler/v1alpha1)
// from a custom informer whose Resource is Grant. It is not part of
// Interface, so that handlers written before it keep compiling; the cache
// finds it by type assertion, and refuses to run (Run returns an error) a
// custom informer of Grants when the handler does not implement it.
type GrantEventHandler interface {
	AddGrant(obj any)
	UpdateGrant(oldObj, newObj any)
	DeleteGrant(obj any)
}

// ExternalWorkloadEventHandler is an optional interface, like
// GrantEventHandler, for ExternalWorkload objects
// (pkg/apis/batchscheduler/v1alpha1) from a custom informer whose Resource
// is ExternalWorkload. A handler typically accounts them with
// ExternalUsageCache.
type ExternalWorkloadEventHandler interface {
	AddExternalWorkload(obj any)
	UpdateExternalWorkload(oldObj, newObj any)
	DeleteExternalWorkload(obj any)
}

// ResourceClaimEventHandler, ResourceSliceEventHandler and
// DeviceClassEventHandler are optional interfaces for the objects of
// Dynamic Resource Allocation (resource.k8s.io/v1 ResourceClaims,
// ResourceSlices and DeviceClasses). Their native informers are opt-in:
// the cache starts one only when Options.Resources names its resource
// (a plugin registered events of it, e.g. DynamicResources). A handler
// that lacks the interface still gets the informer started and synced,
// for the plugins' listers, but raises no event for it, so jobs those
// objects keep out are retried only by other events and the
// unschedulable timeout; the cache logs that once. The default handler
// implements all three.
type ResourceClaimEventHandler interface {
	AddResourceClaim(obj any)
	UpdateResourceClaim(oldObj, newObj any)
	DeleteResourceClaim(obj any)
}

// ResourceSliceEventHandler: see ResourceClaimEventHandler.
type ResourceSliceEventHandler interface {
	AddResourceSlice(obj any)
	UpdateResourceSlice(oldObj, newObj any)
	DeleteResourceSlice(obj any)
}

// DeviceClassEventHandler: see ResourceClaimEventHandler.
type DeviceClassEventHandler interface {
	AddDeviceClass(obj any)
	UpdateDeviceClass(oldObj, newObj any)
	DeleteDeviceClass(obj any)
}

// SyncReporter is an optional interface for handlers that run informers of
// their own (typically from Runner.Run): the cache's sync barrier, and so
// /readyz and the start of scheduling, also waits until HasSynced reports
// true, naming the handler's part SyncName while it does not.
type SyncReporter interface {
	HasSynced() bool
	SyncName() string
}

// StateRules is an optional interface for handlers that change what the
// cache records of an object: a node, pod or external workload they leave
// out or record as a modified copy (the default handler's Policy is one
// such rule set). The cache's consistency checker (Verify, /debug/cache/verify)
// reads the truth through these rules before it compares it with the
// cache, so that the handler's own view is not reported as a difference.
// A handler without them is checked against the objects as they are.
//
// Each method returns the object as the handler records it, or nil when
// the handler leaves it out of the cache. They must not modify their
// argument, and must be safe for concurrent use.
type StateRules interface {
	TrackedNode(node *v1.Node) *v1.Node
	TrackedPod(pod *v1.Pod) *v1.Pod
	TrackedExternalWorkload(w *v1alpha1.ExternalWorkload) *v1alpha1.ExternalWorkload
}

// ExternalWorkloadNodeLabeler is an optional interface for handlers that
// account an ExternalWorkload on the node a label of it names (when set)
// rather than on spec.nodeName: the cache's consistency checker then
// places workloads the same way. The default handler implements it
// (Args.ExternalWorkloadNodeLabel).
type ExternalWorkloadNodeLabeler interface {
	ExternalWorkloadNodeLabel() string
}

// FrameworkMember is an optional interface for handlers that schedule for
// one framework of a two-level allocator: Framework names it, and the
// /demand report this scheduler serves to the allocator carries the name.
// The two-level handler implements it.
type FrameworkMember interface {
	Framework() string
}

// GrantObserver is an optional interface for handlers that cap the cache
// with Grants. ObservedGrants returns, for each of the framework's grants
// the handler has applied to the cache, the resourceVersion it applied; a
// version is listed only once the cache holds the cap it gives. The /demand
// report carries the map as its acknowledgment of those versions (see
// pkg/demand.Report.ObservedGrants): read before the report's usage, it
// promises that every placement under an earlier version is counted
// there, since a placement decided under a cap that has shrunk since is
// not committed (cache.SchedulerCache.AssumePods). The two-level handler
// implements it.
type GrantObserver interface {
	ObservedGrants() map[string]string
}
