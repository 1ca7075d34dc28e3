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

package volumerestrictions

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/volumeutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "VolumeRestrictions"

// Rejection reasons, worded as kube-scheduler words them.
const (
	// ErrReasonDiskConflict: an in-tree disk the pod uses is in use on the
	// node.
	ErrReasonDiskConflict = "node(s) had no available disk"
	// ErrReasonReadWriteOncePodConflict: a ReadWriteOncePod claim of the pod
	// is used by another pod.
	ErrReasonReadWriteOncePodConflict = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)

const stateKey framework.StateKey = Name + "/pod"

// VolumeRestrictions is the plugin.
type VolumeRestrictions struct {
	pvcs corelisters.PersistentVolumeClaimLister
}

var (
	_ framework.PodPreFilterPlugin = &VolumeRestrictions{}
	_ framework.FilterPlugin       = &VolumeRestrictions{}
	_ framework.EnqueueExtensions  = &VolumeRestrictions{}
)

// New is the plugin's framework.PluginFactory. It takes no args and needs
// a Handle with an informer factory.
func New(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeNoArgs(Name, args); err != nil {
		return nil, err
	}
	f, err := pluginutil.InformerFactory(Name, h)
	if err != nil {
		return nil, err
	}
	return &VolumeRestrictions{pvcs: f.Core().V1().PersistentVolumeClaims().Lister()}, nil
}

// Name implements framework.Plugin.
func (*VolumeRestrictions) Name() string { return Name }

// hasInTreeDisk reports whether v is a disk whose use on a node is
// exclusive.
func hasInTreeDisk(v *v1.Volume) bool {
	return v.GCEPersistentDisk != nil || v.AWSElasticBlockStore != nil || v.RBD != nil || v.ISCSI != nil
}

// diskConflict reports whether the in-tree disk v conflicts with one of
// vols, a pod's volumes.
func diskConflict(v *v1.Volume, vols []v1.Volume) bool {
	for i := range vols {
		o := &vols[i]
		switch {
		case v.GCEPersistentDisk != nil && o.GCEPersistentDisk != nil:
			if v.GCEPersistentDisk.PDName == o.GCEPersistentDisk.PDName && !(v.GCEPersistentDisk.ReadOnly && o.GCEPersistentDisk.ReadOnly) {
				return true
			}
		case v.AWSElasticBlockStore != nil && o.AWSElasticBlockStore != nil:
			if v.AWSElasticBlockStore.VolumeID == o.AWSElasticBlockStore.VolumeID {
				return true
			}
		case v.ISCSI != nil && o.ISCSI != nil:
			if v.ISCSI.IQN == o.ISCSI.IQN && !(v.ISCSI.ReadOnly && o.ISCSI.ReadOnly) {
				return true
			}
		case v.RBD != nil && o.RBD != nil:
			a, b := v.RBD, o.RBD
			if a.RBDPool == b.RBDPool && a.RBDImage == b.RBDImage && !(a.ReadOnly && b.ReadOnly) &&
				slices.ContainsFunc(a.CephMonitors, func(m string) bool { return slices.Contains(b.CephMonitors, m) }) {
				return true
			}
		}
	}
	return false
}

// podState is what PreFilterPod found for one pod.
type podState struct {
	uid types.UID
	// rwopInUse reports whether another pod uses one of the pod's
	// ReadWriteOncePod claims.
	rwopInUse bool
}

// Clone implements framework.StateData.
func (s *podState) Clone() framework.StateData { return s }

// PreFilterPod implements framework.PodPreFilterPlugin.
func (pl *VolumeRestrictions) PreFilterPod(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	needsDiskCheck := false
	var rwop sets.Set[string]
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if hasInTreeDisk(v) {
			needsDiskCheck = true
		}
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc, err := pl.pvcs.PersistentVolumeClaims(pod.Namespace).Get(v.PersistentVolumeClaim.ClaimName)
		if apierrors.IsNotFound(err) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
		}
		if err != nil {
			return framework.AsStatus(fmt.Errorf("getting persistentvolumeclaim %s/%s of pod %s: %w", pod.Namespace, v.PersistentVolumeClaim.ClaimName, klog.KObj(pod), err))
		}
		if slices.Contains(pvc.Spec.AccessModes, v1.ReadWriteOncePod) {
			if rwop == nil {
				rwop = sets.New[string]()
			}
			rwop.Insert(pvc.Name)
		}
	}
	s := &podState{uid: pod.UID, rwopInUse: rwop.Len() > 0 && claimsInUse(pod, rwop, nodes)}
	if !needsDiskCheck && !s.rwopInUse {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, s)
	return nil
}

// claimsInUse reports whether a counted pod other than pod, on any of
// nodes, uses a claim of pod's namespace named in claims.
func claimsInUse(pod *v1.Pod, claims sets.Set[string], nodes []*framework.NodeInfo) bool {
	for _, n := range nodes {
		for _, t := range n.Pods {
			if !t.Counted || t.GetNamespace() != pod.Namespace || t.GetUID() == pod.UID {
				continue
			}
			vols := t.Volumes()
			for i := range vols {
				if c := vols[i].PersistentVolumeClaim; c != nil && claims.Has(c.ClaimName) {
					return true
				}
			}
		}
	}
	return false
}

// Filter implements framework.FilterPlugin.
func (pl *VolumeRestrictions) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !hasInTreeDisk(v) {
			continue
		}
		for _, t := range node.Pods {
			if t.Counted && diskConflict(v, t.Volumes()) {
				return framework.NewStatus(framework.Unschedulable, ErrReasonDiskConflict)
			}
		}
	}
	if d, ok := state.Read(stateKey); ok {
		if s, ok := d.(*podState); ok && s.uid == pod.UID && s.rwopInUse {
			return framework.NewStatus(framework.Unschedulable, ErrReasonReadWriteOncePodConflict)
		}
	}
	return nil
}

// EventsToRegister implements framework.EnqueueExtensions.
func (*VolumeRestrictions) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventAssignedPodDelete, QueueingHintFn: podDeletedHint},
		{Event: framework.EventNodeAdd},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add}, QueueingHintFn: volumeutil.ClaimHint},
	}
}

// podDeletedHint: Queue when the pod that went away used an in-tree disk
// conflicting with a pending pod's, or a claim a pending pod uses.
//
// In-tree disks are cluster-wide objects (a GCE PD or an EBS volume is
// named by the cloud, not by a namespace), and Filter counts every pod on
// the node whatever its namespace; so a disk conflict is looked for in
// pods of any namespace. Claims, on the other hand, belong to a
// namespace: only a pod of the pending pod's namespace can release one.
func podDeletedHint(_ klog.Logger, job *framework.QueuedJob, oldObj, _ any) (framework.QueueingHint, error) {
	gone, err := pluginutil.PodOf(oldObj, "deleted")
	if err != nil {
		return framework.Queue, err
	}
	for _, pod := range job.Pods {
		sameNamespace := pod.Namespace == gone.Namespace
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			if hasInTreeDisk(v) && diskConflict(v, gone.Spec.Volumes) {
				return framework.Queue, nil
			}
			if v.PersistentVolumeClaim == nil || !sameNamespace {
				continue
			}
			for j := range gone.Spec.Volumes {
				if c := gone.Spec.Volumes[j].PersistentVolumeClaim; c != nil && c.ClaimName == v.PersistentVolumeClaim.ClaimName {
					return framework.Queue, nil
				}
			}
		}
	}
	return framework.QueueSkip, nil
}

// JudgesBySpec implements framework.SpecJudge: a pod's generic ephemeral
// volumes have claims of its own.
func (*VolumeRestrictions) JudgesBySpec(pod *v1.Pod) bool {
	return !pluginutil.HasEphemeralVolumes(pod)
}
