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

package config

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The typed args of the in-tree plugins that take args. A profile's
// pluginConfig entry for one of these plugins decodes into its type (kind
// <plugin>Args), defaulted and validated with the rest of the file; the
// plugin's factory receives it as its args. Other plugins' args stay
// RawArgs.

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeResourcesFitArgs are the args of NodeResourcesFit.
type NodeResourcesFitArgs struct {
	metav1.TypeMeta

	// ScoringStrategy says which nodes Score prefers.
	ScoringStrategy ScoringStrategyType
	// Resources are the resources Score looks at, with their weight in
	// the average.
	Resources []ResourceSpec
}

// ScoringStrategyType is a NodeResourcesFit scoring strategy.
type ScoringStrategyType string

const (
	// LeastAllocated prefers the nodes with the most free resources left
	// after placing the pod (spreading).
	LeastAllocated ScoringStrategyType = "LeastAllocated"
	// MostAllocated prefers the nodes with the least free resources left
	// after placing the pod (bin packing).
	MostAllocated ScoringStrategyType = "MostAllocated"
)

// Weight bounds of a resource NodeResourcesFit scores.
const (
	MinResourceWeight int64 = 1
	MaxResourceWeight int64 = 100
)

// ResourceSpec is a resource NodeResourcesFit's Score looks at, and its
// weight (MinResourceWeight to MaxResourceWeight).
type ResourceSpec struct {
	Name   v1.ResourceName
	Weight int64
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeLedgerArgs are the args of NodeLedger.
type NodeLedgerArgs struct {
	metav1.TypeMeta

	// NodeSelector selects the nodes shared with a VM manager, in label
	// selector syntax.
	NodeSelector string
	// Placer is the name this scheduler joins ledgers and records its
	// pods under.
	Placer string
	// ReleaseInterval is how often the entries of pods that are gone are
	// released.
	ReleaseInterval metav1.Duration
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TopologyAwareArgs are the args of TopologyAware.
type TopologyAwareArgs struct {
	metav1.TypeMeta

	// Levels are the node labels of the topology levels, widest first.
	Levels []string
	// MaxPlacements bounds the domains of the constraint's level tried in
	// one cycle.
	MaxPlacements int32
	// MaxNarrowerPlacements bounds the domains of each narrower level
	// tried before them; -1 tries none.
	MaxNarrowerPlacements int32
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DefaultPreemptionArgs are the args of DefaultPreemption, as
// kube-scheduler's: how many nodes the victim search tries for each pod
// that fits nowhere; and whether a victim gang's own disruption mode is
// followed.
type DefaultPreemptionArgs struct {
	metav1.TypeMeta

	MinCandidateNodesPercentage int32
	MinCandidateNodesAbsolute   int32
	// HonorPodGroupDisruptionMode takes the pods of a gang whose
	// PodGroup says spec.disruptionMode.single one by one, as
	// kube-scheduler does; false keeps every victim gang at its quorum
	// or takes it whole.
	HonorPodGroupDisruptionMode bool
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CapacityArgs are the args of Capacity.
type CapacityArgs struct {
	metav1.TypeMeta

	// StarvationAfter is how long a job may wait for room before the jobs
	// behind it in its queue stop starting, as a duration ("5m"); "0"
	// turns anti-starvation off.
	StarvationAfter string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReclaimArgs are the args of Reclaim.
type ReclaimArgs struct {
	metav1.TypeMeta

	// Below is the share a queue's waiting job reclaims up to: its fair
	// share (ReclaimBelowFairShare) or only what it is guaranteed
	// (ReclaimBelowGuarantee).
	Below string
}

// The values of ReclaimArgs.Below.
const (
	ReclaimBelowFairShare = "FairShare"
	ReclaimBelowGuarantee = "Guarantee"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReservationArgs are the args of Reservation.
type ReservationArgs struct {
	metav1.TypeMeta

	// MaxReservations is how many jobs may hold reservations at once (one
	// per queue at most); 0 turns reservations off.
	MaxReservations int32
	// ReclaimAfter is how far off a reserving job's expected start may be
	// for it to wait for running pods to end rather than let the
	// PostFilter plugins after Reservation (Reclaim, DefaultPreemption)
	// evict for it: as a duration ("2m").
	ReclaimAfter string
	// WaitWithoutEstimate is how long a reserving job whose start nothing
	// tells (the pods it waits for give no runtime) waits before the
	// plugins after Reservation may evict for it, as a duration; 0 hands
	// it on at once.
	WaitWithoutEstimate string
	// MaxHold bounds how long one job holds a reservation, as a duration;
	// it then gives it up and does not reserve again for as long.
	MaxHold string
	// OverrunGrace is how late a reservation's job may start before the
	// pods on its nodes that overran their expected runtime are evicted
	// for it, as a duration.
	OverrunGrace string
}
