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

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// MaxNodeScore and MinNodeScore bound what a Score plugin returns (after
// NormalizeScore, if it has one).
const (
	MaxNodeScore int64 = 100
	MinNodeScore int64 = 0
	// MaxTotalScore bounds the weighted sum of all scores of one node, so
	// that weights can be checked for overflow when a profile is built.
	MaxTotalScore int64 = 1<<63 - 1
)

// Plugin is the parent of every plugin interface.
type Plugin interface {
	Name() string
}

// Job is what a scheduling cycle is about: one job (a gang, or a single
// pod) with the tasks it still has to place.
type Job struct {
	ID JobID
	// MinAvailable is how many tasks must run at once (bound plus placed in
	// this cycle) for the job to start; 1 for a single pod.
	MinAvailable int32
	// Pending are the pods to place, in a stable order. Read-only.
	Pending []*v1.Pod
	// ClaimDevices are the devices of the pending pods' own
	// ResourceClaims, by pod UID (TaskInfo.ClaimDevices), only for the
	// pods that have some; nil when none has. Read-only. QueueRequest
	// reads it.
	ClaimDevices map[types.UID]resources.Resource
	// Bound counts tasks already bound (and not finished).
	Bound int
	// Err is the job's validation problem, if any (e.g. a bad
	// min-available annotation); nil otherwise.
	Err error
	// Queue is the queue the job belongs to (DefaultQueue when it names
	// none), and QueueVia where it is named, for messages.
	Queue, QueueVia string
	// Priority is the job's priority and Since when it first entered the
	// scheduling queue, as the queue orders it (QueuedJob).
	Priority int32
	Since    time.Time
	// Untried counts the pending pods the cycle did not try to place: a
	// QuorumPermit plugin said the job was out of reach once a pod fit
	// nowhere. 0 when every pod was tried. Set by the cycle before
	// Permit.
	Untried int
	// Queues are the queues at the start of the cycle, with what they use
	// and their shares; nil while no Queue exists (every job is then in
	// the implicit default queue, and nothing is limited by queues).
	Queues *QueueSnapshot
	// Ceiling is what this scheduler could use with every other pod gone:
	// per node, its allocatable less external usage, within the node's
	// cap (the grants) where it has one. A job whose quorum asks for more
	// can never start. Recounted at most every tenancy.Options.Refresh,
	// and after an event by which it may grow; nil when the cache does not
	// count it.
	Ceiling ResourceAmounts
	// Topology is the network domain the job's pods must or should share
	// (see JobTopology); nil for none. TopologyErr says why a
	// declared constraint could not be read.
	Topology    *TopologyConstraint
	TopologyErr error
	// PlacedNodes are the nodes of the job's bound and assumed tasks that
	// have not finished, one entry per task: where a topology constraint
	// has already put the job.
	PlacedNodes []string
	// RuntimeBounds, when set, holds what the owners of the pending pods
	// say about when they end (see EstimatedRuntime); nil: nothing.
	RuntimeBounds *RuntimeBounds
	// SubGroups are the sub-gangs of a multi-level gang in the order they
	// are placed, each one's Pending a part of Pending (see
	// SplitSubGroups), and SubGroupRules the rules they come from, which
	// say how many of each must reach their quorum; both nil for a
	// single-level job.
	SubGroups     []SubGroup
	SubGroupRules []SubGroupRule
	// Parent is set on the job a PlacementPlugin is asked to place one
	// sub-group of a multi-level gang as: the whole job. Its ID is the
	// whole's and SubGroup names the sub-group.
	Parent   *Job
	SubGroup string
}

// QueueRequest is what pod, one of the job's pending pods, counts against
// its queue: its requests (resources.PodRequests) plus the devices of its
// own ResourceClaims (ClaimDevices).
func (j *Job) QueueRequest(pod *v1.Pod) resources.Resource {
	r := resources.PodRequests(pod)
	if j != nil {
		if d, ok := j.ClaimDevices[pod.UID]; ok {
			r.Add(d)
		}
	}
	return r
}

// QueueSortPlugin orders the jobs in the active queue. A profile has
// exactly one.
type QueueSortPlugin interface {
	Plugin
	Less(a, b *QueuedJob) bool
}

// PreFilterPlugin runs once per job and cycle, before any Filter. A
// rejection rejects the whole job (e.g. a gang whose tasks have not all
// arrived yet).
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, job *Job) *Status
}

// PodPreFilterPlugin runs once per pod, before the pod's nodes are
// filtered, in a plugin enabled at preFilter. It is where a plugin that
// looks across nodes (inter-pod affinity, topology spread, volumes)
// computes what its Filter needs, e.g. into state. nodes are all the nodes
// the pod may be filtered against, holding the pods the cycle placed
// before this one: the second pod of a gang sees the first. The pods of a
// job are handled one after the other, so state written here is read by
// this pod's Filter calls only until the next pod's PreFilterPod.
//
// Skip means the plugin has nothing to check for this pod: its Filter is
// not called for it. A Skip must stay true when pods are taken off the
// nodes (and put back): preemption's victim search updates the state by
// the pods it removes (PodPreFilterExtensions) and does not ask a plugin
// that skipped again. A rejection rejects the pod on every node.
type PodPreFilterPlugin interface {
	Plugin
	PreFilterPod(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// PodPreFilterExtensions is an optional interface of a PodPreFilterPlugin
// whose state for a pod can be updated as pods leave or join a node,
// rather than computed again over every node: preemption's victim search
// takes the candidate victims off a node and puts them back one by one,
// and rerunning PreFilterPod over the whole cluster for each of them
// costs what the plugin's counting costs, once per (node, victim).
//
// The contract:
//
//   - The framework calls AddPod and RemovePod for podToSchedule only
//     after this plugin's PreFilterPod for the same pod, with the same
//     state (or a CycleState.Clone of it), returned success, and never
//     after it returned Skip (see PodPreFilterPlugin on Skip).
//   - node is one of the nodes PreFilterPod was given, and it already
//     reflects the change: for AddPod it holds added, for RemovePod it no
//     longer holds removed. The pods it holds otherwise are those of
//     PreFilterPod's call with every change reported since applied; the
//     update comes from added or removed and the node object, not from
//     recounting node's pods.
//   - added or removed is the task as a node holds it; a task that is not
//     counted (TaskInfo.Counted) counts for nothing, as in PreFilterPod.
//   - After any sequence of calls, Filter must give on every node the
//     verdict it would give after PreFilterPod run again over the nodes as
//     they now are (Skip there standing for success).
//   - Calls are not concurrent with each other nor with Filter on the same
//     state. The plugin must make its state's Clone deep enough that an
//     update of the clone leaves the original as it was: callers clone
//     the state per candidate node.
//
// A status other than success is an error. A plugin that does not
// implement the interface is still correct: while it has not skipped the
// pod, callers run PreFilterPod again over the changed nodes instead.
type PodPreFilterExtensions interface {
	PodPreFilterPlugin
	// AddPod updates the state PreFilterPod wrote for podToSchedule as if
	// added had been on node when PreFilterPod ran.
	AddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, added *TaskInfo, node *NodeInfo) *Status
	// RemovePod updates the state PreFilterPod wrote for podToSchedule as
	// if removed had not been on node when PreFilterPod ran.
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, removed *TaskInfo, node *NodeInfo) *Status
}

// FilterPlugin says whether pod may run on node. node holds the pods
// already placed earlier in this cycle, so successive tasks of a gang see
// each other.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, node *NodeInfo) *Status
}

// NodeFilter is a FilterPlugin's Filter bound to one pod and cycle state.
type NodeFilter func(ctx context.Context, node *NodeInfo) *Status

// FilterPreparer is a FilterPlugin whose Filter needs per-pod data (from
// CycleState, or computed from the pod): the framework calls
// PrepareFilter once per pod and then the returned NodeFilter on each
// node, instead of Filter, so that the data is read once per pod rather
// than once per node. The NodeFilter must answer as Filter would with the
// same state and pod; it may be called concurrently. It must also keep
// answering so while the pods on the nodes change and the state follows
// them through the PodPreFilterExtensions: preemption's victim search
// prepares once per candidate node and then takes pods off the node and
// puts them back. So prepare only what is the pod's own (its requests,
// its parsed affinity), and read what the extensions update at each
// call.
type FilterPreparer interface {
	FilterPlugin
	PrepareFilter(ctx context.Context, state *CycleState, pod *v1.Pod) NodeFilter
}

// PreScorePlugin runs once per pod before Score, with the nodes that
// passed Filter.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// NodeScore is a node's score from one plugin.
type NodeScore struct {
	Name  string
	Score int64
}

// ScorePlugin ranks the nodes that passed Filter. Scores are in
// [MinNodeScore, MaxNodeScore], after NormalizeScore when ScoreExtensions
// is not nil.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, node *NodeInfo) (int64, *Status)
	// ScoreExtensions returns nil when the plugin needs no normalisation.
	ScoreExtensions() ScoreExtensions
}

// NodeScorer is a ScorePlugin's Score bound to one pod and cycle state.
type NodeScorer func(ctx context.Context, node *NodeInfo) (int64, *Status)

// ScorePreparer is to Score what FilterPreparer is to Filter: the
// framework calls PrepareScore once per pod and then the returned
// NodeScorer on each node, which must answer as Score would.
type ScorePreparer interface {
	ScorePlugin
	PrepareScore(ctx context.Context, state *CycleState, pod *v1.Pod) NodeScorer
}

// ScoreExtensions normalises a plugin's scores across nodes.
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores []NodeScore) *Status
}

// ReservePlugin is told when a pod is tentatively placed on a node in
// this cycle (Reserve) and when that is undone (Unreserve, also after a
// failed bind). Unreserve must be idempotent and must not fail.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// PermitPlugin decides, once per job after every pending task was tried,
// whether the placements found may be bound. placements maps each placed
// pod's UID to its node. This is where all-or-nothing is enforced: a
// rejection unreserves every placement and binds nothing.
type PermitPlugin interface {
	Plugin
	Permit(ctx context.Context, state *CycleState, job *Job, placements map[string]string) *Status
}

// PostFilterPlugin runs when a cycle found no placement for its job: the
// Filter plugins left a pod without a node, or Permit rejected the
// placements (a gang below its quorum). It may make room for the job,
// typically by evicting other pods through the RoomMaker it is handed, and
// says what it did in its result's Message, which ends each pending pod's
// unschedulable message. The job is parked as unschedulable whatever the
// plugins do; the room they make (the victims' deletion) brings it back.
//
// The plugins run in the profile's order. Success (room is being made)
// and an error end the phase; a rejection hands on to the next plugin.
// Preemption by priority is one such plugin (DefaultPreemption); reclaim
// of capacity lent between queues is another of the same kind.
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, job *Job, room RoomMaker) (*PostFilterResult, *Status)
}

// PostFilterResult is what a PostFilter plugin did.
type PostFilterResult struct {
	// Message ends each pending pod's unschedulable message, e.g.
	// "preemption: preempting 3 pods of lower priority"; empty for
	// nothing to say.
	Message string
}

// ReservePolicy is what a reservation waits by.
type ReservePolicy struct {
	// Now is the time the estimates are made at.
	Now time.Time
	// End returns when the running pod of t is expected to end; false
	// when nothing says.
	End func(t *TaskInfo) (time.Time, bool)
	// Defer, when set, is asked about each running pod of another job:
	// if it holds for one, the job is better served by evicting (a pod
	// of lower priority it may preempt, say) and nothing is reserved
	// (Reservation.Deferred).
	Defer func(t *TaskInfo) bool
	// WaitOnly, when set, bounds the running pods the job may wait for
	// (those of its own queue, when its queue would exceed its fair
	// share with the job started): the others' room is not its to hold.
	WaitOnly func(t *TaskInfo) bool
	// Probe, when set, only finds when and where the job could start:
	// nothing is nominated or held (a job that waits without holding
	// room, a single pod say).
	Probe bool
}

// Reservation is the room held for a job until running pods end.
type Reservation struct {
	// Fits: the job can start once the WaitFor pods have ended; false
	// when it does not fit even with every running pod gone, and nothing
	// was reserved.
	Fits bool
	// FitsNow: the job fits as the cluster is, placed differently than
	// its cycle placed it; its pods are nominated there, nothing is
	// reserved.
	FitsNow bool
	// Deferred: the policy's Defer held for a running pod; nothing was
	// tried.
	Deferred bool
	// Evicting counts the pods an earlier eviction for the job (reclaim,
	// preemption) took that are still terminating: nothing was tried, and
	// the job's nominations, which name them, are kept.
	Evicting int
	// Start is when the job is expected to start: when the last pod it
	// waits for is expected to end. StartKnown is false when one of them
	// gives no estimate.
	Start      time.Time
	StartKnown bool
	// WaitFor counts the running pods whose end the job waits for.
	WaitFor int
	// Nodes are the nodes the room is held on, sorted.
	Nodes []string
	// HeldSince is, for each of Nodes, since when the job's reservation
	// has held it without a break (set by the nominator: a re-reservation
	// that keeps a node keeps its time).
	HeldSince map[string]time.Time
	// Made is when the nominator took this reservation (and its Start)
	// in place of the job's last one.
	Made time.Time
}

// Backfills reports whether a job whose pods are expected to run at most
// runtime, started at now, ends before the reservation needs its room: a
// backfill job may use the reserved room in the meantime. Without a known
// start nothing backfills.
func (r Reservation) Backfills(now time.Time, runtime time.Duration) bool {
	return r.StartKnown && !now.Add(runtime).After(r.Start)
}

// CandidateSample bounds the victim search of MakeRoom the way
// kube-scheduler's DefaultPreemption args do (minCandidateNodesPercentage,
// minCandidateNodesAbsolute). For each pending pod that fits nowhere, the
// search starts at a random node among the n it may use, goes round them,
// and stops once it has found Limit(n) nodes where evictions make room;
// the best of those is chosen. Fewer nodes tried cost less CPU on a large
// cluster and may choose worse victims. The zero value searches every
// node.
type CandidateSample struct {
	// Percentage of the nodes, 0 to 100.
	Percentage int32
	// Absolute is the least number of nodes, whatever the percentage.
	Absolute int32
}

// Limit is how many candidate nodes the search finds among n before it
// stops: max(n × Percentage / 100, Absolute), at most n; n for the zero
// sample.
func (s CandidateSample) Limit(n int) int {
	if s == (CandidateSample{}) {
		return n
	}
	return min(n, max(n*int(s.Percentage)/100, int(s.Absolute)))
}

// Validate reports what is wrong with s, naming the field as a
// kube-scheduler configuration does.
func (s CandidateSample) Validate() error {
	switch {
	case s.Percentage < 0 || s.Percentage > 100:
		return fmt.Errorf("minCandidateNodesPercentage: %d is not between 0 and 100", s.Percentage)
	case s.Absolute < 0:
		return fmt.Errorf("minCandidateNodesAbsolute: %d is negative", s.Absolute)
	case s.Percentage == 0 && s.Absolute == 0:
		return errors.New("minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be 0")
	}
	return nil
}

// VictimBudget bounds what one MakeRoom may take from each group of pods
// (Reclaim's: the queue that borrowed). The pods the victim policy allows
// are victims only while their group's budget allows more: MakeRoom asks
// Allows before taking a job's pods from a group, with what the victims
// chosen so far (and those of earlier evictions not yet terminating)
// request, so a group loses at most one job's pods beyond its budget. A
// victim gang that must go whole counts as one job.
type VictimBudget interface {
	// Group names the group t's eviction counts against; "" for none (no
	// bound).
	Group(t *TaskInfo) string
	// Allows reports whether group, having lost taken, may lose more.
	Allows(group string, taken ResourceAmounts) bool
}

// RoomOutcome is what MakeRoom did.
type RoomOutcome struct {
	// Waiting counts the earlier victims of the job still terminating;
	// nothing else was done.
	Waiting int
	// Fits: the job can start once Victims pods are gone. With no
	// victims it fits as the cluster is, placed differently than the
	// cycle placed it; its pods are nominated there.
	Fits bool
	// Victims is how many pods are being evicted.
	Victims int
}

// BindPlugin binds pod to nodeName through the API. Returning Skip passes
// the pod to the next Bind plugin; a profile has at least one. A plugin
// whose pod may not be bound yet, for want of something outside the
// scheduler (a device its driver still prepares), returns an error that
// wraps a *BindNotReadyError (AsStatus): see there.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// BindNotReadyError says that a Bind plugin did its part but the pod may
// not be bound yet: the scheduler calls the Bind plugins again after
// RetryAfter, without counting a failed attempt and without holding one
// of its bind slots meanwhile. A Bind plugin must therefore be able to
// run again for the same pod (its earlier writes found done). How long
// waiting may last is the plugin's to decide: when it has lasted too
// long it returns another error, which fails the bind as any does.
type BindNotReadyError struct {
	// Reason says what the pod waits for.
	Reason string
	// RetryAfter is when to call the Bind plugins again (at least
	// MinBindRetry).
	RetryAfter time.Duration
}

// MinBindRetry is the shortest wait between the Bind calls of a pod whose
// bind is not ready.
const MinBindRetry = 100 * time.Millisecond

func (e *BindNotReadyError) Error() string { return "not ready to bind: " + e.Reason }

// EnqueueExtensions is an optional interface: the cluster events after
// which a job the plugin rejected may fit, each with a queueing hint that
// looks at the event's objects and says whether this occurrence may help
// (see QueueingHintFn). A plugin that does not implement it is assumed to
// care about every event; one that returns nothing is helped by no event
// (only by changes of the job's own pods, which always retry it). The
// scheduler starts only the informers the enabled plugins' events need
// (plus pods and nodes, which it always watches).
type EnqueueExtensions interface {
	EventsToRegister() []ClusterEventWithHint
}

// RoomRejecter is an optional interface of a plugin whose resolvable
// rejections (Unschedulable) mean that the job waits for room: resources
// on the nodes (NodeResourcesFit) or in its queue (Capacity), rather than
// a constraint nothing but a change of the cluster meets. Such a job is a
// candidate for anti-starvation: once it has waited long enough, jobs
// behind it in its queue stop taking the room it needs (see
// docs/queues.md).
type RoomRejecter interface {
	RejectsForRoom() bool
}

// Handle is what plugins get from the framework.
type Handle interface {
	// ClientSet reaches the API server.
	ClientSet() kubernetes.Interface
	// EventRecorder records Kubernetes events for pods.
	EventRecorder() events.EventRecorder
	// SharedInformerFactory is the factory of the scheduler's native
	// informers. A plugin takes the listers it needs from it when it is
	// built (e.g. of PersistentVolumeClaims) and registers the events of
	// those resources (EnqueueExtensions), which makes the scheduler
	// start and sync those informers before it schedules.
	SharedInformerFactory() informers.SharedInformerFactory
}

// RESTConfigProvider is an optional interface of a Handle: the client
// configuration ClientSet was made from, for a plugin that reaches an API
// ClientSet has no typed client for (this project's own resources, such
// as NodeLedgers). The scheduler's handle implements it.
type RESTConfigProvider interface {
	RESTConfig() *rest.Config
}

// SharedStore is an optional interface of a Handle. A plugin is built
// once for each profile; what must be one per scheduler (a table of the
// commits in flight to an API object, say) it keeps in the value Shared
// returns: the value stored under key, made by create on its first use
// (an error of create is returned and nothing is stored). Keys are plugin
// names. The scheduler's handle implements it; a plugin given a handle
// without it keeps its own state and says so in its documentation.
type SharedStore interface {
	Shared(key string, create func() (any, error)) (any, error)
}

// PluginFactory builds a plugin. args is the plugin's args from the
// profile's pluginConfig, or nil when it has none: for an in-tree plugin
// with typed args, its typed object of pkg/apis/config, already decoded,
// defaulted and validated (type-assert it); for any other plugin a
// *config.RawArgs of pkg/apis/config, which the plugin decodes itself
// (pkg/plugins/pluginutil.DecodeArgs). args may be shared by the
// frameworks of several profiles: a factory must not modify it.
type PluginFactory func(ctx context.Context, args runtime.Object, h Handle) (Plugin, error)
