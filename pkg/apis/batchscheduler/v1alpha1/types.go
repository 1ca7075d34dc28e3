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
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GrantPhase is the lifecycle phase of a Grant. The empty string means not
// yet observed.
// +kubebuilder:validation:Enum="";Active;Revoked;Expired
type GrantPhase string

const (
	// GrantActive means the capacity is granted and may be used.
	GrantActive GrantPhase = "Active"
	// GrantRevoked means the issuer took the capacity back before expiry.
	GrantRevoked GrantPhase = "Revoked"
	// GrantExpired means ExpiresAt has passed.
	GrantExpired GrantPhase = "Expired"
)

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,singular=grant
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Node,type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name=Framework,type=string,JSONPath=`.spec.framework`
// +kubebuilder:printcolumn:name=Phase,type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`

// Grant records that an external allocator (Mesos-like) granted a framework
// capacity on one host. It is cluster-scoped, like the Node it refers to.
type Grant struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what was granted.
	Spec GrantSpec `json:"spec"`
	// Status is the observed state of the grant.
	// +optional
	Status GrantStatus `json:"status,omitempty"`
}

// GrantSpec describes the capacity granted.
type GrantSpec struct {
	// Framework names the framework the capacity is granted to.
	// +kubebuilder:validation:MinLength=1
	Framework string `json:"framework"`
	// NodeName is the name of the Node (host) the capacity is on: a DNS-1123
	// subdomain (lowercase, at most 253 characters).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	NodeName string `json:"nodeName"`
	// Resources is the granted capacity, by resource name: at most 128 names
	// (MaxResources), none empty, no quantity negative. Absent or empty
	// means none.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(name, size(name) > 0)",message="resource names must not be empty"
	// +kubebuilder:validation:XValidation:rule="self.all(name, type(self[name]) == string ? !(self[name] >= '-' && self[name] < '.') : self[name] >= 0)",message="quantities must be greater than or equal to 0"
	Resources v1.ResourceList `json:"resources"`
	// ExpiresAt is when the grant lapses; nil means it does not expire.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
	// Issuer names who issued the grant (the allocator).
	// +kubebuilder:validation:MinLength=1
	Issuer string `json:"issuer"`
}

// GrantStatus is the observed state of a Grant.
type GrantStatus struct {
	// Phase is Active, Revoked or Expired; empty until first observed.
	// +optional
	Phase GrantPhase `json:"phase,omitempty"`
	// Message is a human-readable explanation of Phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true

// GrantList is a list of Grants.
type GrantList struct {
	metav1.TypeMeta `json:",inline"`
	// ListMeta is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Grants.
	Items []Grant `json:"items"`
}

// ExternalWorkloadPhase is the lifecycle phase of an ExternalWorkload. The
// empty string means not yet observed.
// +kubebuilder:validation:Enum="";Pending;Running;Stopped
type ExternalWorkloadPhase string

const (
	// ExternalWorkloadPending means the workload is not yet using resources.
	ExternalWorkloadPending ExternalWorkloadPhase = "Pending"
	// ExternalWorkloadRunning means the workload is using its resources.
	ExternalWorkloadRunning ExternalWorkloadPhase = "Running"
	// ExternalWorkloadStopped means the workload released its resources.
	ExternalWorkloadStopped ExternalWorkloadPhase = "Stopped"
)

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,singular=externalworkload
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Node,type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name=Kind,type=string,JSONPath=`.spec.workloadKind`
// +kubebuilder:printcolumn:name=Phase,type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`

// ExternalWorkload records something outside Kubernetes (a VM, a
// reservation, ...) that uses resources on one host. It is cluster-scoped,
// like the Node it refers to.
type ExternalWorkload struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the workload uses.
	Spec ExternalWorkloadSpec `json:"spec"`
	// Status is the observed state of the workload.
	// +optional
	Status ExternalWorkloadStatus `json:"status,omitempty"`
}

// ExternalWorkloadSpec describes an external workload's footprint.
type ExternalWorkloadSpec struct {
	// NodeName is the name of the Node (host) the workload runs on: a DNS-1123
	// subdomain (lowercase, at most 253 characters).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	NodeName string `json:"nodeName"`
	// Resources is what the workload uses, by resource name: at most 128 names
	// (MaxResources), none empty, no quantity negative. Absent or empty
	// means none.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(name, size(name) > 0)",message="resource names must not be empty"
	// +kubebuilder:validation:XValidation:rule="self.all(name, type(self[name]) == string ? !(self[name] >= '-' && self[name] < '.') : self[name] >= 0)",message="quantities must be greater than or equal to 0"
	Resources v1.ResourceList `json:"resources"`
	// WorkloadKind says what the workload is, e.g. "vm" or "reservation".
	// It is not called "kind" because the JSON key "kind" is already taken
	// by TypeMeta at the top level, and reusing it one level down would be
	// a trap for readers, tools and unstructured access.
	// +kubebuilder:validation:MinLength=1
	WorkloadKind string `json:"workloadKind"`
	// Owner names who runs the workload.
	// +optional
	Owner string `json:"owner,omitempty"`
}

// ExternalWorkloadStatus is the observed state of an ExternalWorkload.
type ExternalWorkloadStatus struct {
	// Phase is Pending, Running or Stopped; empty until first observed.
	// +optional
	Phase ExternalWorkloadPhase `json:"phase,omitempty"`
	// Message is a human-readable explanation of Phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true

// ExternalWorkloadList is a list of ExternalWorkloads.
type ExternalWorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	// ListMeta is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ExternalWorkloads.
	Items []ExternalWorkload `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,singular=queue
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Parent,type=string,JSONPath=`.spec.parent`
// +kubebuilder:printcolumn:name=Weight,type=integer,JSONPath=`.spec.weight`
// +kubebuilder:printcolumn:name=Pending,type=integer,JSONPath=`.status.pendingJobs`
// +kubebuilder:printcolumn:name=Running,type=integer,JSONPath=`.status.runningJobs`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.parent) || self.spec.parent != self.metadata.name",message="a queue cannot be its own parent",fieldPath=".spec.parent"

// Queue is a tenant of the scheduler: jobs name the queue they belong to,
// and queues share what the scheduler may use by weight, with guarantees,
// limits, borrowing and reclaim (see docs/queues.md). Queues form a tree
// through spec.parent; jobs belong to leaf queues. It is cluster-scoped.
type Queue struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the queue's share of the capacity.
	// +optional
	Spec QueueSpec `json:"spec,omitempty"`
	// Status is what the scheduler observed and computed for the queue.
	// +optional
	Status QueueStatus `json:"status,omitempty"`
}

// QueueSpec says how much of its parent's share a queue gets.
type QueueSpec struct {
	// Parent names the queue this one is a child of; empty for a child of
	// the root (everything the scheduler may use).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Parent string `json:"parent,omitempty"`
	// Weight is the queue's part, relative to its siblings', of what its
	// parent has left after the siblings' guarantees. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	Weight int32 `json:"weight,omitempty"`
	// Guaranteed is reserved for the queue whenever its jobs ask for it.
	// While the queue does not use it, siblings may borrow it (unless Lend
	// is false); a job of the queue that then waits reclaims it.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(name, size(name) > 0)",message="resource names must not be empty"
	// +kubebuilder:validation:XValidation:rule="self.all(name, type(self[name]) == string ? !(self[name] >= '-' && self[name] < '.') : self[name] >= 0)",message="quantities must be greater than or equal to 0"
	Guaranteed v1.ResourceList `json:"guaranteed,omitempty"`
	// Limit is never exceeded by the queue's jobs together, per resource
	// it names; a resource it does not name is unlimited.
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(name, size(name) > 0)",message="resource names must not be empty"
	// +kubebuilder:validation:XValidation:rule="self.all(name, type(self[name]) == string ? !(self[name] >= '-' && self[name] < '.') : self[name] >= 0)",message="quantities must be greater than or equal to 0"
	Limit v1.ResourceList `json:"limit,omitempty"`
	// Borrow lets the queue use more than its entitled share (its
	// guarantee plus its weighted part of the rest) when its siblings
	// leave capacity idle. What it borrows may be reclaimed. Default true.
	// +optional
	Borrow *bool `json:"borrow,omitempty"`
	// Lend lets siblings use the queue's unused guarantee. When false,
	// the guarantee stays reserved, idle, until the queue's jobs use it.
	// Default true.
	// +optional
	Lend *bool `json:"lend,omitempty"`
	// Reclaimable lets other queues reclaim what this queue borrowed by
	// evicting its work. When false, what it borrowed is only given back
	// as its jobs finish. Default true.
	// +optional
	Reclaimable *bool `json:"reclaimable,omitempty"`
}

// QueueStatus is what the scheduler observed and computed for a queue.
type QueueStatus struct {
	// Allocated is what the queue's running jobs request together.
	// +optional
	Allocated v1.ResourceList `json:"allocated,omitempty"`
	// Pending is what the queue's waiting pods request together.
	// +optional
	Pending v1.ResourceList `json:"pending,omitempty"`
	// FairShare is what the queue may use now: its guarantee plus its
	// weighted part of what the other queues leave, up to its limit.
	// +optional
	FairShare v1.ResourceList `json:"fairShare,omitempty"`
	// Guaranteed is the guarantee the scheduler honours: spec.guaranteed,
	// at most spec.limit, scaled down when the siblings' guarantees
	// together exceed the parent's share.
	// +optional
	Guaranteed v1.ResourceList `json:"guaranteed,omitempty"`
	// PendingJobs counts the queue's jobs that have pods waiting.
	// +optional
	PendingJobs int32 `json:"pendingJobs,omitempty"`
	// RunningJobs counts the queue's jobs that have pods running.
	// +optional
	RunningJobs int32 `json:"runningJobs,omitempty"`
	// Conditions: Valid (False when the queue is left out: an unknown
	// parent, a cycle, a bad amount; the message names the problem).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// QueueList is a list of Queues.
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	// ListMeta is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Queues.
	Items []Queue `json:"items"`
}

// LedgerEntryKindPod is the kind of a ledger entry that records a pod.
const LedgerEntryKindPod = "Pod"

// MaxLedgerEntries is the most entries a NodeLedger holds: far above the
// pods and VMs one node runs (kubelet's default is 110 pods).
const MaxLedgerEntries = 2048

// MaxLedgerPlacers is the most placers a NodeLedger lists.
const MaxLedgerPlacers = 32

// MaxLedgerEntryResources is the most resource names one ledger entry
// holds.
const MaxLedgerEntryResources = 16

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,singular=nodeledger
// +kubebuilder:printcolumn:name=Placers,type=string,JSONPath=`.spec.placers[*].name`
// +kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`

// NodeLedger is the shared record of one node's placements, for nodes
// where more than one placer decides what runs: batch-scheduler's pods and
// the VMs of a manager outside Kubernetes, say. Its name is the node's.
//
// A placer commits a placement by adding an entry and updating the ledger
// with the resourceVersion it read, after checking that the entries, the
// node's other pods and the new placement fit the node's allocatable. The
// update fails with a conflict when another placer committed in between;
// the placer then reads the ledger again and checks again. Placements on
// one node are so serialised through the API server (optimistic
// concurrency), and two placers never take the same capacity. An entry is
// removed only once what it records is gone (the pod deleted or finished,
// the VM stopped). See docs/hybrid.md.
type NodeLedger struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta is the standard object metadata; the name is the node's.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the ledger's content.
	// +optional
	Spec NodeLedgerSpec `json:"spec,omitempty"`
}

// NodeLedgerSpec is what a NodeLedger records.
type NodeLedgerSpec struct {
	// Placers are the placers that have joined the ledger: each records
	// every placement it makes on the node here, from the moment it joined.
	// A placer that needs another to have joined (the VM manager needs
	// batch-scheduler) places nothing on the node before it has.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Placers []LedgerPlacer `json:"placers,omitempty"`
	// Entries are the placements not yet released, each recorded by the
	// placer that made it.
	// +optional
	// +kubebuilder:validation:MaxItems=2048
	Entries []LedgerEntry `json:"entries,omitempty"`
}

// LedgerPlacer is a placer that has joined a NodeLedger.
type LedgerPlacer struct {
	// Name identifies the placer, e.g. "batch-scheduler" or "vm-manager".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// JoinedAt is when it joined.
	// +optional
	JoinedAt metav1.Time `json:"joinedAt,omitempty"`
}

// LedgerEntry is one placement recorded in a NodeLedger.
type LedgerEntry struct {
	// Placer is the name of the placer that made the placement.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Placer string `json:"placer"`
	// Kind is what was placed: "Pod", or the manager's workload kind
	// ("vm", say).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Namespace is the pod's namespace; empty for what has none.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// Name is the pod's or workload's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// UID is the pod's UID (a pod of the same name created again is
	// another pod); empty for what has none.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// Resources is what the placement uses on the node: at most 16 names,
	// none empty, no quantity negative.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Resources v1.ResourceList `json:"resources,omitempty"`
}

// +kubebuilder:object:root=true

// NodeLedgerList is a list of NodeLedgers.
type NodeLedgerList struct {
	metav1.TypeMeta `json:",inline"`
	// ListMeta is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ledgers.
	Items []NodeLedger `json:"items"`
}
