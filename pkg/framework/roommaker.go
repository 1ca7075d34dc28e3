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

package framework

import "context"

// VictimPolicy reports whether the running pod of t may be evicted to make
// room for the cycle's job. It is asked only about counted, bound pods of
// other jobs; a gang's pod is taken only if the policy allows every
// running member of its gang, since a gang goes whole.
type VictimPolicy func(t *TaskInfo) bool

// PluginRoomMaker is a RoomMaker that tells the plugins it serves apart:
// the framework runtime hands each PostFilter plugin ForPlugin(its name),
// so that what a plugin evicts is counted as its (the victims metric's
// plugin label).
type PluginRoomMaker interface {
	RoomMaker
	ForPlugin(name string) RoomMaker
}

// DisruptionRoomMaker is a RoomMaker whose victim search can follow each
// victim gang's own disruption mode (JobInfo.Disruption): the Engine's
// is one. A RoomMaker that is not searches with every gang whole.
type DisruptionRoomMaker interface {
	RoomMaker
	// WithGroupDisruption returns a RoomMaker for the same cycle whose
	// victim search takes the pods of a gang that lets them go one by one
	// (DisruptSingly) one by one, as pods of no gang; the RoomMaker
	// handed to a plugin keeps every victim gang at its quorum or takes
	// it whole.
	WithGroupDisruption() RoomMaker
}

// RoomMaker is the machinery for making room for the cycle's job, handed
// to the PostFilter plugins: the plugin brings the policy (whether to
// try, which pods may go), the preemption library the rest (package
// framework/preemption implements it, and its Evaluator runs a plugin's
// policy through it).
type RoomMaker interface {
	// MakeRoom looks for the cheapest set of pods the policy allows whose
	// eviction lets the job start: it places the pending pods one by one
	// on the cycle's snapshot, each where it fits or else on the node
	// where the fewest and least important victims make room (whole
	// gangs, sparing pods a PodDisruptionBudget protects where it can),
	// and asks the Permit plugins whether the job may start so. When it
	// may, the pods are nominated to their nodes and the victims'
	// eviction starts. It changes nothing while earlier victims of the
	// job are still terminating (Outcome.Waiting).
	MakeRoom(ctx context.Context, victims VictimPolicy) (RoomOutcome, error)
	// MakeRoomWithin is MakeRoom with a budget that bounds what the
	// victims may take from each group of pods (a queue's) they belong to.
	MakeRoomWithin(ctx context.Context, victims VictimPolicy, budget VictimBudget) (RoomOutcome, error)
	// Job returns the cache's record of a job, e.g. of a victim, for a
	// victim policy that looks at more than the pod (its queue, say).
	// Lookups are cached for the cycle; the record must not be modified.
	Job(id JobID) (*JobInfo, bool)
	// WithSample returns a RoomMaker for the same cycle whose victim
	// search looks at a sample of the nodes (see CandidateSample). The
	// RoomMaker handed to a plugin searches every node.
	WithSample(sample CandidateSample) RoomMaker
	// Reserve holds room for the job on the nodes where it fits soonest
	// as running pods end, evicting nothing: the search of MakeRoom with
	// every running pod of another job as a pod to wait for, where those
	// expected to end soonest (policy.End) are waited for first, and a
	// node is better the sooner its pods are expected to free the room
	// (those without an estimate count as ending last, then the fewer
	// the better). The pods are nominated there as a reservation: cycles
	// of jobs of at most the job's priority see the room as taken, except
	// those that backfill (see Reservation.Backfills). A job that fits as
	// the cluster is has its pods nominated as MakeRoom does, not
	// reserved (Reservation.FitsNow).
	Reserve(ctx context.Context, policy ReservePolicy) (Reservation, error)
	// Release drops the nominations of job (the cycle's or another),
	// reserved or not, and gives their room back to the jobs they kept
	// out.
	Release(ctx context.Context, job JobID)
}
