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

package volumebinding

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Reserve implements framework.ReservePlugin: it records the volumes
// chosen on nodeName for Bind and holds the chosen volumes.
func (pl *VolumeBinding) Reserve(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	if !hasClaims(pod) {
		return nil
	}
	s, err := stateOf(state, pod)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.mu.Lock()
	vols := s.byNode[nodeName]
	s.mu.Unlock()
	if vols == nil {
		return nil
	}
	out := &podVolumes{provision: vols.provision}
	pl.mu.Lock()
	for _, b := range vols.static {
		pv, _, err := volumehelpers.GetBindVolumeToClaim(b.pv, b.pvc)
		if err != nil {
			pl.mu.Unlock()
			pl.release(out)
			return framework.AsStatus(fmt.Errorf("binding persistentvolume %q to claim %s: %w", b.pv.Name, klog.KObj(b.pvc), err))
		}
		base := b.pv.ResourceVersion
		if a, ok := pl.assumed[b.pv.Name]; ok && a.pv == b.pv {
			// Already assumed (for this claim): keep the informer's version.
			base = a.baseRV
		}
		pl.assumed[pv.Name] = assumedVolume{pv: pv, baseRV: base}
		out.static = append(out.static, binding{pv: pv, pvc: b.pvc})
	}
	pl.mu.Unlock()
	r := reservedOf(state)
	r.mu.Lock()
	r.byPod[pod.UID] = out
	r.mu.Unlock()
	return nil
}

// reservedOf returns the cycle's reservations, creating them.
func reservedOf(state *framework.CycleState) *reserved {
	if d, ok := state.Read(reservedKey); ok {
		if r, ok := d.(*reserved); ok {
			return r
		}
	}
	r := &reserved{byPod: map[types.UID]*podVolumes{}}
	state.Write(reservedKey, r)
	return r
}

// release drops the assumptions of vols.
func (pl *VolumeBinding) release(vols *podVolumes) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, b := range vols.static {
		if a, ok := pl.assumed[b.pv.Name]; ok && a.pv == b.pv {
			delete(pl.assumed, b.pv.Name)
		}
	}
}

// take removes and returns pod's reservation, if any.
func take(state *framework.CycleState, pod *v1.Pod, remove bool) *podVolumes {
	d, ok := state.Read(reservedKey)
	if !ok {
		return nil
	}
	r, ok := d.(*reserved)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	vols := r.byPod[pod.UID]
	if remove {
		delete(r.byPod, pod.UID)
	}
	return vols
}

// Unreserve implements framework.ReservePlugin.
func (pl *VolumeBinding) Unreserve(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ string) {
	if vols := take(state, pod, true); vols != nil {
		pl.release(vols)
	}
}

// Bind implements framework.BindPlugin: it binds the volumes reserved for
// pod and waits until its claims are bound, then returns Skip for the next
// Bind plugin to bind the pod.
func (pl *VolumeBinding) Bind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	vols := take(state, pod, false)
	if vols == nil || (len(vols.static) == 0 && len(vols.provision) == 0) {
		return framework.NewStatus(framework.Skip)
	}
	logger := klog.FromContext(ctx)
	client := pl.handle.ClientSet()
	if client == nil {
		return framework.AsStatus(fmt.Errorf("binding volumes of pod %s: no clientset", klog.KObj(pod)))
	}
	for _, b := range vols.static {
		// From the informer, as kube-scheduler does: a stale copy fails the
		// update with a conflict, and the bind is tried again.
		cur, err := pl.pvs.Get(b.pv.Name)
		if err != nil {
			return framework.AsStatus(fmt.Errorf("getting persistentvolume %q for pod %s: %w", b.pv.Name, klog.KObj(pod), err))
		}
		if cur.Spec.ClaimRef != nil && !volumehelpers.IsVolumeBoundToClaim(cur, b.pvc) {
			return framework.AsStatus(fmt.Errorf("persistentvolume %q chosen for claim %s was bound to claim %s/%s meanwhile",
				b.pv.Name, klog.KObj(b.pvc), cur.Spec.ClaimRef.Namespace, cur.Spec.ClaimRef.Name))
		}
		pv, dirty, err := volumehelpers.GetBindVolumeToClaim(cur, b.pvc)
		if err != nil {
			return framework.AsStatus(fmt.Errorf("binding persistentvolume %q to claim %s: %w", b.pv.Name, klog.KObj(b.pvc), err))
		}
		if !dirty {
			continue
		}
		if _, err := client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return framework.AsStatus(fmt.Errorf("binding persistentvolume %q to claim %s: %w", b.pv.Name, klog.KObj(b.pvc), err))
		}
		logger.V(2).Info("Bound volume to claim; waiting for the claim", "pod", klog.KObj(pod), "pv", b.pv.Name, "pvc", klog.KObj(b.pvc))
	}
	for _, claim := range vols.provision {
		cur, err := pl.pvcs.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
		if err != nil {
			return framework.AsStatus(fmt.Errorf("getting persistentvolumeclaim %s for pod %s: %w", klog.KObj(claim), klog.KObj(pod), err))
		}
		if cur.Annotations[volumehelpers.AnnSelectedNode] == nodeName {
			continue
		}
		cur = cur.DeepCopy()
		metav1.SetMetaDataAnnotation(&cur.ObjectMeta, volumehelpers.AnnSelectedNode, nodeName)
		if _, err := client.CoreV1().PersistentVolumeClaims(cur.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return framework.AsStatus(fmt.Errorf("selecting node %q for claim %s: %w", nodeName, klog.KObj(claim), err))
		}
		logger.V(2).Info("Selected node for claim to provision; waiting for the claim", "pod", klog.KObj(pod), "pvc", klog.KObj(claim), "node", nodeName)
	}
	err := wait.PollUntilContextTimeout(ctx, bindPollInterval, bindTimeout, true, func(context.Context) (bool, error) {
		return pl.claimsBound(vols, nodeName)
	})
	if err != nil {
		return framework.AsStatus(fmt.Errorf("binding volumes of pod %s on node %q: %w", klog.KObj(pod), nodeName, err))
	}
	logger.V(2).Info("All claims of pod bound", "pod", klog.KObj(pod))
	// The informer shows the volumes bound: no need to hold them any more.
	pl.release(vols)
	return framework.NewStatus(framework.Skip)
}

// claimsBound reports whether every claim of vols is fully bound, as the
// informers show it; an error when a binding was undone by someone else.
func (pl *VolumeBinding) claimsBound(vols *podVolumes, nodeName string) (bool, error) {
	for _, b := range vols.static {
		pv, err := pl.pvs.Get(b.pv.Name)
		if err != nil {
			return false, fmt.Errorf("checking persistentvolume %q: %w", b.pv.Name, err)
		}
		if pv.Spec.ClaimRef == nil {
			// The informer may not have seen our update yet.
			return false, nil
		}
		if pv.Spec.ClaimRef.UID != b.pvc.UID {
			return false, fmt.Errorf("persistentvolume %q was bound to another claim than %s", pv.Name, klog.KObj(b.pvc))
		}
		pvc, err := pl.pvcs.PersistentVolumeClaims(b.pvc.Namespace).Get(b.pvc.Name)
		if err != nil {
			return false, fmt.Errorf("checking persistentvolumeclaim %s: %w", klog.KObj(b.pvc), err)
		}
		if !fullyBound(pvc) {
			return false, nil
		}
	}
	for _, claim := range vols.provision {
		pvc, err := pl.pvcs.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
		if err != nil {
			return false, fmt.Errorf("checking persistentvolumeclaim %s: %w", klog.KObj(claim), err)
		}
		selected, ok := pvc.Annotations[volumehelpers.AnnSelectedNode]
		if !ok {
			if fullyBound(pvc) {
				continue
			}
			// Our update may not have reached the informer yet.
			return false, nil
		}
		if selected != nodeName {
			return false, fmt.Errorf("provisioning failed for PVC %q", pvc.Name)
		}
		if !fullyBound(pvc) {
			return false, nil
		}
	}
	return true, nil
}
