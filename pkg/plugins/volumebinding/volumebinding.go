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
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/volumeutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "VolumeBinding"

// Rejection reasons, worded as kube-scheduler words them.
const (
	// ErrReasonBindConflict: an unbound claim finds no volume and cannot be
	// provisioned on the node.
	ErrReasonBindConflict = "node(s) didn't find available persistent volumes to bind"
	// ErrReasonNodeConflict: a bound volume's nodeAffinity excludes the node.
	ErrReasonNodeConflict = "node(s) didn't match PersistentVolume's node affinity"
	// ErrReasonNotEnoughSpace: no CSIStorageCapacity reachable from the node
	// offers the size of a claim to provision.
	ErrReasonNotEnoughSpace = "node(s) did not have enough free storage"
	// ErrReasonPVNotExist: a claim is bound to a volume that does not exist.
	ErrReasonPVNotExist = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	// ErrReasonUnboundImmediate: a claim that should already be bound is not.
	ErrReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
)

// Timing of Bind's wait for the claims to become bound.
const (
	bindPollInterval = time.Second
	bindTimeout      = 10 * time.Minute
)

const (
	// podStateKey holds the current pod's claims (PreFilterPod) and what
	// its Filter found per node.
	podStateKey framework.StateKey = Name + "/pod"
	// reservedKey holds the volumes reserved for each placed pod of the
	// cycle, for Bind and Unreserve.
	reservedKey framework.StateKey = Name + "/reserved"
)

// VolumeBinding is the plugin.
type VolumeBinding struct {
	handle     framework.Handle
	pvcs       corelisters.PersistentVolumeClaimLister
	pvs        corelisters.PersistentVolumeLister
	classes    storagelisters.StorageClassLister
	drivers    storagelisters.CSIDriverLister
	capacities storagelisters.CSIStorageCapacityLister

	mu sync.Mutex // guards assumed
	// assumed maps the name of a volume reserved for a claim to the volume
	// as it will be once bound (claimRef set), until the informer shows
	// another version of it or the reservation is undone.
	assumed map[string]assumedVolume
}

// assumedVolume is a volume reserved for a claim: pv as it will be once
// bound, and the resource version of the informer's copy it was made from.
type assumedVolume struct {
	pv     *v1.PersistentVolume
	baseRV string
}

var (
	_ framework.PodPreFilterPlugin = &VolumeBinding{}
	_ framework.FilterPlugin       = &VolumeBinding{}
	_ framework.ReservePlugin      = &VolumeBinding{}
	_ framework.BindPlugin         = &VolumeBinding{}
	_ framework.EnqueueExtensions  = &VolumeBinding{}
)

// kubeDefaults are kube-scheduler's VolumeBindingArgs this plugin behaves
// as if given: it waits bindTimeout (600 s) for claims to be bound.
var kubeDefaults = pluginutil.KubeDefaults{"bindTimeoutSeconds": {"600"}}

// New is the plugin's framework.PluginFactory. It takes no args of its
// own (kube-scheduler's are accepted at their defaults, kubeDefaults) and
// needs a Handle with a clientset and an informer factory.
func New(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeKubeDefaultArgs(Name, args, kubeDefaults); err != nil {
		return nil, err
	}
	f, err := pluginutil.InformerFactory(Name, h)
	if err != nil {
		return nil, err
	}
	return &VolumeBinding{
		handle:     h,
		pvcs:       f.Core().V1().PersistentVolumeClaims().Lister(),
		pvs:        f.Core().V1().PersistentVolumes().Lister(),
		classes:    f.Storage().V1().StorageClasses().Lister(),
		drivers:    f.Storage().V1().CSIDrivers().Lister(),
		capacities: f.Storage().V1().CSIStorageCapacities().Lister(),
		assumed:    map[string]assumedVolume{},
	}, nil
}

// Name implements framework.Plugin.
func (*VolumeBinding) Name() string { return Name }

// claimName returns the name of the claim vol uses and whether it is a
// generic ephemeral volume; "" when vol uses no claim.
func claimName(pod *v1.Pod, vol *v1.Volume) (name string, isEphemeral bool) {
	name, isEphemeral, _ = volumeutil.ClaimName(pod, vol)
	return name, isEphemeral
}

// hasClaims reports whether pod has a volume backed by a claim.
func hasClaims(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if n, _ := claimName(pod, &pod.Spec.Volumes[i]); n != "" {
			return true
		}
	}
	return false
}

// fullyBound reports whether the PersistentVolume controller completed
// pvc's binding.
func fullyBound(pvc *v1.PersistentVolumeClaim) bool {
	return pvc.Spec.VolumeName != "" && metav1.HasAnnotation(pvc.ObjectMeta, volumehelpers.AnnBindCompleted)
}

// podState is what PreFilterPod found for one pod, and what its Filter
// calls found per node.
type podState struct {
	uid types.UID
	// bound are the claims already bound; delayed the unbound claims of
	// WaitForFirstConsumer classes.
	bound, delayed []*v1.PersistentVolumeClaim
	// candidates are the volumes of each class of a delayed claim.
	candidates map[string][]*v1.PersistentVolume

	mu sync.Mutex // guards byNode
	// byNode is what binding the pod on a node needs; absent for nodes
	// where nothing is to be bound.
	byNode map[string]*podVolumes
}

// Clone implements framework.StateData; the state is per pod and shared.
func (s *podState) Clone() framework.StateData { return s }

// binding is a volume chosen for a claim: pv is the volume as it will be
// once bound to pvc.
type binding struct {
	pv  *v1.PersistentVolume
	pvc *v1.PersistentVolumeClaim
}

// podVolumes is what must be done on one node before the pod is bound.
type podVolumes struct {
	static    []binding
	provision []*v1.PersistentVolumeClaim
}

// reserved holds the podVolumes of each placed pod of the cycle.
type reserved struct {
	mu    sync.Mutex
	byPod map[types.UID]*podVolumes
}

// Clone implements framework.StateData; one map serves the cycle.
func (r *reserved) Clone() framework.StateData { return r }

// PreFilterPod implements framework.PodPreFilterPlugin.
func (pl *VolumeBinding) PreFilterPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	if !hasClaims(pod) {
		return framework.NewStatus(framework.Skip)
	}
	// All claims are checked for existence first, then classified, so that
	// a missing claim is reported whatever comes before it.
	var claims []*v1.PersistentVolumeClaim
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		name, isEphemeral := claimName(pod, vol)
		if name == "" {
			continue
		}
		pvc, err := pl.pvcs.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			if isEphemeral && apierrors.IsNotFound(err) {
				err = fmt.Errorf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name)
			}
			if apierrors.IsNotFound(err) || isEphemeral {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
			}
			return framework.AsStatus(fmt.Errorf("getting persistentvolumeclaim %s/%s of pod %s: %w", pod.Namespace, name, klog.KObj(pod), err))
		}
		if pvc.Status.Phase == v1.ClaimLost {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", pvc.Name, pvc.Spec.VolumeName))
		}
		if pvc.DeletionTimestamp != nil {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", pvc.Name))
		}
		if isEphemeral {
			if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
			}
		}
		claims = append(claims, pvc)
	}
	s := &podState{uid: pod.UID, candidates: map[string][]*v1.PersistentVolume{}, byNode: map[string]*podVolumes{}}
	immediate := false
	for _, pvc := range claims {
		if fullyBound(pvc) {
			s.bound = append(s.bound, pvc)
			continue
		}
		delay, err := volumehelpers.IsDelayBindingMode(pvc, pl.classes)
		if err != nil {
			return framework.AsStatus(fmt.Errorf("persistentvolumeclaim %s/%s of pod %s: %w", pvc.Namespace, pvc.Name, klog.KObj(pod), err))
		}
		if !delay || pvc.Spec.VolumeName != "" {
			immediate = true
			continue
		}
		s.delayed = append(s.delayed, pvc)
	}
	if immediate {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnboundImmediate)
	}
	if len(s.delayed) > 0 {
		all, err := pl.pvs.List(labels.Everything())
		if err != nil {
			return framework.AsStatus(fmt.Errorf("listing persistentvolumes for pod %s: %w", klog.KObj(pod), err))
		}
		all = pl.withAssumed(all)
		for _, pvc := range s.delayed {
			class := volumehelpers.GetPersistentVolumeClaimClass(pvc)
			if _, ok := s.candidates[class]; ok {
				continue
			}
			list := []*v1.PersistentVolume{}
			for _, pv := range all {
				if volumehelpers.GetPersistentVolumeClass(pv) == class {
					list = append(list, pv)
				}
			}
			s.candidates[class] = list
		}
	}
	state.Write(podStateKey, s)
	return nil
}

// withAssumed returns all with the assumed volumes in their assumed form.
// It forgets an assumption once the informer holds another version of the
// volume: our update, or someone else's change, which wins.
func (pl *VolumeBinding) withAssumed(all []*v1.PersistentVolume) []*v1.PersistentVolume {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if len(pl.assumed) == 0 {
		return all
	}
	out := make([]*v1.PersistentVolume, len(all))
	for i, pv := range all {
		out[i] = pv
		a, ok := pl.assumed[pv.Name]
		if !ok {
			continue
		}
		if pv.ResourceVersion != a.baseRV {
			delete(pl.assumed, pv.Name)
			continue
		}
		out[i] = a.pv
	}
	return out
}

// stateOf returns pod's podState from state.
func stateOf(state *framework.CycleState, pod *v1.Pod) (*podState, error) {
	d, ok := state.Read(podStateKey)
	if !ok {
		return nil, fmt.Errorf("%s: no pre-filter state for pod %s", Name, klog.KObj(pod))
	}
	s, ok := d.(*podState)
	if !ok || s.uid != pod.UID {
		return nil, fmt.Errorf("%s: the pre-filter state is not pod %s's", Name, klog.KObj(pod))
	}
	return s, nil
}

// Filter implements framework.FilterPlugin.
func (pl *VolumeBinding) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	if nodeInfo.Node == nil || nodeInfo.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	if !hasClaims(pod) {
		return nil
	}
	s, err := stateOf(state, pod)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := nodeInfo.Node
	vols, reasons, err := pl.findPodVolumes(klog.FromContext(ctx), pod, s, node)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
	}
	if vols != nil {
		s.mu.Lock()
		s.byNode[node.Name] = vols
		s.mu.Unlock()
	}
	return nil
}

// findPodVolumes checks pod's claims against node. It returns the
// rejection reasons, in kube-scheduler's order, or what binding needs on
// node (nil when nothing is to be bound).
func (pl *VolumeBinding) findPodVolumes(logger klog.Logger, pod *v1.Pod, s *podState, node *v1.Node) (*podVolumes, []string, error) {
	boundOK, pvsExist := true, true
	for _, pvc := range s.bound {
		pv, err := pl.pvs.Get(pvc.Spec.VolumeName)
		if apierrors.IsNotFound(err) {
			pvsExist = false
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("getting persistentvolume %q of claim %s: %w", pvc.Spec.VolumeName, klog.KObj(pvc), err)
		}
		if err := volumehelpers.CheckNodeAffinity(pv, node.Labels); err != nil {
			logger.V(5).Info("Volume's node affinity excludes node", "pod", klog.KObj(pod), "pv", pv.Name, "node", node.Name, "err", err)
			boundOK = false
			break
		}
	}
	unboundOK, enoughSpace := true, true
	var vols *podVolumes
	if len(s.delayed) > 0 {
		vols = &podVolumes{}
		var toMatch []*v1.PersistentVolumeClaim
		for _, pvc := range s.delayed {
			if selected, ok := pvc.Annotations[volumehelpers.AnnSelectedNode]; ok {
				if selected != node.Name {
					unboundOK = false
					break
				}
				vols.provision = append(vols.provision, pvc)
				continue
			}
			toMatch = append(toMatch, pvc)
		}
		if unboundOK && len(toMatch) > 0 {
			var unmatched []*v1.PersistentVolumeClaim
			var err error
			vols.static, unmatched, err = matchVolumes(toMatch, s.candidates, node)
			if err != nil {
				return nil, nil, err
			}
			// A claim without a volume may still be provisioned.
			vols.provision = append(vols.provision, unmatched...)
		}
		if unboundOK && len(vols.provision) > 0 {
			var err error
			unboundOK, enoughSpace, err = pl.canProvision(logger, vols.provision, node)
			if err != nil {
				return nil, nil, err
			}
		}
	}
	var reasons []string
	if !boundOK {
		reasons = append(reasons, ErrReasonNodeConflict)
	}
	if !unboundOK {
		reasons = append(reasons, ErrReasonBindConflict)
	}
	if !enoughSpace {
		reasons = append(reasons, ErrReasonNotEnoughSpace)
	}
	if !pvsExist {
		reasons = append(reasons, ErrReasonPVNotExist)
	}
	return vols, reasons, nil
}

// matchVolumes picks a distinct volume for each claim, smaller claims
// first, among candidates (by class) on node. It returns the bindings and
// the claims left without a volume.
func matchVolumes(claims []*v1.PersistentVolumeClaim, candidates map[string][]*v1.PersistentVolume, node *v1.Node) ([]binding, []*v1.PersistentVolumeClaim, error) {
	sorted := slices.Clone(claims)
	slices.SortStableFunc(sorted, func(a, b *v1.PersistentVolumeClaim) int {
		qa, qb := a.Spec.Resources.Requests[v1.ResourceStorage], b.Spec.Resources.Requests[v1.ResourceStorage]
		return qa.Cmp(qb)
	})
	chosen := map[string]*v1.PersistentVolume{}
	var bindings []binding
	var unmatched []*v1.PersistentVolumeClaim
	for _, pvc := range sorted {
		pv, err := volumehelpers.FindMatchingVolume(pvc, candidates[volumehelpers.GetPersistentVolumeClaimClass(pvc)], node, chosen, true, true)
		if err != nil {
			return nil, nil, fmt.Errorf("matching a volume to claim %s: %w", klog.KObj(pvc), err)
		}
		if pv == nil {
			unmatched = append(unmatched, pvc)
			continue
		}
		chosen[pv.Name] = pv
		bindings = append(bindings, binding{pv: pv, pvc: pvc})
	}
	return bindings, unmatched, nil
}

// JudgesBySpec implements framework.SpecJudge: a pod's generic ephemeral
// volumes have claims of its own.
func (*VolumeBinding) JudgesBySpec(pod *v1.Pod) bool { return !pluginutil.HasEphemeralVolumes(pod) }
