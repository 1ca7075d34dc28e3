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
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The typed args of the in-tree plugins that take args: a pluginConfig
// entry of one of these plugins is read as its kind, <plugin>Args. The
// apiVersion and kind may be left out; kube-scheduler's
// (kubescheduler.config.k8s.io/v1) are accepted for the plugins both
// schedulers share.

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeResourcesFitArgs are the args of NodeResourcesFit.
type NodeResourcesFitArgs struct {
	metav1.TypeMeta `json:",inline"`

	// ScoringStrategy says which nodes Score prefers: LeastAllocated (the
	// default, spreading) or MostAllocated (bin packing). kube-scheduler's
	// form, a mapping of type and resources, is read too.
	ScoringStrategy *ScoringStrategy `json:"scoringStrategy,omitempty"`
	// Resources are the resources Score looks at and their weights (1 to
	// 100; 0 means 1). Default: cpu and memory, weight 1.
	Resources []ResourceSpec `json:"resources,omitempty"`
}

// ScoringStrategyType is a NodeResourcesFit scoring strategy.
type ScoringStrategyType string

// ScoringStrategy is NodeResourcesFit's scoringStrategy: a strategy name
// ("MostAllocated"), or kube-scheduler's mapping {type, resources}.
type ScoringStrategy struct {
	Type      ScoringStrategyType `json:"type,omitempty"`
	Resources []ResourceSpec      `json:"resources,omitempty"`
	// RequestedToCapacityRatio is kube-scheduler's third strategy, read
	// only to be refused.
	RequestedToCapacityRatio *runtime.RawExtension `json:"requestedToCapacityRatio,omitempty"`
}

// scoringStrategyFields are the keys of the mapping form.
var scoringStrategyFields = []string{"type", "resources", "requestedToCapacityRatio"}

// UnmarshalJSON reads either form of scoringStrategy, strictly.
func (s *ScoringStrategy) UnmarshalJSON(data []byte) error {
	var name string
	if json.Unmarshal(data, &name) == nil {
		*s = ScoringStrategy{Type: ScoringStrategyType(name)}
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("scoringStrategy: a strategy name or a mapping of type and resources: %w", err)
	}
	for k := range fields {
		if !slices.Contains(scoringStrategyFields, k) {
			return fmt.Errorf("scoringStrategy: field %s not found (known: type, resources)", k)
		}
	}
	type plain ScoringStrategy
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("scoringStrategy: %w", err)
	}
	*s = ScoringStrategy(p)
	return nil
}

// ResourceSpec is a resource NodeResourcesFit scores and its weight.
type ResourceSpec struct {
	Name v1.ResourceName `json:"name"`
	// Weight is 1 to 100; 0 (or left out) means 1.
	Weight int64 `json:"weight,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeLedgerArgs are the args of NodeLedger.
type NodeLedgerArgs struct {
	metav1.TypeMeta `json:",inline"`

	// NodeSelector selects the shared nodes, in label selector syntax
	// ("batch-scheduler.io/shared=vms"). Required: the VM manager places
	// VMs on the same nodes (its --host-selector).
	NodeSelector string `json:"nodeSelector,omitempty"`
	// Placer is the name this scheduler joins ledgers and records its
	// pods under (the VM manager's --ledger-require names it). Default
	// batch-scheduler.
	Placer string `json:"placer,omitempty"`
	// ReleaseInterval is how often the entries of pods that are gone are
	// released, and shared nodes not yet joined are joined. Default 500ms.
	ReleaseInterval *metav1.Duration `json:"releaseInterval,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TopologyAwareArgs are the args of TopologyAware.
type TopologyAwareArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Levels are the node labels of the topology levels, widest first
	// (e.g. block, rack, hostname). A constraint on a level tries the
	// narrower levels first, so that a gang that fits in one rack of the
	// block it asked for gets that rack; a Volcano network tier t is the
	// t-th level counted from the narrowest but the hostname. Default:
	// topology.kubernetes.io/block, topology.kubernetes.io/rack,
	// kubernetes.io/hostname.
	Levels []string `json:"levels,omitempty"`
	// MaxPlacements bounds the domains of the constraint's level tried in
	// one cycle, best fit first; 0 or left out means 8.
	MaxPlacements int32 `json:"maxPlacements,omitempty"`
	// MaxNarrowerPlacements bounds the domains of each narrower level
	// tried before them; 0 or left out means 2, -1 none.
	MaxNarrowerPlacements int32 `json:"maxNarrowerPlacements,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DefaultPreemptionArgs are the args of DefaultPreemption,
// kube-scheduler's: how many nodes the victim search tries for each pod
// that fits nowhere, at least the percentage of the nodes and at least
// the absolute number. Defaults 10 and 100, kube-scheduler's.
type DefaultPreemptionArgs struct {
	metav1.TypeMeta `json:",inline"`

	MinCandidateNodesPercentage *int32 `json:"minCandidateNodesPercentage,omitempty"`
	MinCandidateNodesAbsolute   *int32 `json:"minCandidateNodesAbsolute,omitempty"`
	// HonorPodGroupDisruptionMode, when true, lets preemption take the
	// pods of a gang whose scheduling.k8s.io PodGroup says
	// spec.disruptionMode.single (what the API server fills in when the
	// PodGroup says nothing) one by one, as kube-scheduler does, even
	// below the gang's quorum. False (the default) keeps every victim
	// gang at its quorum or takes it whole.
	HonorPodGroupDisruptionMode *bool `json:"honorPodGroupDisruptionMode,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CapacityArgs are the args of Capacity.
type CapacityArgs struct {
	metav1.TypeMeta `json:",inline"`

	// StarvationAfter is how long a job may wait for room before the jobs
	// behind it in its queue (lower priority, or the same and younger)
	// stop starting, so that the room it needs frees up: e.g. "5m" (the
	// default); "0" turns anti-starvation off.
	StarvationAfter DurationString `json:"starvationAfter,omitempty"`
}

// DurationString is a duration as time.ParseDuration reads it ("5m",
// "90s", "0"). YAML reads a bare 0 as a number, so a number is taken as
// its decimal text: `starvationAfter: 0` is "0" (off), and `5` is "5",
// which validation refuses for its missing unit. Anything else (true, a
// list, a mapping) is refused here.
type DurationString string

// jsonKind names the kind of the JSON value b starts.
func jsonKind(b []byte) string {
	switch b[0] {
	case 't', 'f':
		return "bool"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	return "value"
}

// UnmarshalJSON reads a JSON string or number.
func (d *DurationString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' && string(b) != "null" {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			// A type error, so that the decoder names the field and the
			// file's line is found.
			return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[DurationString]()}
		}
		*d = DurationString(n.String())
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*d = DurationString(s)
	return nil
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReservationArgs are the args of Reservation.
type ReservationArgs struct {
	metav1.TypeMeta `json:",inline"`

	// MaxReservations is how many jobs may hold reservations at once, at
	// most one per queue (default 4); 0 turns reservations off.
	MaxReservations *int32 `json:"maxReservations,omitempty"`
	// ReclaimAfter is how far off a reserving job's expected start may be
	// for it to wait for running pods to end rather than let the
	// PostFilter plugins after Reservation (Reclaim, DefaultPreemption)
	// evict for it (default "2m").
	ReclaimAfter DurationString `json:"reclaimAfter,omitempty"`
	// WaitWithoutEstimate is how long a reserving job whose start nothing
	// tells (the pods it waits for give no runtime) waits before the
	// plugins after Reservation may evict for it (default "0s": at once;
	// waiting blind would make reclaim as slow as the longest pod).
	WaitWithoutEstimate DurationString `json:"waitWithoutEstimate,omitempty"`
	// MaxHold bounds how long one job holds a reservation (default
	// "15m"); it then gives it up and does not reserve again for as long.
	MaxHold DurationString `json:"maxHold,omitempty"`
	// OverrunGrace is how late a reservation's job may start before the
	// pods on its nodes that overran their expected runtime are evicted
	// for it (default "30s").
	OverrunGrace DurationString `json:"overrunGrace,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ReclaimArgs are the args of Reclaim.
type ReclaimArgs struct {
	metav1.TypeMeta `json:",inline"`

	// Below is the share a queue's waiting job reclaims up to: "FairShare"
	// (the default), or "Guarantee" (only what the queue is guaranteed).
	Below string `json:"below,omitempty"`
}
