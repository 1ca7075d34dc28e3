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
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// reservedClaim is one claim of a placed pod, as Reserve recorded it for
// Bind and Unreserve.
type reservedClaim struct {
	// claim is the claim; for the pod's extended-resource claim, the
	// in-memory one until Bind created it, then the created one (guarded
	// by reservations.mu).
	claim *resourceapi.ResourceClaim
	// allocation is what Bind writes when the claim is not allocated yet;
	// nil for a claim the API showed allocated.
	allocation *resourceapi.AllocationResult
	// tracked: the pod is a consumer of the claim's entry in inFlight.
	tracked bool
	// wrote: Bind added the pod to the claim's reservedFor. Set by Bind,
	// read by Unreserve; guarded by reservations.mu.
	wrote bool
	// ext is set for the pod's extended-resource claim, which Bind
	// creates; created: Bind created it (Unreserve deletes it). created is
	// guarded by reservations.mu.
	ext     *extendedClaim
	created bool
}

// reservations holds the claims of each placed pod of the cycle.
type reservations struct {
	mu    sync.Mutex // guards byPod and its reservedClaims' claim, wrote and created
	byPod map[types.UID][]*reservedClaim
}

// Clone implements framework.StateData; one map serves the cycle.
func (r *reservations) Clone() framework.StateData { return r }

// reservationsOf returns the cycle's reservations, creating them.
func reservationsOf(state *framework.CycleState) *reservations {
	if d, ok := state.Read(reservedKey); ok {
		if r, ok := d.(*reservations); ok {
			return r
		}
	}
	r := &reservations{byPod: map[types.UID][]*reservedClaim{}}
	state.Write(reservedKey, r)
	return r
}

// Reserve implements framework.ReservePlugin: it holds the devices
// Filter found on nodeName for the pod's unallocated claims (in flight),
// so that later pods of the gang and later cycles do not take them, and
// records the pod's claims for Bind.
func (pl *DynamicResources) Reserve(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	s, _ := stateOf(state, pod)
	if s == nil {
		return nil
	}
	var na nodeAllocation
	if len(s.toAllocate) > 0 || s.ext != nil {
		s.mu.Lock()
		na = s.byNode[nodeName]
		s.mu.Unlock()
		want := len(s.toAllocate)
		if na.ext != nil {
			want++
		}
		if len(na.results) != want {
			return framework.AsStatus(fmt.Errorf("%s: no allocation of pod %s's claims on node %q", Name, klog.KObj(pod), nodeName))
		}
	}
	results := na.results
	var out []*reservedClaim
	undo := func() {
		for _, rc := range out {
			if rc.tracked {
				pl.inFlight.release(rc.claim.UID, pod.UID)
			}
		}
	}
	next := 0
	for _, ci := range s.claims {
		rc := &reservedClaim{claim: ci.claim}
		switch {
		case ci.allocation == nil:
			a := &results[next]
			next++
			if !pl.inFlight.reserve(ci.claim, a, pod.UID) {
				undo()
				return framework.NewStatus(framework.Unschedulable, fmt.Sprintf("resourceclaim %q is being allocated for another pod", ci.claim.Name))
			}
			rc.allocation, rc.tracked = a, true
		case ci.inFlight:
			if !pl.inFlight.reserve(ci.claim, nil, pod.UID) {
				// The allocation in flight was released since PreFilterPod.
				undo()
				return framework.NewStatus(framework.Unschedulable, fmt.Sprintf("resourceclaim %q: its allocation was undone", ci.claim.Name))
			}
			rc.allocation, rc.tracked = ci.allocation, true
		}
		out = append(out, rc)
	}
	if na.ext != nil {
		// Held like a claim of the pod's own: later pods of the gang and
		// later cycles count its devices as taken.
		a := &results[len(s.toAllocate)]
		if !pl.inFlight.reserve(na.ext.claim, a, pod.UID) {
			undo()
			return framework.AsStatus(fmt.Errorf("%s: the extended-resource claim of pod %s is in flight already", Name, klog.KObj(pod)))
		}
		out = append(out, &reservedClaim{claim: na.ext.claim, allocation: a, tracked: true, ext: na.ext})
	}
	r := reservationsOf(state)
	r.mu.Lock()
	r.byPod[pod.UID] = out
	r.mu.Unlock()
	return nil
}

// take returns pod's reserved claims; remove drops them from state.
func take(state *framework.CycleState, pod *v1.Pod, remove bool) (*reservations, []*reservedClaim) {
	d, ok := state.Read(reservedKey)
	if !ok {
		return nil, nil
	}
	r, ok := d.(*reservations)
	if !ok {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.byPod[pod.UID]
	if remove {
		delete(r.byPod, pod.UID)
	}
	return r, out
}

// Unreserve implements framework.ReservePlugin: it releases the devices
// held for the pod and, when Bind already wrote the pod into a claim's
// reservedFor (the pod's own bind failed later), takes it out again and,
// for a claim this scheduler allocated, drops the allocation when no
// other consumer is left. The extended-resource claim Bind created for
// the pod is deleted.
func (pl *DynamicResources) Unreserve(ctx context.Context, state *framework.CycleState, pod *v1.Pod, _ string) {
	r, claims := take(state, pod, true)
	if len(claims) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	for _, rc := range claims {
		r.mu.Lock()
		claim, wrote, created := rc.claim, rc.wrote, rc.created
		r.mu.Unlock()
		switch {
		case created:
			if err := pl.deleteCreated(ctx, claim); err != nil {
				logger.Error(err, "Deleting the extended-resource claim of a pod whose binding failed",
					"pod", klog.KObj(pod), "resourceclaim", klog.KObj(claim))
			}
		case wrote:
			// A claim this scheduler allocated (this pod's Bind or a
			// gang mate's) loses its allocation with its last consumer.
			if err := pl.unwrite(ctx, claim, pod, rc.allocation != nil); err != nil {
				logger.Error(err, "Undoing the reservation of a resourceclaim for a pod whose binding failed",
					"pod", klog.KObj(pod), "resourceclaim", klog.KObj(claim))
			}
		}
		if rc.tracked {
			pl.inFlight.release(claim.UID, pod.UID)
		}
	}
}

// deleteCreated deletes a claim Bind created.
func (pl *DynamicResources) deleteCreated(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	client := pl.handle.ClientSet()
	if client == nil {
		return fmt.Errorf("no clientset")
	}
	return deleteClaim(ctx, client, claim)
}

// consumer is pod as an entry of a claim's reservedFor.
func consumer(pod *v1.Pod) resourceapi.ResourceClaimConsumerReference {
	return resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: pod.Name, UID: pod.UID}
}

// Bind implements framework.BindPlugin: for each claim of the pod it
// writes the allocation decided in Reserve (with the claim's
// delete-protection finalizer) if the claim has none yet, and adds the pod
// to status.reservedFor. It then returns Skip for the next Bind plugin to
// bind the pod. Each write reads the claim from the API server and is
// retried on a conflict, since the pods of a gang sharing a claim are
// bound concurrently.
func (pl *DynamicResources) Bind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, _ string) *framework.Status {
	r, claims := take(state, pod, false)
	if len(claims) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	client := pl.handle.ClientSet()
	if client == nil {
		return framework.AsStatus(fmt.Errorf("%s: reserving the resourceclaims of pod %s: no clientset", Name, klog.KObj(pod)))
	}
	logger := klog.FromContext(ctx)
	for _, rc := range claims {
		if rc.ext != nil {
			if err := pl.createExtendedClaim(ctx, client, r, rc); err != nil {
				return framework.AsStatus(fmt.Errorf("%s: pod %s: %w", Name, klog.KObj(pod), err))
			}
		}
		r.mu.Lock()
		claim := rc.claim
		r.mu.Unlock()
		allocated, rv, err := reserveFor(ctx, client, claim, rc.allocation, pod)
		if err != nil {
			return framework.AsStatus(fmt.Errorf("reserving resourceclaim %s for pod %s: %w", klog.KObj(claim), klog.KObj(pod), err))
		}
		r.mu.Lock()
		rc.wrote = true
		r.mu.Unlock()
		if rc.tracked {
			pl.inFlight.written(claim.UID, pod.UID, rv)
		}
		if rc.ext != nil {
			if err := writeExtendedStatus(ctx, client, pod, claim, rc.ext.mappings); err != nil {
				return framework.AsStatus(fmt.Errorf("%s: pod %s: %w", Name, klog.KObj(pod), err))
			}
		}
		logger.V(2).Info("Reserved resourceclaim for pod", "pod", klog.KObj(pod), "resourceclaim", klog.KObj(claim), "allocated", allocated,
			"extendedResources", rc.ext != nil)
	}
	for _, rc := range claims {
		r.mu.Lock()
		claim := rc.claim
		r.mu.Unlock()
		if !hasBindingConditions(rc.allocation) && !hasBindingConditions(claim.Status.Allocation) {
			continue
		}
		err := pl.bindingState(claim.Namespace, claim.Name)
		if err == nil {
			continue
		}
		var notReady *framework.BindNotReadyError
		if errors.As(err, &notReady) {
			if _, perr := pl.pods.Get(pod.Namespace, pod.Name); apierrors.IsNotFound(perr) {
				// Deleted while it waited: nothing to wait for.
				return framework.AsStatus(fmt.Errorf("%s: pod %s waited for its devices: %w", Name, klog.KObj(pod), perr))
			}
		}
		logger.V(4).Info("Devices not ready for binding", "pod", klog.KObj(pod), "resourceclaim", klog.KObj(claim), "state", err)
		return framework.AsStatus(fmt.Errorf("%s: pod %s: %w", Name, klog.KObj(pod), err))
	}
	return framework.NewStatus(framework.Skip)
}

// reserveFor writes allocation into claim if the claim has none and adds
// pod to its reservedFor; allocated reports whether it wrote the
// allocation, rv is the claim's resourceVersion after the write (or as
// read, when there was nothing to write).
func reserveFor(ctx context.Context, client kubernetes.Interface, claim *resourceapi.ResourceClaim, allocation *resourceapi.AllocationResult,
	pod *v1.Pod) (allocated bool, rv string, err error) {
	claims := client.ResourceV1().ResourceClaims(claim.Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		allocated = false
		cur, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rv = cur.ResourceVersion
		if cur.UID != claim.UID {
			return fmt.Errorf("the claim was deleted and created again")
		}
		if cur.DeletionTimestamp != nil {
			return fmt.Errorf("the claim is being deleted")
		}
		if resourceclaim.IsReservedForPod(pod, cur, true) {
			return nil
		}
		if cur.Status.Allocation == nil {
			if allocation == nil {
				return fmt.Errorf("the claim's allocation was removed meanwhile")
			}
			if !slices.Contains(cur.Finalizers, resourceapi.Finalizer) {
				cur = cur.DeepCopy()
				cur.Finalizers = append(cur.Finalizers, resourceapi.Finalizer)
				if cur, err = claims.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
			cur = cur.DeepCopy()
			cur.Status.Allocation = allocation.DeepCopy()
			if hasBindingConditions(allocation) {
				// The binding timeout counts from here.
				now := metav1.Now()
				cur.Status.Allocation.AllocationTimestamp = &now
			}
			allocated = true
		} else {
			cur = cur.DeepCopy()
		}
		if len(cur.Status.ReservedFor) >= resourceapi.ResourceClaimReservedForMaxSize {
			return fmt.Errorf("the claim is reserved for the maximum of %d consumers", resourceapi.ResourceClaimReservedForMaxSize)
		}
		cur.Status.ReservedFor = append(cur.Status.ReservedFor, consumer(pod))
		updated, err := claims.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		rv = updated.ResourceVersion
		return nil
	})
	return allocated, rv, err
}

// unwrite takes pod out of the claim's reservedFor and, when ours (this
// scheduler allocated it) and no consumer is left, drops the allocation
// (and the finalizer).
func (pl *DynamicResources) unwrite(ctx context.Context, claim *resourceapi.ResourceClaim, pod *v1.Pod, ours bool) error {
	client := pl.handle.ClientSet()
	if client == nil {
		return fmt.Errorf("no clientset")
	}
	claims := client.ResourceV1().ResourceClaims(claim.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil || cur.UID != claim.UID {
			// Gone: nothing to undo.
			return nil
		}
		cur = cur.DeepCopy()
		cur.Status.ReservedFor = slices.DeleteFunc(cur.Status.ReservedFor, func(ref resourceapi.ResourceClaimConsumerReference) bool {
			return ref.UID == pod.UID
		})
		dealloc := ours && len(cur.Status.ReservedFor) == 0
		if dealloc {
			cur.Status.Allocation = nil
		}
		if cur, err = claims.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if dealloc && cur.Status.Allocation == nil && slices.Contains(cur.Finalizers, resourceapi.Finalizer) {
			cur = cur.DeepCopy()
			cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == resourceapi.Finalizer })
			_, err = claims.Update(ctx, cur, metav1.UpdateOptions{})
		}
		return err
	})
}
