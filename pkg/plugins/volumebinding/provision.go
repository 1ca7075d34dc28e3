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
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"
)

// canProvision reports whether every claim's class can provision a volume
// reachable from node, and whether storage capacity suffices.
func (pl *VolumeBinding) canProvision(logger klog.Logger, claims []*v1.PersistentVolumeClaim, node *v1.Node) (ok, enoughSpace bool, err error) {
	for _, pvc := range claims {
		className := volumehelpers.GetPersistentVolumeClaimClass(pvc)
		if className == "" {
			return false, false, fmt.Errorf("no class for claim %q", pvc.Namespace+"/"+pvc.Name)
		}
		class, err := pl.classes.Get(className)
		if err != nil {
			return false, false, fmt.Errorf("failed to find storage class %q", className)
		}
		if class.Provisioner == "" || class.Provisioner == volumehelpers.NotSupportedProvisioner {
			return false, true, nil
		}
		if !matchTopology(class.AllowedTopologies, node.Labels) {
			logger.V(5).Info("Class's allowed topologies exclude node", "pvc", klog.KObj(pvc), "node", node.Name)
			return false, true, nil
		}
		enough, err := pl.hasCapacity(pvc, class, node)
		if err != nil {
			return false, false, err
		}
		if !enough {
			return true, false, nil
		}
	}
	return true, true, nil
}

// matchTopology reports whether node labels satisfy a class's
// allowedTopologies: no terms admit every node; otherwise some non-empty
// term must have all its expressions satisfied.
func matchTopology(terms []v1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	set := labels.Set(nodeLabels)
	for _, term := range terms {
		if len(term.MatchLabelExpressions) == 0 {
			continue
		}
		sel := labels.NewSelector()
		valid := true
		for _, e := range term.MatchLabelExpressions {
			if len(e.Values) == 0 {
				valid = false
				break
			}
			r, err := labels.NewRequirement(e.Key, selection.In, e.Values)
			if err != nil {
				valid = false
				break
			}
			sel = sel.Add(*r)
		}
		if valid && sel.Matches(set) {
			return true
		}
	}
	return false
}

// hasCapacity reports whether a volume for pvc fits in a CSIStorageCapacity
// of class reachable from node, when the class's CSI driver tracks
// capacity; true when it does not or pvc requests no size.
func (pl *VolumeBinding) hasCapacity(pvc *v1.PersistentVolumeClaim, class *storagev1.StorageClass, node *v1.Node) (bool, error) {
	size, ok := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	if !ok {
		return true, nil
	}
	driver, err := pl.drivers.Get(class.Provisioner)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("getting csidriver %q: %w", class.Provisioner, err)
	}
	if driver.Spec.StorageCapacity == nil || !*driver.Spec.StorageCapacity {
		return true, nil
	}
	caps, err := pl.capacities.List(labels.Everything())
	if err != nil {
		return false, fmt.Errorf("listing csistoragecapacities: %w", err)
	}
	for _, c := range caps {
		if c.StorageClassName != class.Name || c.NodeTopology == nil {
			continue
		}
		limit := c.MaximumVolumeSize
		if limit == nil {
			limit = c.Capacity
		}
		if limit == nil || limit.Value() < size.Value() {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.NodeTopology)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(node.Labels)) {
			return true, nil
		}
	}
	return false, nil
}
