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

package dynamicresources

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Extended resources backed by DRA: a container asks for an extended
// resource (example.com/gpu: 1) that a DeviceClass maps, by its
// spec.extendedResourceName or by the implicit name
// deviceclass.resource.kubernetes.io/<class>. On a node that lists the
// resource in its allocatable a device plugin serves it (NodeResourcesFit
// counts it); on a node that does not, this plugin allocates devices of
// the class for it: PreFilterPod finds the mapped resources, Filter asks
// the allocator for an in-memory claim with one request per container and
// resource (count: the quantity), Reserve holds its allocation in flight
// like any claim's, and Bind creates the claim (owned by the pod, with
// the extended-resource-claim annotation), writes its allocation and
// reservedFor, and names it in the pod's status.extendedResourceClaimStatus.

const (
	// ErrReasonCannotAllocateExtended prefixes the rejection of a node
	// whose devices cannot serve the pod's DRA-backed extended resources
	// (when the pod has no claim of its own to allocate as well).
	ErrReasonCannotAllocateExtended = "cannot allocate devices for extended resources"
	// extendedClaimName names a pod's extended-resource claim while it is
	// only in memory (Bind creates it with a generated name). No object
	// can have it: it is not a valid name.
	extendedClaimName = "(extended resources)"
	// staleDeleteTimeout bounds the deletion of a claim left by an
	// earlier attempt.
	staleDeleteTimeout = time.Minute
)

// isExtendedName reports whether name may be a DRA-backed extended
// resource: an extended resource (a domain-prefixed name outside
// kubernetes.io) or a device class's implicit name.
func isExtendedName(name v1.ResourceName) bool {
	n := string(name)
	if strings.HasPrefix(n, resourceapi.ResourceDeviceClassPrefix) {
		return true
	}
	return strings.Contains(n, "/") && !strings.Contains(n, v1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(n, v1.DefaultResourceRequestsPrefix)
}

// asksExtended reports whether a container of pod requests a resource
// isExtendedName accepts.
func asksExtended(pod *v1.Pod) bool {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for name := range cs[i].Resources.Requests {
				if isExtendedName(name) {
					return true
				}
			}
		}
	}
	return false
}

// podExtended holds the DRA-backed extended resources of one pod, as
// PreFilterPod found them, and the claims Filter built for them.
type podExtended struct {
	pod *v1.Pod
	// classes maps each DRA-backed extended resource the pod requests to
	// the name of its device class; names are its keys, sorted.
	classes map[v1.ResourceName]string
	names   []v1.ResourceName
	// uid identifies the in-memory claim in the tracker of allocations in
	// flight until Bind creates the real one.
	uid types.UID

	mu sync.Mutex // guards variants; Filter runs on many nodes at once
	// variants holds the claim for each set of the resources a node lacks
	// (keyed by their names, joined): nodes differ only in which of the
	// pod's resources a device plugin serves.
	variants map[string]*extendedClaim
}

// extendedClaim is the in-memory claim of a pod's extended resources on
// the nodes that lack the same ones, and the mappings Bind writes into
// the pod's status.
type extendedClaim struct {
	claim    *resourceapi.ResourceClaim
	mappings []v1.ContainerExtendedResourceRequest
	// resources are the extended resources the claim's devices serve.
	resources []v1.ResourceName
}

// extendedOf returns pod's DRA-backed extended resources: those it
// requests that a DeviceClass maps; nil when there are none.
func (pl *DynamicResources) extendedOf(pod *v1.Pod) (*podExtended, error) {
	if !asksExtended(pod) {
		// The common pod: no requests summed, no class listed.
		return nil, nil
	}
	var wanted []v1.ResourceName
	for name, n := range resources.PodRequests(pod).Scalar {
		if n > 0 && isExtendedName(name) {
			wanted = append(wanted, name)
		}
	}
	if len(wanted) == 0 {
		return nil, nil
	}
	classes, err := pl.classes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing device classes: %w", err)
	}
	mapped := map[v1.ResourceName]string{}
	for _, name := range wanted {
		if c := classFor(name, classes); c != nil {
			mapped[name] = c.Name
		}
	}
	if len(mapped) == 0 {
		return nil, nil
	}
	e := &podExtended{pod: pod, classes: mapped, uid: uuid.NewUUID(), variants: map[string]*extendedClaim{}}
	for name := range mapped {
		e.names = append(e.names, name)
	}
	slices.Sort(e.names)
	return e, nil
}

// classFor returns the device class that maps the extended resource name,
// or nil. The implicit name deviceclass.resource.kubernetes.io/<class> is
// that class's alone. Of several classes naming it in
// spec.extendedResourceName (while a cluster moves from one class to
// another), the most recently created wins, then the first by name.
func classFor(name v1.ResourceName, classes []*resourceapi.DeviceClass) *resourceapi.DeviceClass {
	if c, ok := strings.CutPrefix(string(name), resourceapi.ResourceDeviceClassPrefix); ok {
		for _, dc := range classes {
			if dc.Name == c {
				return dc
			}
		}
		return nil
	}
	var best *resourceapi.DeviceClass
	for _, dc := range classes {
		if dc.Spec.ExtendedResourceName == nil || *dc.Spec.ExtendedResourceName != string(name) {
			continue
		}
		if best == nil || best.CreationTimestamp.Before(&dc.CreationTimestamp) ||
			best.CreationTimestamp.Equal(&dc.CreationTimestamp) && dc.Name < best.Name {
			best = dc
		}
	}
	return best
}

// nameSet returns the pod's DRA-backed extended resources as a set.
func (e *podExtended) nameSet() map[v1.ResourceName]bool {
	out := make(map[v1.ResourceName]bool, len(e.names))
	for _, n := range e.names {
		out[n] = true
	}
	return out
}

// lacking returns the pod's DRA-backed extended resources that node does
// not list in its allocatable, sorted.
func (e *podExtended) lacking(node *framework.NodeInfo) []v1.ResourceName {
	var out []v1.ResourceName
	for _, n := range e.names {
		if node.Schedulable.Scalar[n] <= 0 {
			out = append(out, n)
		}
	}
	return out
}

// neededOn reports whether some node of nodes lacks one of the resources.
func (e *podExtended) neededOn(nodes []*framework.NodeInfo) bool {
	for _, n := range nodes {
		if n.Node != nil && len(e.lacking(n)) > 0 {
			return true
		}
	}
	return false
}

// forNode returns the claim of the resources node lacks; nil when a
// device plugin serves them all there, or e is nil (no such resources).
func (e *podExtended) forNode(node *framework.NodeInfo) *extendedClaim {
	if e == nil {
		return nil
	}
	names := e.lacking(node)
	if len(names) == 0 {
		return nil
	}
	key := fmt.Sprint(names)
	e.mu.Lock()
	defer e.mu.Unlock()
	if ec := e.variants[key]; ec != nil {
		return ec
	}
	ec := &extendedClaim{resources: names, claim: &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    e.pod.Namespace,
			Name:         extendedClaimName,
			UID:          e.uid,
			GenerateName: e.pod.Name + "-extended-resources-",
			Annotations:  map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: e.pod.Name, UID: e.pod.UID, Controller: ptr.To(true),
			}},
		},
	}}
	for _, name := range names {
		reqs, maps := deviceRequests(e.pod, name, e.classes[name])
		ec.claim.Spec.Devices.Requests = append(ec.claim.Spec.Devices.Requests, reqs...)
		ec.mappings = append(ec.mappings, maps...)
	}
	slices.SortFunc(ec.claim.Spec.Devices.Requests, func(a, b resourceapi.DeviceRequest) int { return strings.Compare(a.Name, b.Name) })
	e.variants[key] = ec
	return ec
}

// deviceRequests returns the device requests for the pod's extended
// resource name (devices of class), and which container uses which.
//
// Containers are numbered as the pod runs them: init containers first,
// then the others. A container that runs for the pod's life (a regular
// container, or a sidecar: an init container restarted always) gets a
// request of its own, "container-<i>-request-<j>" (j: the place of name
// among the container's requests, sorted), for exactly its quantity. A
// plain init container runs alone, before every container numbered after
// it has started: it uses the devices of those first (they are not in use
// yet), and for the rest a request of its own; init containers run one at
// a time, so only the largest of their own requests is kept, shared by
// all of them.
func deviceRequests(pod *v1.Pod, name v1.ResourceName, class string) ([]resourceapi.DeviceRequest, []v1.ContainerExtendedResourceRequest) {
	containers := slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers)
	nInit := len(pod.Spec.InitContainers)
	runsAlone := func(i int) bool {
		c := &containers[i]
		return i < nInit && (c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways)
	}
	mapping := func(i int, request string) v1.ContainerExtendedResourceRequest {
		return v1.ContainerExtendedResourceRequest{ContainerName: containers[i].Name, ResourceName: string(name), RequestName: request}
	}
	request := func(i int, count int64) resourceapi.DeviceRequest {
		return resourceapi.DeviceRequest{
			Name: requestName(&containers[i], i, name),
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count,
			},
		}
	}
	// own[i] is the request of container i when it runs for the pod's life.
	own := make([]*resourceapi.DeviceRequest, len(containers))
	var reqs []resourceapi.DeviceRequest
	var maps, initMaps []v1.ContainerExtendedResourceRequest
	for i := range containers {
		if n := quantity(&containers[i], name); n > 0 && !runsAlone(i) {
			r := request(i, n)
			own[i] = &r
			maps = append(maps, mapping(i, r.Name))
		}
	}
	var largest *resourceapi.DeviceRequest
	var initOwn []int // the entries of initMaps that name an init container's own request
	for i := range containers {
		n := quantity(&containers[i], name)
		if n <= 0 || !runsAlone(i) {
			continue
		}
		for _, later := range own[i+1:] {
			if n <= 0 {
				break
			}
			if later != nil {
				initMaps = append(initMaps, mapping(i, later.Name))
				n -= later.Exactly.Count
			}
		}
		if n <= 0 {
			continue
		}
		r := request(i, n)
		initOwn = append(initOwn, len(initMaps))
		initMaps = append(initMaps, mapping(i, r.Name))
		if largest == nil || r.Exactly.Count > largest.Exactly.Count {
			largest = &r
		}
	}
	for _, j := range initOwn {
		initMaps[j].RequestName = largest.Name
	}
	if largest != nil {
		reqs = append(reqs, *largest)
	}
	for _, r := range own {
		if r != nil {
			reqs = append(reqs, *r)
		}
	}
	return reqs, append(maps, initMaps...)
}

// quantity returns what container c requests of name, 0 when nothing.
func quantity(c *v1.Container, name v1.ResourceName) int64 {
	q, ok := c.Resources.Requests[name]
	if !ok {
		return 0
	}
	n, ok := q.AsInt64()
	if !ok {
		return 0
	}
	return n
}

// requestName names the device request of container c (the i-th the pod
// runs) for name: "container-<i>-request-<j>", j being the place of name
// among the container's requests, sorted.
func requestName(c *v1.Container, i int, name v1.ResourceName) string {
	j := 0
	for other := range c.Resources.Requests {
		if other < name {
			j++
		}
	}
	return fmt.Sprintf("container-%d-request-%d", i, j)
}

// extendedClaimOf returns the claim of pod's extended resources that a
// Bind created (annotated, controlled by the pod), or nil.
func (pl *DynamicResources) extendedClaimOf(pod *v1.Pod) (*resourceapi.ResourceClaim, error) {
	claims, err := pl.claims.ResourceClaims(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing resourceclaims of namespace %s: %w", pod.Namespace, err)
	}
	for _, c := range claims {
		if extendedClaimOwner(c) == pod.UID {
			return c, nil
		}
	}
	return nil, nil
}

// extendedClaimOwner returns the UID of the pod whose extended-resource
// claim c is; "" when c is not one.
func extendedClaimOwner(c *resourceapi.ResourceClaim) types.UID {
	if c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
		return ""
	}
	if ref := metav1.GetControllerOf(c); ref != nil && ref.APIVersion == "v1" && ref.Kind == "Pod" {
		return ref.UID
	}
	return ""
}

// preFilterExtended finds pod's DRA-backed extended resources, tells
// NodeResourcesFit about them (pluginutil.DRAExtended), and returns them
// when some node of nodes lacks one; nil when there is nothing for this
// plugin to allocate. A claim an earlier attempt created for the pod and
// left behind (its binding failed and the claim could not be deleted, or
// the scheduler stopped) keeps the pod waiting while it is deleted: its
// allocation may no longer be what a new placement needs.
func (pl *DynamicResources) preFilterExtended(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (*podExtended, *framework.Status) {
	ext, err := pl.extendedOf(pod)
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("%s: extended resources of pod %s: %w", Name, klog.KObj(pod), err))
	}
	if ext == nil {
		return nil, nil
	}
	state.Write(pluginutil.DRAExtendedKey, &pluginutil.DRAExtended{Pod: pod.UID, Names: ext.nameSet()})
	if !ext.neededOn(nodes) {
		return nil, nil
	}
	stale, err := pl.extendedClaimOf(pod)
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("%s: pod %s: %w", Name, klog.KObj(pod), err))
	}
	if stale != nil {
		pl.deleteStale(ctx, stale)
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("waiting for resourceclaim %q, left by an earlier attempt to allocate the pod's extended resources, to be deleted", stale.Name))
	}
	return ext, nil
}

// staleDeletes are the deletions of left-behind claims under way.
//
// mu guards inProgress; it is held only to read or change the map.
type staleDeletes struct {
	mu         sync.Mutex
	inProgress map[types.UID]bool
}

// deleteStale deletes claim, a claim left by an earlier attempt, in the
// background: its deletion event retries the pod (claimHint). One
// deletion per claim runs at a time.
func (pl *DynamicResources) deleteStale(ctx context.Context, claim *resourceapi.ResourceClaim) {
	client := pl.handle.ClientSet()
	if client == nil {
		return
	}
	pl.stale.mu.Lock()
	if pl.stale.inProgress[claim.UID] {
		pl.stale.mu.Unlock()
		return
	}
	pl.stale.inProgress[claim.UID] = true
	pl.stale.mu.Unlock()
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), staleDeleteTimeout)
	go func() {
		defer cancel()
		defer func() {
			pl.stale.mu.Lock()
			delete(pl.stale.inProgress, claim.UID)
			pl.stale.mu.Unlock()
		}()
		if err := deleteClaim(ctx, client, claim); err != nil {
			logger.Error(err, "Deleting a resourceclaim left by an earlier attempt to place its pod", "resourceclaim", klog.KObj(claim))
			return
		}
		logger.V(2).Info("Deleted a resourceclaim left by an earlier attempt to place its pod", "resourceclaim", klog.KObj(claim))
	}()
}

// createExtendedClaim creates, once, the claim of rc (the pod's
// extended-resource claim, in memory until now) with the
// delete-protection finalizer, and makes rc and the allocation in flight
// refer to the created claim. r.mu guards rc.claim and rc.created.
func (pl *DynamicResources) createExtendedClaim(ctx context.Context, client kubernetes.Interface, r *reservations, rc *reservedClaim) error {
	r.mu.Lock()
	created, inMemory := rc.created, rc.claim
	r.mu.Unlock()
	if created {
		return nil
	}
	obj := inMemory.DeepCopy()
	obj.Name, obj.UID, obj.ResourceVersion = "", "", ""
	obj.Finalizers = []string{resourceapi.Finalizer}
	obj.Status = resourceapi.ResourceClaimStatus{}
	claim, err := client.ResourceV1().ResourceClaims(obj.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the resourceclaim of the extended resources: %w", err)
	}
	if rc.tracked {
		pl.inFlight.created(inMemory.UID, claim)
	}
	r.mu.Lock()
	rc.claim, rc.created = claim, true
	r.mu.Unlock()
	return nil
}

// writeExtendedStatus names claim, and which container uses which of its
// requests, in the pod's status.extendedResourceClaimStatus. A merge
// patch of that field alone leaves the pod's other status fields (its
// conditions, written concurrently) as they are.
func writeExtendedStatus(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, claim *resourceapi.ResourceClaim, mappings []v1.ContainerExtendedResourceRequest) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"extendedResourceClaimStatus": v1.PodExtendedResourceClaimStatus{ResourceClaimName: claim.Name, RequestMappings: mappings},
	}})
	if err != nil {
		return fmt.Errorf("encoding the status patch: %w", err)
	}
	if _, err := client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("writing resourceclaim %s into the pod's status.extendedResourceClaimStatus: %w", claim.Name, err)
	}
	return nil
}

// deleteClaim deletes claim, first taking off the delete-protection
// finalizer (nobody else would: the claim was never in use); a claim
// gone, or replaced by another of the same name, is left alone.
func deleteClaim(ctx context.Context, client kubernetes.Interface, claim *resourceapi.ResourceClaim) error {
	claims := client.ResourceV1().ResourceClaims(claim.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != claim.UID || !slices.Contains(cur.Finalizers, resourceapi.Finalizer) {
			return nil
		}
		cur = cur.DeepCopy()
		cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == resourceapi.Finalizer })
		_, err = claims.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the finalizer of resourceclaim %s: %w", klog.KObj(claim), err)
	}
	err = claims.Delete(ctx, claim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claim.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting resourceclaim %s: %w", klog.KObj(claim), err)
	}
	return nil
}
