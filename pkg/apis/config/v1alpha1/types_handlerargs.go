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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The typed args of the built-in event handlers: an eventHandlers entry
// named "default" or "two-level" reads its args as DefaultHandlerArgs or
// TwoLevelHandlerArgs, strictly.

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DefaultHandlerArgs are the args of the default event handler.
type DefaultHandlerArgs struct {
	metav1.TypeMeta `json:",inline"`

	// DynamicResources lists resources, as "<plural>.<version>.<group>"
	// (e.g. "widgets.v1alpha1.example.com"), that the cache watches with
	// dynamic informers; each listed once.
	DynamicResources []string `json:"dynamicResources,omitempty"`
	// ExternalWorkloadNodeLabel, when set, is the label key on
	// ExternalWorkloads that names the node their usage is accounted to
	// (else spec.nodeName).
	ExternalWorkloadNodeLabel string `json:"externalWorkloadNodeLabel,omitempty"`
	// DisableGangDialects stops the watches of the gang dialects' objects.
	DisableGangDialects bool `json:"disableGangDialects,omitempty"`
	// OwnerGangs turns the inference of gangs from pods' owners on or off
	// per owner kind (Job, JobSet, LeaderWorkerSet, MPIJob, PyTorchJob,
	// RayCluster: true or false); every kind is on by default.
	OwnerGangs map[string]bool `json:"ownerGangs,omitempty"`
	// DisableQueues stops the watches of queues.
	DisableQueues bool `json:"disableQueues,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TwoLevelHandlerArgs are the args of the two-level event handler: its
// own fields and the default handler's, in one mapping.
type TwoLevelHandlerArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Framework is the name the allocator grants capacity to. Required; a
	// DNS label.
	Framework string `json:"framework,omitempty"`
	// EvictOnRevoke makes the handler evict this scheduler's pods above a
	// shrunken grant.
	EvictOnRevoke bool `json:"evictOnRevoke,omitempty"`
	// DefaultHandlerArgs are the default handler's args, inline.
	DefaultHandlerArgs `json:",inline"`
}
