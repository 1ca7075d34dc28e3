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
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "DynamicResources"

// Rejection reasons.
const (
	// ErrReasonNotAvailable: an allocated claim's node selector excludes
	// the node.
	ErrReasonNotAvailable = "resourceclaim not available on the node"
	// ErrReasonCannotAllocate: the node's devices cannot satisfy the pod's
	// unallocated claims.
	ErrReasonCannotAllocate = "cannot allocate all claims"
)

const (
	podStateKey framework.StateKey = Name + "/pod"
	reservedKey framework.StateKey = Name + "/reserved"
	// simulatedKey holds, inside an eviction simulation, the allocations
	// Filter found for each pod of the preempting job per node.
	simulatedKey framework.StateKey = Name + "/simulated"
	// celCacheSize bounds the compiled CEL expressions kept.
	celCacheSize = 10
)

// features are the allocator features enabled: those of Kubernetes
// v1.37's default feature gates that this plugin implements, consumable
// capacity (DRAConsumableCapacity, beta and on by default in 1.37; see
// sharedUse) with FractionalCapacityRange (also on by default there),
// and device binding conditions (DRADeviceBindingConditions, beta and on
// by default; see bindingconditions.go).
// They make NewAllocator pick the "incubating" implementation, the one
// kube-scheduler 1.37 runs with its default gates, over the "stable"
// one, which supports the GA features but takes every pool's
// shared-counter slices on every node and searches partitionable devices
// without pruning: 53 ms against 0.56 ms for one node of kube-scheduler's
// PartitionableBacktracking workload. TestAllocatorImplementation keeps
// the choice from changing unnoticed with a new module version.
var features = structured.Features{AdminAccess: true, PrioritizedList: true, PartitionableDevices: true, DeviceTaints: true,
	ConsumableCapacity: true, FractionalCapacityRange: true, DeviceBindingAndStatus: true}

// DynamicResources is the plugin.
type DynamicResources struct {
	handle   framework.Handle
	claims   resourcelisters.ResourceClaimLister
	slices   resourcelisters.ResourceSliceLister
	classes  resourcelisters.DeviceClassLister
	pods     podGetter
	celCache *cel.Cache
	inFlight *inFlight
	// allocated holds the devices the store's claims have allocated.
	allocated *allocatedIndex
	// stale are the deletions under way of claims left behind.
	stale *staleDeletes
	// bindingTimeout bounds Bind's wait for devices' binding conditions
	// (0: defaultBindingTimeout); clock is the time (nil: time.Now).
	// Tests set them.
	bindingTimeout time.Duration
	clock          func() time.Time
}

// now is the plugin's clock.
func (pl *DynamicResources) now() time.Time {
	if pl.clock != nil {
		return pl.clock()
	}
	return time.Now()
}

var (
	_ framework.PodPreFilterPlugin = &DynamicResources{}
	_ framework.FilterPlugin       = &DynamicResources{}
	_ framework.ReservePlugin      = &DynamicResources{}
	_ framework.BindPlugin         = &DynamicResources{}
	_ framework.EnqueueExtensions  = &DynamicResources{}
)

// kubeDefaults are kube-scheduler's DynamicResourcesArgs this plugin
// behaves as if given: its Filter has no time limit (filterTimeout 0s;
// kube-scheduler's default is 10s, which is refused rather than ignored).
var kubeDefaults = pluginutil.KubeDefaults{"filterTimeout": {`"0s"`}}

// New is the plugin's framework.PluginFactory. It takes no args of its
// own (kube-scheduler's are accepted at kubeDefaults) and needs a Handle
// with an informer factory (and a clientset to bind).
func New(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeKubeDefaultArgs(Name, args, kubeDefaults); err != nil {
		return nil, err
	}
	f, err := pluginutil.InformerFactory(Name, h)
	if err != nil {
		return nil, err
	}
	return &DynamicResources{
		handle:    h,
		claims:    f.Resource().V1().ResourceClaims().Lister(),
		slices:    f.Resource().V1().ResourceSlices().Lister(),
		classes:   f.Resource().V1().DeviceClasses().Lister(),
		pods:      podGetter{f.Core().V1().Pods().Informer().GetIndexer()},
		celCache:  cel.NewCache(celCacheSize, cel.Features{}),
		inFlight:  newInFlight(),
		allocated: newAllocatedIndex(),
		stale:     &staleDeletes{inProgress: map[types.UID]bool{}},
	}, nil
}

// Name implements framework.Plugin.
func (*DynamicResources) Name() string { return Name }

// claimInfo is one claim of the pod as PreFilterPod found it.
type claimInfo struct {
	claim *resourceapi.ResourceClaim
	// allocation is the claim's allocation, from the API or in flight;
	// nil when the pod's placement must allocate it.
	allocation *resourceapi.AllocationResult
	// inFlight: allocation is an allocation in flight, not yet in the API.
	inFlight bool
	// selector is the allocation's node selector; nil admits every node.
	selector *nodeaffinity.NodeSelector
}

// podState is what PreFilterPod found for one pod, and what its Filter
// calls allocated per node.
type podState struct {
	uid    types.UID
	claims []claimInfo
	// toAllocate are the claims without an allocation, in claims' order.
	toAllocate []*resourceapi.ResourceClaim
	// ext are the pod's DRA-backed extended resources; nil when it has
	// none, or every node serves them by a device plugin.
	ext       *podExtended
	allocator structured.Allocator

	mu sync.Mutex // guards byNode, written by Filter on many nodes at once
	// byNode holds what Filter allocated on each node that passed.
	byNode map[string]nodeAllocation
}

// nodeAllocation is what Filter allocated for a pod on one node.
type nodeAllocation struct {
	// results hold the allocation of each claim of toAllocate, then, with
	// ext set, of the extended-resource claim.
	results []resourceapi.AllocationResult
	// ext is the pod's extended-resource claim on the node; nil when the
	// node needs none.
	ext *extendedClaim
}

// Clone implements framework.StateData; the state is per pod and shared.
func (s *podState) Clone() framework.StateData { return s }

// PreFilterPod implements framework.PodPreFilterPlugin: it resolves the
// pod's claims and its DRA-backed extended resources (extended.go) and,
// when some must be allocated, prepares the allocator with the devices
// already taken.
func (pl *DynamicResources) PreFilterPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	ext, st := pl.preFilterExtended(ctx, state, pod, nodes)
	if st != nil {
		return st
	}
	if len(pod.Spec.ResourceClaims) == 0 && ext == nil {
		return framework.NewStatus(framework.Skip)
	}
	var claims []*resourceapi.ResourceClaim
	if len(pod.Spec.ResourceClaims) > 0 {
		if claims, st = pl.podClaims(pod); st != nil {
			return st
		}
	}
	if len(claims) == 0 && ext == nil {
		return framework.NewStatus(framework.Skip)
	}
	pl.pruneInFlight()
	s := &podState{uid: pod.UID, ext: ext, byNode: map[string]nodeAllocation{}}
	for _, claim := range claims {
		ci := claimInfo{claim: claim, allocation: claim.Status.Allocation}
		if ci.allocation == nil {
			if a := pl.inFlight.allocation(claim.UID); a != nil {
				ci.allocation, ci.inFlight = a, true
			}
		}
		if ci.allocation == nil {
			if st := pl.checkClasses(claim); st != nil {
				return st
			}
			s.toAllocate = append(s.toAllocate, claim)
			s.claims = append(s.claims, ci)
			continue
		}
		if !ci.inFlight && !resourceclaim.IsReservedForPod(pod, claim, true) &&
			len(claim.Status.ReservedFor) >= resourceapi.ResourceClaimReservedForMaxSize {
			return framework.NewStatus(framework.Unschedulable,
				fmt.Sprintf("resourceclaim %q is reserved for the maximum of %d consumers", claim.Name, resourceapi.ResourceClaimReservedForMaxSize))
		}
		if sel := ci.allocation.NodeSelector; sel != nil {
			ns, err := nodeaffinity.NewNodeSelector(sel)
			if err != nil {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable,
					fmt.Sprintf("resourceclaim %q: invalid node selector in its allocation: %v", claim.Name, err))
			}
			ci.selector = ns
		}
		s.claims = append(s.claims, ci)
	}
	if len(s.toAllocate) > 0 || s.ext != nil {
		allocated, shared, err := pl.allocatedDevices(state, pod, nodes)
		if err != nil {
			return framework.AsStatus(fmt.Errorf("%s: pod %s: %w", Name, klog.KObj(pod), err))
		}
		slices, err := pl.slices.List(labels.Everything())
		if err != nil {
			return framework.AsStatus(fmt.Errorf("%s: listing resourceslices for pod %s: %w", Name, klog.KObj(pod), err))
		}
		if allocated, err = pl.holdNominated(ctx, state, allocated, &shared, slices, nodes); err != nil {
			return framework.AsStatus(fmt.Errorf("%s: pod %s: %w", Name, klog.KObj(pod), err))
		}
		a, err := structured.NewAllocator(ctx, features, shared.state(allocated),
			classLister{pl.classes}, slices, pl.celCache)
		if err != nil {
			return framework.AsStatus(fmt.Errorf("%s: preparing the device allocator for pod %s: %w", Name, klog.KObj(pod), err))
		}
		s.allocator = a
	}
	state.Write(podStateKey, s)
	return nil
}

// podClaims returns the pod's claims, each once, or the status that keeps
// the pod waiting: a claim missing (or not created from its template
// yet), not the pod's own, or being deleted.
func (pl *DynamicResources) podClaims(pod *v1.Pod) ([]*resourceapi.ResourceClaim, *framework.Status) {
	var out []*resourceapi.ResourceClaim
	seen := map[types.UID]bool{}
	for i := range pod.Spec.ResourceClaims {
		pc := &pod.Spec.ResourceClaims[i]
		name, mustCheckOwner, err := resourceclaim.Name(pod, pc)
		if err != nil {
			if errors.Is(err, resourceclaim.ErrClaimNotFound) && pc.ResourceClaimTemplateName != nil {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
					fmt.Sprintf("waiting for the resource claim controller to create the resourceclaim of pod claim %q from template %q", pc.Name, *pc.ResourceClaimTemplateName))
			}
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
		}
		if name == nil {
			// Deliberately not created: nothing to allocate.
			continue
		}
		claim, err := pl.claims.ResourceClaims(pod.Namespace).Get(*name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
					fmt.Sprintf("resourceclaim %q of pod claim %q not found", *name, pc.Name))
			}
			return nil, framework.AsStatus(fmt.Errorf("%s: getting resourceclaim %s/%s of pod %s: %w", Name, pod.Namespace, *name, klog.KObj(pod), err))
		}
		if mustCheckOwner {
			if err := resourceclaim.IsForPod(pod, claim, true); err != nil {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
			}
		}
		if claim.DeletionTimestamp != nil {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("resourceclaim %q is being deleted", claim.Name))
		}
		if seen[claim.UID] {
			continue
		}
		seen[claim.UID] = true
		out = append(out, claim)
	}
	return out, nil
}

// checkClasses rejects a claim whose requests name a device class that
// does not exist: nothing can be allocated for it on any node.
func (pl *DynamicResources) checkClasses(claim *resourceapi.ResourceClaim) *framework.Status {
	check := func(request, class string) *framework.Status {
		if class == "" {
			return nil
		}
		if _, err := pl.classes.Get(class); err != nil {
			if apierrors.IsNotFound(err) {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable,
					fmt.Sprintf("resourceclaim %q, request %q: device class %q does not exist", claim.Name, request, class))
			}
			return framework.AsStatus(fmt.Errorf("%s: getting device class %q of resourceclaim %s: %w", Name, class, klog.KObj(claim), err))
		}
		return nil
	}
	for _, r := range claim.Spec.Devices.Requests {
		if r.Exactly != nil {
			if st := check(r.Name, r.Exactly.DeviceClassName); st != nil {
				return st
			}
		}
		for _, sub := range r.FirstAvailable {
			if st := check(r.Name+"/"+sub.Name, sub.DeviceClassName); st != nil {
				return st
			}
		}
	}
	return nil
}

// allocatedDevices returns the devices taken whole, and the shares of
// devices taken (consumable capacity): by the allocations the informer
// shows and by those in flight. Inside an eviction simulation, a
// claim whose consumers are all running pods the simulation took off the
// nodes counts as free; one shared with a pod that stays does not; and
// the devices Filter found for the preempting job's other pods, where the
// simulation placed them, are taken (the simulation does not Reserve).
func (pl *DynamicResources) allocatedDevices(state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (sets.Set[structured.DeviceID], sharedUse, error) {
	var shared sharedUse
	claims, err := pl.claims.List(labels.Everything())
	if err != nil {
		return nil, shared, fmt.Errorf("listing resourceclaims: %w", err)
	}
	var taken sets.Set[structured.DeviceID]
	// owned: taken is this call's own set, not the index's shared one.
	owned := framework.IsEvictionSimulation(state)
	if owned {
		taken = sets.New[structured.DeviceID]()
		freed := pl.freedInSimulation(nodes)
		simulatedOf(state).addPlaced(taken, &shared, pod, nodes)
		for _, c := range claims {
			if c.Status.Allocation != nil && !freed(c) {
				taken.Insert(allocationDevices(c.Status.Allocation)...)
				shared.add(c.Status.Allocation)
			}
		}
	} else {
		// Shared with the index: copied below before anything is added.
		taken, shared = pl.allocated.sync(claims)
	}
	for _, p := range pl.inFlight.list() {
		if hasShared(p.allocation) && !pl.shownAllocated(p.namespace, p.name) {
			// Shares add up, unlike devices in a set: only those the
			// store does not show yet are added.
			shared.add(p.allocation)
		}
		// An allocation the store shows already is in taken; one it does
		// not show yet is added.
		for _, d := range allocationDevices(p.allocation) {
			if taken.Has(d) {
				continue
			}
			if !owned {
				taken, owned = taken.Clone(), true
			}
			taken.Insert(d)
		}
	}
	return taken, shared, nil
}

// shownAllocated reports whether the informer's store shows the claim
// allocated.
func (pl *DynamicResources) shownAllocated(namespace, name string) bool {
	c, err := pl.claims.ResourceClaims(namespace).Get(name)
	return err == nil && c.Status.Allocation != nil
}

// pruneInFlight forgets the allocations in flight the informer caught up
// with: written, and shown allocated, or at our write or later (the
// claim may have been deallocated since), or gone.
func (pl *DynamicResources) pruneInFlight() {
	for _, p := range pl.inFlight.list() {
		if !p.allWritten {
			continue
		}
		cur, err := pl.claims.ResourceClaims(p.namespace).Get(p.name)
		if err != nil {
			cur = nil
		}
		if p.caughtUp(cur) {
			pl.inFlight.forget(p.uid)
		}
	}
}

// freedInSimulation returns whether a claim's devices are free in an
// eviction simulation over nodes: every consumer is a pod that runs (the
// pod informer has it bound and not finished) but is missing from the
// nodes, i.e. a victim.
func (pl *DynamicResources) freedInSimulation(nodes []*framework.NodeInfo) func(*resourceapi.ResourceClaim) bool {
	present := map[types.UID]bool{}
	for _, n := range nodes {
		for _, t := range n.Pods {
			present[t.GetUID()] = true
		}
	}
	return func(c *resourceapi.ResourceClaim) bool {
		if len(c.Status.ReservedFor) == 0 {
			return false
		}
		for _, ref := range c.Status.ReservedFor {
			if ref.APIGroup != "" || ref.Resource != "pods" || present[ref.UID] {
				return false
			}
			pod, err := pl.pods.Get(c.Namespace, ref.Name)
			if err != nil || pod.UID != ref.UID || pod.Spec.NodeName == "" ||
				pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
				return false
			}
		}
		return true
	}
}

// classLister adapts the informer's lister to the allocator's interface.
type classLister struct {
	l resourcelisters.DeviceClassLister
}

func (c classLister) List() ([]*resourceapi.DeviceClass, error) { return c.l.List(labels.Everything()) }
func (c classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	return c.l.Get(name)
}

// stateOf returns pod's podState from state; nil when PreFilterPod
// skipped the pod.
func stateOf(state *framework.CycleState, pod *v1.Pod) (*podState, error) {
	d, ok := state.Read(podStateKey)
	if !ok {
		return nil, nil
	}
	s, ok := d.(*podState)
	if !ok || s.uid != pod.UID {
		return nil, nil
	}
	return s, nil
}

// Filter implements framework.FilterPlugin: the allocated claims' node
// selectors must admit the node, and the allocator must find devices on
// it for the others.
func (pl *DynamicResources) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	s, _ := stateOf(state, pod)
	if s == nil {
		return nil
	}
	if nodeInfo.Node == nil || nodeInfo.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	node := nodeInfo.Node
	for _, ci := range s.claims {
		if ci.allocation != nil && ci.selector != nil && !ci.selector.Match(node) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNotAvailable)
		}
	}
	var ext *extendedClaim
	if s.ext != nil {
		ext = s.ext.forNode(nodeInfo)
	}
	if len(s.toAllocate) == 0 && ext == nil {
		return nil
	}
	claims := s.toAllocate
	if ext != nil {
		claims = append(slices.Clip(claims), ext.claim)
	}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "node", node.Name)
	results, err := s.allocator.Allocate(klog.NewContext(ctx, logger), node, claims)
	switch {
	case err != nil && ctx.Err() != nil:
		return framework.AsStatus(fmt.Errorf("%s: allocating devices for pod %s on node %q: %w", Name, klog.KObj(pod), node.Name, err))
	case errors.Is(err, structured.ErrFailedAllocationOnNode):
		return framework.NewStatus(framework.Unschedulable, err.Error())
	case err != nil:
		// Bad input (a CEL selector that fails, a class that went away):
		// the same on every node, and only a change of the claim or class
		// helps.
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("resourceclaims %s: %v", claimNames(claims), err))
	case results == nil && len(s.toAllocate) == 0:
		return framework.NewStatus(framework.Unschedulable, fmt.Sprintf("%s %s", ErrReasonCannotAllocateExtended, resourceNames(ext.resources)))
	case results == nil:
		return framework.NewStatus(framework.Unschedulable, ErrReasonCannotAllocate)
	}
	s.mu.Lock()
	s.byNode[node.Name] = nodeAllocation{results: results, ext: ext}
	s.mu.Unlock()
	if framework.IsEvictionSimulation(state) {
		simulatedOf(state).record(pod.UID, node.Name, results)
	}
	return nil
}

// resourceNames renders resource names for messages: "a", or "a, b".
func resourceNames(names []v1.ResourceName) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return strings.Join(out, ", ")
}

// claimNames renders claims' names for messages: "a", or "a, b".
func claimNames(claims []*resourceapi.ResourceClaim) string {
	out := ""
	for i, c := range claims {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", c.Name)
	}
	return out
}

// JudgesBySpec implements framework.SpecJudge: a pod's ResourceClaims, and
// the claim of its DRA-backed extended resources, are its own.
func (*DynamicResources) JudgesBySpec(pod *v1.Pod) bool {
	return len(pod.Spec.ResourceClaims) == 0 && !asksExtended(pod)
}

// podGetter reads pods from the scheduler's pod informer, whose store
// keeps a bound pod as a framework.PodRecord (which a generated lister
// cannot hand out).
type podGetter struct{ indexer toolscache.Indexer }

// Get returns the pod namespace/name, a NotFound error when the store has
// none.
func (g podGetter) Get(namespace, name string) (*v1.Pod, error) {
	obj, ok, err := g.indexer.GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	pod, isPod := framework.StoredPod(obj)
	if !ok || !isPod {
		return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	return pod, nil
}
