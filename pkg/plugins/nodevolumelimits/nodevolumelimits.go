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

package nodevolumelimits

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
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
const Name = "NodeVolumeLimits"

// ErrReasonMaxVolumeCountExceeded is the rejection reason of a node where a
// driver's limit would be exceeded, worded as kube-scheduler words it.
const ErrReasonMaxVolumeCountExceeded = "node(s) exceed max volume count"

const stateKey framework.StateKey = Name + "/pod"

// NodeVolumeLimits is the plugin.
type NodeVolumeLimits struct {
	pvs      corelisters.PersistentVolumeLister
	pvcs     corelisters.PersistentVolumeClaimLister
	classes  storagelisters.StorageClassLister
	csiNodes storagelisters.CSINodeLister
	// handlePrefix makes the handles given to claims not bound yet unique
	// to this scheduler.
	handlePrefix string
}

var (
	_ framework.PodPreFilterPlugin     = &NodeVolumeLimits{}
	_ framework.PodPreFilterExtensions = &NodeVolumeLimits{}
	_ framework.FilterPlugin           = &NodeVolumeLimits{}
	_ framework.EnqueueExtensions      = &NodeVolumeLimits{}
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
	return &NodeVolumeLimits{
		pvs:          f.Core().V1().PersistentVolumes().Lister(),
		pvcs:         f.Core().V1().PersistentVolumeClaims().Lister(),
		classes:      f.Storage().V1().StorageClasses().Lister(),
		csiNodes:     f.Storage().V1().CSINodes().Lister(),
		handlePrefix: rand.String(32),
	}, nil
}

// Name implements framework.Plugin.
func (*NodeVolumeLimits) Name() string { return Name }

// errNoName is kube-scheduler's error for a claim volume without a name.
var errNoName = errors.New("PersistentVolumeClaim had no name")

// volumesOf adds pod's CSI volumes to out, unique name → driver. For the
// pod being scheduled (isNew), a claim that cannot be read is an error;
// for a pod already on a node it is skipped.
func (pl *NodeVolumeLimits) volumesOf(logger klog.Logger, pod *v1.Pod, isNew bool, out map[string]string) error {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		name, isEphemeral, ok := volumeutil.ClaimName(pod, vol)
		if !ok {
			continue
		}
		if name == "" {
			return errNoName
		}
		pvc, err := pl.pvcs.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			if isNew {
				return fmt.Errorf("looking up PVC %s/%s: %w", pod.Namespace, name, err)
			}
			logger.V(5).Info("Claim of a pod on the node not found; not counted", "pod", klog.KObj(pod), "pvc", klog.KRef(pod.Namespace, name))
			continue
		}
		if isEphemeral {
			if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
				return err
			}
		}
		driver, handle := pl.driverAndHandle(pvc)
		if driver == "" || handle == "" {
			continue
		}
		out[driver+"/"+handle] = driver
	}
	return nil
}

// driverAndHandle identifies pvc's volume: the bound volume's CSI driver
// and handle, or for a claim whose volume is not known, its class's
// provisioner and a handle unique to the claim; "" when neither applies.
func (pl *NodeVolumeLimits) driverAndHandle(pvc *v1.PersistentVolumeClaim) (string, string) {
	if pvc.Spec.VolumeName != "" {
		if pv, err := pl.pvs.Get(pvc.Spec.VolumeName); err == nil {
			if pv.Spec.CSI == nil {
				return "", ""
			}
			return pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
		}
	}
	className := volumehelpers.GetPersistentVolumeClaimClass(pvc)
	if className == "" {
		return "", ""
	}
	class, err := pl.classes.Get(className)
	if err != nil {
		return "", ""
	}
	return class.Provisioner, fmt.Sprintf("%s-%s/%s", pl.handlePrefix, pvc.Namespace, pvc.Name)
}

// podState is the pod's new volumes, or the error finding them.
type podState struct {
	uid     types.UID
	volumes map[string]string
	err     error
}

// Clone implements framework.StateData.
func (s *podState) Clone() framework.StateData { return s }

// PreFilterPod implements framework.PodPreFilterPlugin: it finds the pod's
// CSI volumes once, for every node.
func (pl *NodeVolumeLimits) PreFilterPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	has := false
	for i := range pod.Spec.Volumes {
		if _, _, ok := volumeutil.ClaimName(pod, &pod.Spec.Volumes[i]); ok {
			has = true
			break
		}
	}
	if !has {
		return framework.NewStatus(framework.Skip)
	}
	s := &podState{uid: pod.UID, volumes: map[string]string{}}
	s.err = pl.volumesOf(klog.FromContext(ctx), pod, true, s.volumes)
	state.Write(stateKey, s)
	return nil
}

// Filter implements framework.FilterPlugin.
func (pl *NodeVolumeLimits) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	if nodeInfo.Node == nil || nodeInfo.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	d, ok := state.Read(stateKey)
	if !ok {
		return nil
	}
	s, ok := d.(*podState)
	if !ok || s.uid != pod.UID {
		return nil
	}
	if s.err != nil {
		if apierrors.IsNotFound(s.err) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, s.err.Error())
		}
		return framework.AsStatus(fmt.Errorf("volumes of pod %s: %w", klog.KObj(pod), s.err))
	}
	if len(s.volumes) == 0 {
		return nil
	}
	logger := klog.FromContext(ctx)
	node := nodeInfo.Node
	csiNode, err := pl.csiNodes.Get(node.Name)
	if err != nil {
		logger.V(5).Info("No CSINode for the node", "node", node.Name, "err", err)
		return nil
	}
	limits := limitsOf(csiNode)
	if len(limits) == 0 {
		return nil
	}
	attached := map[string]string{}
	for _, t := range nodeInfo.Pods {
		if !t.Counted || len(t.Volumes()) == 0 {
			// No volume: nothing attached (and no pod to make of a
			// bound pod's record).
			continue
		}
		if err := pl.volumesOf(logger, t.PodObject(), false, attached); err != nil {
			return framework.AsStatus(fmt.Errorf("volumes of pod %s on node %s: %w", klog.KObj(t), node.Name, err))
		}
	}
	inUse := map[string]int{}
	for _, driver := range attached {
		inUse[driver]++
	}
	wanted := map[string]int{}
	for id, driver := range s.volumes {
		if _, ok := attached[id]; !ok {
			wanted[driver]++
		}
	}
	for driver, n := range wanted {
		limit, ok := limits[driver]
		if !ok {
			continue
		}
		if int64(inUse[driver]+n) > limit {
			if v := logger.V(5); v.Enabled() { // no arguments built unless logged
				v.Info("Volume limit exceeded", "pod", klog.KObj(pod), "node", node.Name, "driver", driver, "limit", limit, "inUse", inUse[driver], "new", n)
			}
			return framework.NewStatus(framework.Unschedulable, ErrReasonMaxVolumeCountExceeded)
		}
	}
	return nil
}

// limitsOf returns the attach limit of each driver of csiNode that has one.
func limitsOf(csiNode *storagev1.CSINode) map[string]int64 {
	out := map[string]int64{}
	for _, d := range csiNode.Spec.Drivers {
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			out[d.Name] = int64(*d.Allocatable.Count)
		}
	}
	return out
}

// EventsToRegister implements framework.EnqueueExtensions.
func (pl *NodeVolumeLimits) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.CSINode, ActionType: framework.Add}},
		{Event: framework.ClusterEvent{Resource: framework.CSINode, ActionType: framework.UpdateGeneric}, QueueingHintFn: csiNodeUpdatedHint},
		// Without a CSINode, Filter enforces no limit on the node.
		{Event: framework.ClusterEvent{Resource: framework.CSINode, ActionType: framework.Delete}, QueueingHintFn: csiNodeDeletedHint},
		{Event: framework.EventAssignedPodDelete, QueueingHintFn: podDeletedHint},
		// A volume attached to a node counts once, however many pods use
		// it: a pod bound next to the pending pod's volume takes that
		// volume off the pending pod's count.
		{Event: framework.EventAssignedPodAdd, QueueingHintFn: pl.podAddedHint},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add}, QueueingHintFn: volumeutil.ClaimHint},
	}
}

// csiNodeUpdatedHint: Queue when some driver's attach limit was raised or
// lifted. As in Filter, a driver that has no count, or that the CSINode
// does not list, has no limit at all; so a limit that goes away helps,
// and a limit that appears where there was none does not.
func csiNodeUpdatedHint(_ klog.Logger, _ *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
	old, ok1 := oldObj.(*storagev1.CSINode)
	cur, ok2 := newObj.(*storagev1.CSINode)
	if !ok1 || !ok2 || old == nil || cur == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want two *storagev1.CSINode, got %T and %T", oldObj, newObj)
	}
	after := limitsOf(cur)
	for driver, before := range limitsOf(old) {
		limit, limited := after[driver]
		if !limited || limit > before {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// csiNodeDeletedHint: Queue when the deleted CSINode set some limit, since
// Filter enforces none on a node without a CSINode. One that set no limit
// leaves Filter's verdict as it was.
func csiNodeDeletedHint(_ klog.Logger, _ *framework.QueuedJob, oldObj, _ any) (framework.QueueingHint, error) {
	old, ok := oldObj.(*storagev1.CSINode)
	if !ok || old == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the deleted *storagev1.CSINode, got %T", oldObj)
	}
	if len(limitsOf(old)) > 0 {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// podAddedHint: Queue when the pod that appeared on a node uses a volume
// (the same driver and handle, as Filter identifies volumes) that a
// pending pod of the job uses too: once attached there, that volume no
// longer counts against the node's limit for the pending pod. Volumes are
// resolved through the listers, as Filter resolves them; a pending pod
// whose volumes cannot be resolved is retried.
func (pl *NodeVolumeLimits) podAddedHint(logger klog.Logger, job *framework.QueuedJob, _, newObj any) (framework.QueueingHint, error) {
	added, err := pluginutil.PodOf(newObj, "added")
	if err != nil {
		return framework.Queue, err
	}
	if !framework.PodCountedOnNode(added) {
		return framework.QueueSkip, nil
	}
	hasClaim := false
	for i := range added.Spec.Volumes {
		if _, _, ok := volumeutil.ClaimName(added, &added.Spec.Volumes[i]); ok {
			hasClaim = true
			break
		}
	}
	if !hasClaim {
		return framework.QueueSkip, nil
	}
	attached := map[string]string{}
	if err := pl.volumesOf(logger, added, false, attached); err != nil {
		return framework.Queue, fmt.Errorf("volumes of the added pod %s: %w", klog.KObj(added), err)
	}
	if len(attached) == 0 {
		return framework.QueueSkip, nil
	}
	for _, pod := range job.Pods {
		wanted := map[string]string{}
		if err := pl.volumesOf(logger, pod, false, wanted); err != nil {
			return framework.Queue, fmt.Errorf("volumes of pending pod %s: %w", klog.KObj(pod), err)
		}
		for id := range wanted {
			if _, ok := attached[id]; ok {
				logger.V(5).Info("A pod using a volume of a pending pod was bound", "pod", klog.KObj(pod), "added", klog.KObj(added), "volume", id)
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}

// podDeletedHint: Queue when the pod that went away was on a node and had
// claims.
func podDeletedHint(_ klog.Logger, _ *framework.QueuedJob, oldObj, _ any) (framework.QueueingHint, error) {
	gone, err := pluginutil.PodOf(oldObj, "deleted")
	if err != nil {
		return framework.Queue, err
	}
	if gone.Spec.NodeName == "" && gone.Status.NominatedNodeName == "" {
		return framework.QueueSkip, nil
	}
	for i := range gone.Spec.Volumes {
		if _, _, ok := volumeutil.ClaimName(gone, &gone.Spec.Volumes[i]); ok {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// AddPod implements framework.PodPreFilterExtensions. PreFilterPod reads
// only the pod's own volumes, and Filter counts the node's volumes from
// the node itself, so a pod joining a node changes nothing PreFilterPod
// decided: preemption's victim search need not run it again.
func (*NodeVolumeLimits) AddPod(context.Context, *framework.CycleState, *v1.Pod, *framework.TaskInfo, *framework.NodeInfo) *framework.Status {
	return nil
}

// RemovePod implements framework.PodPreFilterExtensions; see AddPod.
func (*NodeVolumeLimits) RemovePod(context.Context, *framework.CycleState, *v1.Pod, *framework.TaskInfo, *framework.NodeInfo) *framework.Status {
	return nil
}

// JudgesBySpec implements framework.SpecJudge: a pod's generic ephemeral
// volumes have claims of its own.
func (*NodeVolumeLimits) JudgesBySpec(pod *v1.Pod) bool { return !pluginutil.HasEphemeralVolumes(pod) }
