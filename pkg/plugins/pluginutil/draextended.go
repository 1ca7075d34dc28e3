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

package pluginutil

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// DRAExtendedKey is the CycleState key under which the DynamicResources
// plugin's PreFilterPod leaves a *DRAExtended for the pod it ran for.
// NodeResourcesFit reads it: a node that does not list such a resource in
// its allocatable is DynamicResources' to judge, not a shortage.
const DRAExtendedKey framework.StateKey = "DynamicResources/extendedResources"

// DRAExtended names the extended resources a pod requests that a
// DeviceClass maps (its spec.extendedResourceName, or the implicit
// deviceclass.resource.kubernetes.io/<class>): on a node whose
// allocatable lacks one of them, its devices are allocated through
// Dynamic Resource Allocation instead of by a device plugin. It is
// written once per pod and never changed, so Clone shares it.
type DRAExtended struct {
	// Pod is the pod the names are for: the key holds the last pod's
	// entry until the next pod's PreFilterPod.
	Pod types.UID
	// Names are the resources served through DRA where a node lacks them.
	Names map[v1.ResourceName]bool
}

// Clone implements framework.StateData.
func (d *DRAExtended) Clone() framework.StateData { return d }

// DRAExtendedOf returns the DRA-backed extended resources pod requests,
// as the DynamicResources plugin found them in this cycle; nil when it
// found none or did not run (it is disabled: then there are none).
func DRAExtendedOf(state *framework.CycleState, pod *v1.Pod) map[v1.ResourceName]bool {
	if state == nil {
		return nil
	}
	d, ok := state.Read(DRAExtendedKey)
	if !ok {
		return nil
	}
	e, ok := d.(*DRAExtended)
	if !ok || e == nil || e.Pod != pod.UID {
		return nil
	}
	return e.Names
}
