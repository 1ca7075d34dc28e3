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

// Package dynamicresources implements the DynamicResources plugin: it
// allocates the devices of a pod's ResourceClaims (Dynamic Resource
// Allocation, resource.k8s.io/v1) with the structured-parameters
// allocator of k8s.io/dynamic-resource-allocation, and writes the
// allocations before the pod is bound. A gang's devices are decided in
// its one cycle, with its other resources: every pod's claims are
// allocated (in Reserve) before Permit decides for the whole gang, so a
// gang gets devices for all its pods or for none.
//
// PreFilterPod (per pod) resolves the pod's spec.resourceClaims: a
// resourceClaimName, or a resourceClaimTemplateName whose claim the
// resource claim controller (kube-controller-manager) created and named
// in pod.status.resourceClaimStatuses. Until it did, the pod waits
// ("waiting for the resource claim controller to create ..."); a claim
// missing, being deleted, or made from a template for another pod (or
// PodGroup) rejects the pod as unresolvable. A claim already allocated
// (in the API, or in flight: see below) keeps its devices; its
// allocation's node selector must admit the node. For the others it
// checks that their device classes exist and prepares the allocator with
// every device taken: those of the allocations the informer shows (an
// index kept from pod to pod, updated by the claims whose
// resourceVersion changed) and of the allocations in flight. The
// allocator is the library's "incubating" implementation, as in
// kube-scheduler 1.37 (see features).
//
// Filter checks the allocated claims' node selectors and asks the
// allocator for devices on the node for the unallocated claims: "cannot
// allocate all claims" (Unschedulable) when it finds none. An error of the
// allocator (bad input, such as a CEL selector that does not compile or
// fails) rejects the pod on the node as unresolvable with a message that
// names the claims and carries the allocator's error, which names the
// request and the expression.
//
// Reserve holds the allocation found on the chosen node in an in-memory
// tracker of allocations in flight: later pods of the same gang, in the
// same cycle, and later cycles count those devices as taken until the
// informer shows the allocation written; a later pod referencing the same
// claim (a claim shared by the gang) reuses that allocation, and goes
// where its node selector allows. Unreserve releases it.
//
// Bind, enabled before DefaultBinder, writes each claim's status
// (allocation, with the resource.kubernetes.io/delete-protection
// finalizer, when the claim has none yet; the pod added to reservedFor),
// reading the claim from the API server and retrying on conflicts, since
// a gang's pods are bound concurrently; then returns Skip so that the next
// Bind plugin binds the pod. When the pod's binding fails afterwards,
// Unreserve takes the pod out of reservedFor and, if this pod's Bind wrote
// the allocation and no consumer is left, removes the allocation again.
//
// Preemption: inside an eviction simulation (framework.IsEvictionSimulation)
// the devices of a claim count as free only when every consumer in its
// reservedFor is a running pod the simulation took off the nodes; a claim
// shared with a pod that stays keeps its devices; and the devices Filter
// found for the preempting job's other pods, where the simulation placed
// them (it does not Reserve), count as taken.
//
// Extended resources backed by DRA (extended.go): a container may ask for
// an extended resource (example.com/gpu: 1) that a DeviceClass maps, by
// its spec.extendedResourceName or by the implicit name
// deviceclass.resource.kubernetes.io/<class> (of several classes naming
// the same resource, the newest wins). On a node that lists the resource
// in its allocatable its device plugin serves it, as before; on a node
// that does not, this plugin allocates devices of the class.
// PreFilterPod finds the mapped resources and leaves them in the cycle
// state (pluginutil.DRAExtended), where NodeResourcesFit reads them so as
// not to count them as missing on such a node. Filter hands the allocator,
// with the pod's claims, an in-memory claim of one request per container
// and resource (count: the quantity; a plain init container reuses the
// devices of the containers started after it); a node whose devices do
// not suffice rejects the pod with "cannot allocate devices for extended
// resources <names>". Reserve holds its allocation in flight like any
// claim's, so the later pods of a gang count its devices as taken. Bind
// creates the claim (generated name <pod>-extended-resources-, owned by
// the pod, annotation resource.kubernetes.io/extended-resource-claim:
// "true", the delete-protection finalizer), writes its allocation with
// the pod in reservedFor, and names it with its request mappings in the
// pod's status.extendedResourceClaimStatus; Unreserve deletes a claim
// Bind created. A claim of the pod left by an earlier attempt (created,
// then neither bound nor deleted) keeps the pod waiting while it is
// deleted; its deletion retries the pod. The API feature
// (DRAExtendedResource) is GA and always on in Kubernetes 1.37, so this
// plugin has no switch for it.
//
// Consumable capacity: a device that allows several allocations is
// shared by claims, each taking a share of its capacity; such shares do
// not take the device whole, and every pod's allocator is told the
// shares and the capacity taken so far (sharedUse, shared.go).
//
// Device binding conditions: after writing an allocation of a device its
// driver must prepare, Bind answers framework.BindNotReadyError until the
// driver reports it ready (bindingconditions.go).
//
// Not supported: kube-scheduler's scoring of allocations, and reserving a
// PodGroup's claim for the PodGroup (its pods are reserved one by one; see
// docs/scheduling.md).
//
// Args: none of its own; kube-scheduler's DynamicResourcesArgs are
// accepted with filterTimeout: 0s (no limit, what this plugin does); any
// other value or field is an error.
//
// Events: ResourceClaim adds, updates and deletes (a hint retries a job
// for its pods' claims, for claims whose devices were freed, and for the
// deletion of its pods' extended-resource claims),
// ResourceSlice and DeviceClass adds and updates, node adds and label
// changes. Registering them makes the scheduler start the three
// resource.k8s.io/v1 informers, which are otherwise off.
package dynamicresources
