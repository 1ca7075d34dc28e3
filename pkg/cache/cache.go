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

package cache

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
)

// DefaultSchedulerName is the scheduler name used when Options names none.
const DefaultSchedulerName = "batch-scheduler"

// DefaultAssumedPodTTL is the default of Options.AssumedPodTTL.
const DefaultAssumedPodTTL = 30 * time.Second

// Errors wrapped by the cache's methods, for errors.Is.
var (
	// ErrNotFound: the object is not in the cache.
	ErrNotFound = errors.New("not found in the scheduler cache")
	// ErrWrongState: the object is in the cache, but not in the state the
	// call expects (e.g. AddPendingPod of a pod the cache has as bound).
	ErrWrongState = errors.New("in an unexpected state in the scheduler cache")
	// ErrCapacityShrank: a node's capacity for this scheduler shrank after
	// the snapshot a placement was decided on (see AssumePods).
	ErrCapacityShrank = errors.New("capacity shrank since the snapshot")
)

// Options configure a SchedulerCache. Only Client is required to Run.
type Options struct {
	// SchedulerNames are the spec.schedulerName values this scheduler is
	// responsible for. Default: ["batch-scheduler"].
	SchedulerNames []string
	// NodeSelector limits the nodes the scheduler sees. nil means all.
	NodeSelector labels.Selector
	// Client reaches the API server for the native informers.
	Client kubernetes.Interface
	// DynamicClient serves the resources the handler asks for with
	// eventhandlers.DynamicResourceRequester and
	// eventhandlers.DiscoveredResourceRequester. It may be nil if it asks
	// for none; without it, the resources the handler would like
	// discovered are not watched.
	DynamicClient dynamic.Interface
	// Discovery tells which of the resources an
	// eventhandlers.DiscoveredResourceRequester asks for the API server
	// serves. Default: Client's discovery client.
	Discovery ResourceDiscovery
	// RediscoveryPeriod is how often Run asks Discovery again, to watch
	// resources served since (a CRD installed after start-up). Default:
	// DefaultRediscoveryPeriod. Until the first discovery succeeds, it
	// is retried every 2 seconds, or every RediscoveryPeriod if shorter.
	RediscoveryPeriod time.Duration
	// ResyncPeriod of the informers; 0 disables resyncs.
	ResyncPeriod time.Duration
	// InformerFactory, when set, is the factory Run takes the native
	// informers from and starts, so that plugins can share them (the
	// framework's Handle serves it). Build it with NewInformerFactory, so
	// that it strips what the scheduler never reads. nil: Run makes its
	// own.
	InformerFactory informers.SharedInformerFactory
	// Metrics the cache (and its queue) report to. nil creates a private,
	// unregistered set, so that nothing touches a global registry.
	Metrics *metrics.Metrics
	// Clock drives the scheduling queue's backoff and timeouts and the
	// expiry of assumed pods. Default: the real clock.
	Clock clock.WithTicker
	// AssumedPodTTL is how long an assumed pod whose bind call succeeded
	// (FinishBinding) waits for the informer to report it bound before the
	// assumption is dropped and the pod is pending again. Default: 30s.
	AssumedPodTTL time.Duration

	// Resources are the resources whose cluster events the scheduler needs
	// (typically what the enabled plugins' EventsToRegister name): Run
	// starts native informers only for these (see Run). Pods and nodes are
	// always watched. nil, or a list containing WildCard, means every
	// native resource; an empty list, only pods and nodes. Entries must be
	// native resources, WildCard, or dynamic resources
	// ("<plural>.<version>.<group>"); dynamic informers are started for
	// what the event handler asks for, whatever this says (Run logs listed
	// dynamic resources that no informer serves).
	Resources []framework.EventResource

	// Queue configures the scheduling queue of pending jobs. Its Clock and
	// Metrics default to the cache's.
	Queue schedulingqueue.Options
	// Tenancy configures the tenant queues (pkg/tenancy): how often, at
	// most, the capacity they share is recounted (a walk over the nodes;
	// the ceiling of framework.Job is recounted as often), and the policy
	// that orders them. Its Clock defaults to the cache's.
	Tenancy tenancy.Options
}

// SchedulerCache is the scheduler's view of the cluster: nodes and their
// accounting, jobs and their tasks, and the scheduling queue of pending
// jobs; it feeds the tenant queues (pkg/tenancy) the jobs' usage. It implements eventhandlers.Cache, and Run feeds it from informers
// through an eventhandlers.Interface. See the package documentation for its
// locks.
type SchedulerCache struct {
	opts       Options
	schedulers map[string]bool
	queue      *schedulingqueue.SchedulingQueue
	metrics    *metrics.Metrics
	// host runs the informers that feed the handler, which feeds the
	// cache. Like the fields above, set by New only.
	host           *informerhost.Host
	expiredCounter *k8smetrics.Counter

	// mu guards the node and job state below.
	mu sync.RWMutex
	// generation counts changes to nodes; each NodeInfo records the value
	// of its last change.
	generation int64
	nodes      map[string]*nodeItem
	// headNode is the most recently changed node of the list of nodeItems.
	headNode *nodeItem
	// removedNodes logs, in generation order, the nodes that left the
	// cache, so that UpdateSnapshot can drop them without scanning the
	// snapshot. Entries at or below removedNodesFloor have been trimmed.
	removedNodes      []removedNode
	removedNodesFloor int64
	// excluded names the nodes that exist but do not match
	// Options.NodeSelector, and outside holds what is accounted to them
	// (pods bound there, external usage): kept aside, off the node list,
	// so that it is counted at once if the node starts matching, but never
	// a placeholder or part of a snapshot.
	excluded map[string]bool
	outside  map[string]*framework.NodeInfo
	tasks    map[types.UID]*framework.TaskInfo
	// jobs hold the job records: every task is in its job's record but
	// those KeepsJobRecord says have none (bound pods of other
	// schedulers, outside any gang), which jobless indexes by their job
	// instead, so that Job still answers for them (see joblessKey).
	jobs    map[framework.JobID]*framework.JobInfo
	jobless *joblessIndex
	// metaPod is lent to the matcher, under mu, with the metadata of a
	// bound task's record (see inferredLocked).
	metaPod v1.Pod
	// groupPolicies hold what group objects say about gangs (see
	// SetGroupPolicy), whether or not their jobs have pods yet.
	groupPolicies map[groupKey]*framework.GroupPolicy
	// runtimeBounds hold what batch Jobs say about when their pods end
	// (SetRuntimeBound); every task the cache builds, and every cycle
	// job, points to it. It has its own lock: mu does not guard it.
	runtimeBounds *framework.RuntimeBounds
	// matcher says which groups a pod names: the rules of the gang
	// dialects (see SetGroupMatcher; dialects.Builtin by default).
	matcher framework.GroupMatcher
	// ownerKinds are the owner kinds gangs are inferred from (see
	// SetOwnerGangs), and ownerTasks index the tasks whose pods name no
	// group explicitly by the owner object a gang of theirs is inferred
	// from, whether their job is that gang or, for an independent owner,
	// their own; taskOwner is the reverse (see indexOwnerLocked).
	ownerKinds framework.OwnerKinds
	// unlistedOwners are the owner kinds whose resource is served but may
	// not be listed: not inferred (see setOwnerKindUnavailable).
	unlistedOwners framework.OwnerKinds
	ownerTasks     map[groupKey]map[types.UID]struct{}
	taskOwner      map[types.UID]groupKey
	// ownerJobs index the gangs inferred from each owner object, so that its policy reaches them in time
	// proportional to their number, not to its pods'.
	ownerJobs map[groupKey]map[framework.JobID]struct{}
	// children index the native PodGroups that name each composite
	// (framework.GroupKindComposite) as their parent, by the composite's
	// key (see nativeChangedLocked).
	children map[groupKey]map[string]struct{}
	// assumed holds the state of every task with Status TaskAssumed.
	assumed map[types.UID]*assumedPod
	// external holds the external usage by key (see SetExternalUsage).
	external map[string]externalUsage
	// caps holds the node caps by node name (see SetNodeCap); requireCaps
	// is set by RequireNodeCaps; capExceeded names the listed nodes whose
	// cap this scheduler's pods exceed.
	caps        map[string]*resources.Resource
	requireCaps bool
	capExceeded map[string]bool
	// claimObjs are the ResourceClaims, ResourceClaimTemplates and
	// DeviceClasses the devices of pods' own claims are counted from, and
	// which tasks read which (claims.go).
	claimObjs claimObjects
	// numPlaceholders and numPending count placeholder nodes and pending
	// tasks, for the size gauges.
	numPlaceholders int
	numPending      int
	sizeGauges      cacheSizeGauges
	// tenants are the tenant queues (pkg/tenancy), fed under mu (see
	// changeJobLocked); set by New only. Their own lock nests inside mu.
	tenants *tenancy.Tenants

	// ceilingMu guards ceiling and ceilingAt. It is taken with mu held
	// (for reading or writing), or alone, and nothing is taken under it.
	ceilingMu sync.Mutex
	// ceiling is ceilingLocked as of ceilingAt (framework.Job.Ceiling).
	ceiling   framework.ResourceAmounts
	ceilingAt time.Time
	// ceilingSum is the sum of the nodes' ceilingPart, and ceilingStale
	// the nodes changed since it was counted (see ceilingLocked). Written
	// under mu held for writing, or for reading and ceilingMu.
	ceilingSum   resources.Resource
	ceilingStale []*nodeItem
	// ceilingSaturated records that ceilingSum was at the int64 range's
	// bounds when a part was taken out of it: the next count starts over.
	ceilingSaturated bool
}

var (
	_ eventhandlers.Cache             = &SchedulerCache{}
	_ eventhandlers.JobSource         = &SchedulerCache{}
	_ eventhandlers.GroupPolicyCache  = &SchedulerCache{}
	_ eventhandlers.GroupMatcherCache = &SchedulerCache{}
	_ eventhandlers.RuntimeBoundCache = &SchedulerCache{}
)

type cacheSizeGauges struct {
	nodes, placeholders, assignedPods, assumedPods, pendingPods, jobs k8smetrics.GaugeMetric
}

// New returns an empty cache configured by opts.
func New(opts Options) (*SchedulerCache, error) {
	if len(opts.SchedulerNames) == 0 {
		opts.SchedulerNames = []string{DefaultSchedulerName}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.AssumedPodTTL == 0 {
		opts.AssumedPodTTL = DefaultAssumedPodTTL
	}
	if opts.AssumedPodTTL < 0 {
		return nil, fmt.Errorf("creating scheduler cache: negative assumed pod TTL %v", opts.AssumedPodTTL)
	}
	// The informer host checks and defaults the informer options
	// (resync, rediscovery, discovery, resources) below.
	schedulers := make(map[string]bool, len(opts.SchedulerNames))
	for _, name := range opts.SchedulerNames {
		if name == "" {
			return nil, errors.New("creating scheduler cache: empty scheduler name")
		}
		schedulers[name] = true
	}
	if opts.Metrics == nil {
		m, err := metrics.New(nil)
		if err != nil {
			return nil, fmt.Errorf("creating scheduler cache: %w", err)
		}
		opts.Metrics = m
	}
	if opts.Queue.Clock == nil {
		opts.Queue.Clock = opts.Clock
	}
	if opts.Queue.Metrics == nil {
		opts.Queue.Metrics = opts.Metrics
	}
	q, err := schedulingqueue.New(opts.Queue)
	if err != nil {
		return nil, fmt.Errorf("creating scheduler cache: %w", err)
	}
	size := opts.Metrics.CacheSize
	c := &SchedulerCache{
		opts:          opts,
		schedulers:    schedulers,
		metrics:       opts.Metrics,
		queue:         q,
		nodes:         map[string]*nodeItem{},
		excluded:      map[string]bool{},
		outside:       map[string]*framework.NodeInfo{},
		tasks:         map[types.UID]*framework.TaskInfo{},
		jobs:          map[framework.JobID]*framework.JobInfo{},
		jobless:       newJoblessIndex(),
		groupPolicies: map[groupKey]*framework.GroupPolicy{},
		runtimeBounds: &framework.RuntimeBounds{},
		matcher:       dialects.Builtin(),
		ownerTasks:    map[groupKey]map[types.UID]struct{}{},
		taskOwner:     map[types.UID]groupKey{},
		ownerJobs:     map[groupKey]map[framework.JobID]struct{}{},
		children:      map[groupKey]map[string]struct{}{},
		assumed:       map[types.UID]*assumedPod{},
		external:      map[string]externalUsage{},
		caps:          map[string]*resources.Resource{},
		capExceeded:   map[string]bool{},
		claimObjs:     newClaimObjects(),
		sizeGauges: cacheSizeGauges{
			nodes:        size.WithLabelValues(metrics.CacheNodes),
			placeholders: size.WithLabelValues(metrics.CachePlaceholderNodes),
			assignedPods: size.WithLabelValues(metrics.CacheAssignedPods),
			assumedPods:  size.WithLabelValues(metrics.CacheAssumedPods),
			pendingPods:  size.WithLabelValues(metrics.CachePendingPods),
			jobs:         size.WithLabelValues(metrics.CacheJobs),
		},
		expiredCounter: opts.Metrics.AssumedPodsExpired,
	}
	if opts.Tenancy.Clock == nil {
		opts.Tenancy.Clock = opts.Clock
	}
	if c.tenants, err = tenancy.New(q, opts.Tenancy); err != nil {
		return nil, fmt.Errorf("creating scheduler cache: %w", err)
	}
	c.opts.Tenancy = opts.Tenancy
	host, err := informerhost.New(informerhost.Options{
		SchedulerNames: opts.SchedulerNames, Client: opts.Client, DynamicClient: opts.DynamicClient,
		Discovery: opts.Discovery, RediscoveryPeriod: opts.RediscoveryPeriod, ResyncPeriod: opts.ResyncPeriod,
		InformerFactory: opts.InformerFactory, Resources: opts.Resources, Metrics: opts.Metrics, Clock: opts.Clock,
		PodFilter: c.podFilter, NodeFilter: c.nodeFilter(), ClaimObserver: c.claimObserver,
		SetOwnerKindUnavailable: c.setOwnerKindUnavailable,
	})
	if err != nil {
		return nil, fmt.Errorf("creating scheduler cache: %w", err)
	}
	c.host = host
	return c, nil
}

// Queue returns the scheduling queue of pending jobs.
func (c *SchedulerCache) Queue() *schedulingqueue.SchedulingQueue { return c.queue }

// IsResponsibleFor implements eventhandlers.Cache.
func (c *SchedulerCache) IsResponsibleFor(pod *v1.Pod) bool {
	return c.schedulers[pod.Spec.SchedulerName]
}

// MoveAllToActiveOrBackoffQueue implements eventhandlers.Cache.
// An event by which the capacity may grow makes the next cycle recount
// it (see capacityGrows), so that a job it wakes is not judged by the
// count before.
func (c *SchedulerCache) MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, oldObj, newObj any) {
	if capacityGrows(event) {
		c.ceilingMu.Lock()
		c.ceiling = nil
		c.ceilingMu.Unlock()
		c.tenants.CapacityMayGrow()
	}
	c.queue.MoveAllToActiveOrBackoffQueue(event, oldObj, newObj)
}

// CycleJob returns what a scheduling cycle of job id works on, built from
// the cache's own record under one hold of its read lock: the pods still
// to be placed (pending, neither assumed nor bound) sorted by name, the
// quorum and its validation error, and how many tasks already run. The
// cache is the one home of pending pods: the queue's copy of a job only
// orders jobs and decides when to retry them. false when the cache has no
// such job or nothing of it is left to place.
func (c *SchedulerCache) CycleJob(id framework.JobID) (*framework.Job, bool) {
	c.mu.RLock()
	j, ok := c.jobs[id]
	if !ok {
		c.mu.RUnlock()
		return nil, false
	}
	out := &framework.Job{ID: id, MinAvailable: j.MinAvailable(), Err: j.ValidationError(), Bound: j.Counts().Running(),
		RuntimeBounds: c.runtimeBounds}
	subRules := j.SubGroupRules()
	var running []*v1.Pod
	for _, t := range j.Tasks {
		switch {
		case t.Status == framework.TaskPending:
			out.Pending = append(out.Pending, t.PodObject())
			if len(t.ClaimDevices) > 0 {
				if out.ClaimDevices == nil {
					out.ClaimDevices = map[types.UID]resources.Resource{}
				}
				out.ClaimDevices[t.GetUID()] = resources.Resource{Scalar: t.ClaimDevices}
			}
		case t.Counted && t.NodeName != "":
			out.PlacedNodes = append(out.PlacedNodes, t.NodeName)
			if subRules != nil {
				running = append(running, t.PodObject())
			}
		}
	}
	out.Queue, out.QueueVia = j.Queue()
	groupTopology := j.GroupTopology()
	if len(out.Pending) > 0 {
		out.Queues = c.tenants.SnapshotFor(out.Queue, c.capacityFuncLocked())
		out.Ceiling = c.ceilingAmountsLocked()
	}
	c.mu.RUnlock()
	if len(out.Pending) == 0 {
		return nil, false
	}
	// A job's pods share its namespace.
	slices.SortFunc(out.Pending, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	out.Topology, out.TopologyErr = framework.JobTopology(groupTopology, out.Pending)
	if err := framework.SplitSubGroups(out, subRules, running, out.PlacedNodes); err != nil && out.Err == nil {
		out.Err = err
	}
	return out, true
}

// Job returns a clone of the job's JobInfo: all its tasks, pending,
// assumed and bound (see JobInfo.Counts). For the pod of a job without a
// record (see KeepsJobRecord) it is built on the spot, as the record
// would be: its one task, accounted to the queue the pod names.
func (c *SchedulerCache) Job(id framework.JobID) (*framework.JobInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if j, ok := c.jobs[id]; ok {
		return j.Clone(), true
	}
	if id.Gang {
		return nil, false
	}
	t, ok := c.jobless.get(id.Namespace, id.Name)
	if !ok || t.Job != id {
		return nil, false
	}
	j := framework.NewJobInfo(id)
	j.SetTask(t)
	j.QueueAccount, _ = j.Queue()
	return j, true
}

// JobTasks returns the tasks of the gang or job with id and what the
// victim rules read of it (JobInfo.VictimFacts), without a copy of the
// job: for a caller that reads its members alone, once per candidate
// victim's gang (preemption). The tasks are shared, not copied.
func (c *SchedulerCache) JobTasks(id framework.JobID) ([]*framework.TaskInfo, framework.VictimFacts, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	j, ok := c.jobs[id]
	if !ok {
		return nil, framework.VictimFacts{}, false
	}
	tasks := make([]*framework.TaskInfo, 0, len(j.Tasks))
	for _, t := range j.Tasks {
		tasks = append(tasks, t)
	}
	return tasks, j.VictimFacts(), true
}

// TaskState returns the job and status of the task of the pod with uid,
// if the cache has one: what Job says of one task, without a copy of the
// job.
func (c *SchedulerCache) TaskState(uid types.UID) (framework.JobID, framework.TaskStatus, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tasks[uid]
	if !ok {
		return framework.JobID{}, 0, false
	}
	return t.Job, t.Status, true
}

func (c *SchedulerCache) updateSizeGaugesLocked() {
	c.sizeGauges.nodes.Set(float64(len(c.nodes) - c.numPlaceholders))
	c.sizeGauges.placeholders.Set(float64(c.numPlaceholders))
	c.sizeGauges.pendingPods.Set(float64(c.numPending))
	c.sizeGauges.assumedPods.Set(float64(len(c.assumed)))
	c.sizeGauges.assignedPods.Set(float64(len(c.tasks) - c.numPending - len(c.assumed)))
	c.sizeGauges.jobs.Set(float64(len(c.jobs)))
}
