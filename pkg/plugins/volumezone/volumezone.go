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

package volumezone

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/volumeutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "VolumeZone"

// ErrReasonConflict is the rejection reason of a node outside a volume's
// zone or region, worded as kube-scheduler words it.
const ErrReasonConflict = "node(s) had no available volume zone"

// zoneDelimiter separates the zones of a multi-zone volume's label.
const zoneDelimiter = "__"

const stateKey framework.StateKey = Name + "/pod"

// topologyLabels are the volume labels checked, in kube-scheduler's order.
var topologyLabels = []string{
	v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion,
	v1.LabelTopologyZone,
	v1.LabelTopologyRegion,
}

// gaLabel returns the GA form of a deprecated topology label.
func gaLabel(key string) string {
	switch key {
	case v1.LabelFailureDomainBetaZone:
		return v1.LabelTopologyZone
	case v1.LabelFailureDomainBetaRegion:
		return v1.LabelTopologyRegion
	}
	return key
}

// VolumeZone is the plugin.
type VolumeZone struct {
	pvs     corelisters.PersistentVolumeLister
	pvcs    corelisters.PersistentVolumeClaimLister
	classes storagelisters.StorageClassLister
}

var (
	_ framework.PodPreFilterPlugin     = &VolumeZone{}
	_ framework.PodPreFilterExtensions = &VolumeZone{}
	_ framework.FilterPlugin           = &VolumeZone{}
	_ framework.EnqueueExtensions      = &VolumeZone{}
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
	return &VolumeZone{
		pvs:     f.Core().V1().PersistentVolumes().Lister(),
		pvcs:    f.Core().V1().PersistentVolumeClaims().Lister(),
		classes: f.Storage().V1().StorageClasses().Lister(),
	}, nil
}

// Name implements framework.Plugin.
func (*VolumeZone) Name() string { return Name }

// topology is one zone or region label of a volume.
type topology struct {
	pv     string
	key    string
	values sets.Set[string]
}

// topologiesOf returns pv's zone and region labels; a malformed value
// (an empty zone in the list) is ignored, as kube-scheduler ignores it.
func topologiesOf(logger klog.Logger, pv *v1.PersistentVolume) []topology {
	var out []topology
	for _, key := range topologyLabels {
		value, ok := pv.Labels[key]
		if !ok {
			continue
		}
		values := sets.New[string]()
		valid := true
		for _, z := range strings.Split(value, zoneDelimiter) {
			z = strings.TrimSpace(z)
			if z == "" {
				valid = false
				break
			}
			values.Insert(z)
		}
		if !valid {
			logger.V(5).Info("Ignoring a malformed topology label of a volume", "pv", pv.Name, "label", key, "value", value)
			continue
		}
		out = append(out, topology{pv: pv.Name, key: key, values: values})
	}
	return out
}

// podState is the topologies of one pod's bound volumes.
type podState struct {
	uid        types.UID
	topologies []topology
}

// Clone implements framework.StateData.
func (s *podState) Clone() framework.StateData { return s }

// notFound turns a lister error into a status: unresolvable when the
// object is missing, an error otherwise.
func notFound(err error, what string) *framework.Status {
	if apierrors.IsNotFound(err) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	return framework.AsStatus(fmt.Errorf("getting %s: %w", what, err))
}

// PreFilterPod implements framework.PodPreFilterPlugin.
func (pl *VolumeZone) PreFilterPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	logger := klog.FromContext(ctx)
	var tops []topology
	for i := range pod.Spec.Volumes {
		src := pod.Spec.Volumes[i].PersistentVolumeClaim
		if src == nil {
			continue
		}
		if src.ClaimName == "" {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, "PersistentVolumeClaim had no name")
		}
		pvc, err := pl.pvcs.PersistentVolumeClaims(pod.Namespace).Get(src.ClaimName)
		if err != nil {
			return notFound(err, fmt.Sprintf("persistentvolumeclaim %s/%s", pod.Namespace, src.ClaimName))
		}
		if pvc.Spec.VolumeName == "" {
			className := volumehelpers.GetPersistentVolumeClaimClass(pvc)
			if className == "" {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, "PersistentVolumeClaim had no pv name and storageClass name")
			}
			class, err := pl.classes.Get(className)
			if err != nil {
				return notFound(err, fmt.Sprintf("storageclass %s", className))
			}
			if class.VolumeBindingMode == nil {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("VolumeBindingMode not set for StorageClass %q", className))
			}
			if *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
				continue
			}
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, "PersistentVolume had no name")
		}
		pv, err := pl.pvs.Get(pvc.Spec.VolumeName)
		if err != nil {
			return notFound(err, fmt.Sprintf("persistentvolume %s", pvc.Spec.VolumeName))
		}
		tops = append(tops, topologiesOf(logger, pv)...)
	}
	if len(tops) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, &podState{uid: pod.UID, topologies: tops})
	return nil
}

// Filter implements framework.FilterPlugin.
func (pl *VolumeZone) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
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
	node := nodeInfo.Node
	constrained := false
	for _, key := range topologyLabels {
		if _, ok := node.Labels[key]; ok {
			constrained = true
			break
		}
	}
	if !constrained {
		return nil
	}
	for _, t := range s.topologies {
		v, ok := node.Labels[t.key]
		if !ok {
			v, ok = node.Labels[gaLabel(t.key)]
		}
		if !ok || !t.values.Has(v) {
			if v := klog.FromContext(ctx).V(5); v.Enabled() { // no arguments built unless logged
				v.Info("Node outside a volume's topology", "pod", klog.KObj(pod), "node", node.Name, "pv", t.pv, "label", t.key)
			}
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonConflict)
		}
	}
	return nil
}

// EventsToRegister implements framework.EnqueueExtensions.
func (*VolumeZone) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.StorageClass, ActionType: framework.Add}, QueueingHintFn: classAddedHint},
		{Event: framework.EventNodeAdd},
		{Event: framework.EventNodeLabelChange},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaim, ActionType: framework.Add | framework.UpdateGeneric}, QueueingHintFn: volumeutil.ClaimHint},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolume, ActionType: framework.Add | framework.UpdateGeneric}, QueueingHintFn: volumeHint},
	}
}

// classAddedHint: Queue for a WaitForFirstConsumer class.
func classAddedHint(_ klog.Logger, _ *framework.QueuedJob, _, newObj any) (framework.QueueingHint, error) {
	c, ok := newObj.(*storagev1.StorageClass)
	if !ok || c == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want a *storagev1.StorageClass, got %T", newObj)
	}
	if c.VolumeBindingMode != nil && *c.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// volumeHint: Queue for a new volume, or one whose zone labels changed.
func volumeHint(logger klog.Logger, _ *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
	cur, ok := newObj.(*v1.PersistentVolume)
	if !ok || cur == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want a *v1.PersistentVolume, got %T", newObj)
	}
	old, ok := oldObj.(*v1.PersistentVolume)
	if !ok || old == nil {
		return framework.Queue, nil
	}
	if !reflect.DeepEqual(topologiesOf(logger, old), topologiesOf(logger, cur)) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// AddPod implements framework.PodPreFilterExtensions. PreFilterPod reads
// only the zones of the pod's own volumes, which no pod on a node
// changes: preemption's victim search need not run it again.
func (*VolumeZone) AddPod(context.Context, *framework.CycleState, *v1.Pod, *framework.TaskInfo, *framework.NodeInfo) *framework.Status {
	return nil
}

// RemovePod implements framework.PodPreFilterExtensions; see AddPod.
func (*VolumeZone) RemovePod(context.Context, *framework.CycleState, *v1.Pod, *framework.TaskInfo, *framework.NodeInfo) *framework.Status {
	return nil
}

// JudgesBySpec implements framework.SpecJudge: the plugin reads of a pod
// its namespace, labels and spec only.
func (*VolumeZone) JudgesBySpec(*v1.Pod) bool { return true }
