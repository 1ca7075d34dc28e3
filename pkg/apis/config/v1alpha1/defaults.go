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
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// Defaults of the scheduler-wide settings; they match those of the
// framework and the scheduling queue when no file is given.
const (
	DefaultParallelism              int32 = 16
	DefaultPodInitialBackoffSeconds int64 = 1
	DefaultPodMaxBackoffSeconds     int64 = 10
)

// SetDefaults_SchedulerConfiguration fills in the scheduler-wide settings
// a file leaves out.
func SetDefaults_SchedulerConfiguration(obj *SchedulerConfiguration) { //nolint:revive // the name defaulter-gen looks for
	if obj.Parallelism == nil {
		obj.Parallelism = ptr.To(DefaultParallelism)
	}
	if obj.PodInitialBackoffSeconds == nil {
		obj.PodInitialBackoffSeconds = ptr.To(DefaultPodInitialBackoffSeconds)
	}
	if obj.PodMaxBackoffSeconds == nil {
		obj.PodMaxBackoffSeconds = ptr.To(DefaultPodMaxBackoffSeconds)
	}
}

// Defaults of the in-tree plugins' args.
const (
	// DefaultScoringStrategy is NodeResourcesFit's strategy, spreading.
	DefaultScoringStrategy ScoringStrategyType = "LeastAllocated"
	// DefaultResourceWeight is the weight of a scored resource that gives
	// none.
	DefaultResourceWeight int64 = 1

	// DefaultNodeLedgerPlacer is the name batch-scheduler joins ledgers
	// under.
	DefaultNodeLedgerPlacer = "batch-scheduler"
	// DefaultNodeLedgerReleaseInterval is how often NodeLedger releases
	// the entries of pods that are gone.
	DefaultNodeLedgerReleaseInterval = 500 * time.Millisecond

	// DefaultMaxPlacements bounds how many domains of a constraint's own
	// level TopologyAware tries in one cycle.
	DefaultMaxPlacements int32 = 8
	// DefaultMaxNarrowerPlacements bounds how many domains of each level
	// narrower than the constraint's TopologyAware tries first.
	DefaultMaxNarrowerPlacements int32 = 2

	// DefaultMinCandidateNodesPercentage and
	// DefaultMinCandidateNodesAbsolute bound DefaultPreemption's victim
	// search, kube-scheduler's defaults.
	DefaultMinCandidateNodesPercentage int32 = 10
	DefaultMinCandidateNodesAbsolute   int32 = 100

	// DefaultStarvationAfter is Capacity's anti-starvation delay.
	DefaultStarvationAfter = "5m"
	// DefaultReclaimBelow is the share Reclaim takes back up to.
	DefaultReclaimBelow = "FairShare"

	// DefaultMaxReservations, DefaultReclaimAfter,
	// DefaultWaitWithoutEstimate, DefaultMaxHold and DefaultOverrunGrace
	// are Reservation's defaults.
	DefaultMaxReservations     int32 = 4
	DefaultReclaimAfter              = "2m"
	DefaultWaitWithoutEstimate       = "0s"
	DefaultMaxHold                   = "15m"
	DefaultOverrunGrace              = "30s"
)

// DefaultTopologyLevels are TopologyAware's levels, widest first: a block
// (racks under one spine), a rack, a node.
var DefaultTopologyLevels = []string{"topology.kubernetes.io/block", "topology.kubernetes.io/rack", "kubernetes.io/hostname"}

// DefaultScoredResources are the resources NodeResourcesFit scores when
// the args name none.
var DefaultScoredResources = []ResourceSpec{{Name: v1.ResourceCPU, Weight: 1}, {Name: v1.ResourceMemory, Weight: 1}}

// SetDefaults_NodeResourcesFitArgs fills in the strategy, the resources
// (when neither list names any) and zero weights.
func SetDefaults_NodeResourcesFitArgs(obj *NodeResourcesFitArgs) { //nolint:revive // the name defaulter-gen looks for
	if obj.ScoringStrategy == nil {
		obj.ScoringStrategy = &ScoringStrategy{}
	}
	if obj.ScoringStrategy.Type == "" {
		obj.ScoringStrategy.Type = DefaultScoringStrategy
	}
	if len(obj.Resources) == 0 && len(obj.ScoringStrategy.Resources) == 0 {
		obj.Resources = slices.Clone(DefaultScoredResources)
	}
	for _, list := range [][]ResourceSpec{obj.Resources, obj.ScoringStrategy.Resources} {
		for i := range list {
			if list[i].Weight == 0 {
				list[i].Weight = DefaultResourceWeight
			}
		}
	}
}

// SetDefaults_NodeLedgerArgs fills in the placer and the release
// interval.
func SetDefaults_NodeLedgerArgs(obj *NodeLedgerArgs) { //nolint:revive // the name defaulter-gen looks for
	if obj.Placer == "" {
		obj.Placer = DefaultNodeLedgerPlacer
	}
	if obj.ReleaseInterval == nil || obj.ReleaseInterval.Duration == 0 {
		obj.ReleaseInterval = &metav1.Duration{Duration: DefaultNodeLedgerReleaseInterval}
	}
}

// SetDefaults_TopologyAwareArgs fills in the levels and the placement
// bounds.
func SetDefaults_TopologyAwareArgs(obj *TopologyAwareArgs) { //nolint:revive // the name defaulter-gen looks for
	if len(obj.Levels) == 0 {
		obj.Levels = slices.Clone(DefaultTopologyLevels)
	}
	if obj.MaxPlacements == 0 {
		obj.MaxPlacements = DefaultMaxPlacements
	}
	if obj.MaxNarrowerPlacements == 0 {
		obj.MaxNarrowerPlacements = DefaultMaxNarrowerPlacements
	}
}

// SetDefaults_DefaultPreemptionArgs fills in kube-scheduler's bounds.
func SetDefaults_DefaultPreemptionArgs(obj *DefaultPreemptionArgs) { //nolint:revive // the name defaulter-gen looks for
	if obj.MinCandidateNodesPercentage == nil {
		obj.MinCandidateNodesPercentage = ptr.To(DefaultMinCandidateNodesPercentage)
	}
	if obj.MinCandidateNodesAbsolute == nil {
		obj.MinCandidateNodesAbsolute = ptr.To(DefaultMinCandidateNodesAbsolute)
	}
	if obj.HonorPodGroupDisruptionMode == nil {
		obj.HonorPodGroupDisruptionMode = ptr.To(false)
	}
}

// SetDefaults_CapacityArgs fills in the anti-starvation delay.
func SetDefaults_CapacityArgs(obj *CapacityArgs) { //nolint:revive // the name defaulter-gen looks for
	if obj.StarvationAfter == "" {
		obj.StarvationAfter = DefaultStarvationAfter
	}
}

// SetDefaults_ReclaimArgs fills in the share reclaimed up to.
func SetDefaults_ReclaimArgs(obj *ReclaimArgs) { //nolint:revive // the name defaulter-gen looks for
	if obj.Below == "" {
		obj.Below = DefaultReclaimBelow
	}
}

// SetDefaults_HTTPSourceArgs fills in the list timeout and the size
// limits; a value of 0 takes the default too, as it always has.
func SetDefaults_HTTPSourceArgs(obj *HTTPSourceArgs) { //nolint:revive // the name defaulter-gen looks for
	if obj.Timeout == nil || obj.Timeout.Duration == 0 {
		obj.Timeout = &metav1.Duration{Duration: config.DefaultHTTPSourceTimeout}
	}
	if obj.MaxObjectBytes == 0 {
		obj.MaxObjectBytes = config.DefaultHTTPSourceMaxObjectBytes
	}
	if obj.MaxListBytes == 0 {
		obj.MaxListBytes = config.DefaultHTTPSourceMaxListBytes
	}
}

// SetDefaults_FileSourceArgs fills in the poll interval; 0 takes the
// default too.
func SetDefaults_FileSourceArgs(obj *FileSourceArgs) { //nolint:revive // the name defaulter-gen looks for
	if obj.PollInterval == nil || obj.PollInterval.Duration == 0 {
		obj.PollInterval = &metav1.Duration{Duration: config.DefaultFileSourcePollInterval}
	}
}

// SetDefaults_ReservationArgs fills in Reservation's bounds.
func SetDefaults_ReservationArgs(obj *ReservationArgs) { //nolint:revive // the name defaulter-gen looks for
	if obj.MaxReservations == nil {
		n := DefaultMaxReservations
		obj.MaxReservations = &n
	}
	if obj.ReclaimAfter == "" {
		obj.ReclaimAfter = DefaultReclaimAfter
	}
	if obj.WaitWithoutEstimate == "" {
		obj.WaitWithoutEstimate = DefaultWaitWithoutEstimate
	}
	if obj.MaxHold == "" {
		obj.MaxHold = DefaultMaxHold
	}
	if obj.OverrunGrace == "" {
		obj.OverrunGrace = DefaultOverrunGrace
	}
}
