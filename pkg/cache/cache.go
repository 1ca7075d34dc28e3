package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// DefaultSchedulerName is the scheduler name used when Options names none.
const DefaultSchedulerName = "batch-scheduler"

// DefaultAssumedPodTTL is the default of Options.AssumedPodTTL.
const DefaultAssumedPodTTL = 30 * time.Second

// assumedCleanupPeriod is how often Run's cleanup expires assumed pods.
const assumedCleanupPeriod = 1 * time.Second

// Errors wrapped by the cache's methods, for errors.Is.
var (
	// ErrNotFound: the object is not in the cache.
	ErrNotFound = errors.New("not found in the scheduler cache")
	// ErrWrongState: the object is in the cache, but not in the state the
	// call expects (e.g. AddPendingPod of a pod the cache has as bound).
	ErrWrongState = errors.New("in an unexpected state in the scheduler cache")
	// ErrAlreadyQueued: AddUnschedulable for a job that already waits (e.g.
	// a second pod of one gang whose bind failed). The job is retried
	// anyway; callers may treat it as informational.
	ErrAlreadyQueued = errors.New("already waiting in the scheduling queue")
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
	// eventhandlers.DynamicResourceRequester. It may be nil if it asks for
	// none.
	DynamicClient dynamic.Interface
	// ResyncPeriod of the informers; 0 disables resyncs.
	ResyncPeriod time.Duration
	// Metrics the cache reports to. nil creates a private, unregistered set,
	// so that nothing touches the global Prometheus registry.
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
	Resources []eventhandlers.Resource

	// InitialBackoff and MaxBackoff bound a job's exponential backoff after
	// failed attempts. Defaults: 1s and 10s.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// UnschedulableTimeout is how long a job waits in the unschedulable
	// queue before it is retried without an event. Default: 5m.
	UnschedulableTimeout time.Duration
	// QueueSort orders the active queue. Default: DefaultLess.
	QueueSort LessFunc
}

// SchedulerCache is the scheduler's view of the cluster: nodes and their
// accounting, jobs and their tasks, and the scheduling queue of pending
// jobs. It implements eventhandlers.Cache, and Run feeds it from informers
// through an eventhandlers.Interface. See the package documentation for its
// locks.
type SchedulerCache struct {
	opts       Options
	schedulers map[string]bool
	queue      *SchedulingQueue
	metrics    *metrics.Metrics
	// nativeResources are the native resources Run starts informers for;
	// nil means all of them. Like the fields above, set by New only.
	nativeResources map[eventhandlers.Resource]bool
	expiredCounter  prometheus.Counter

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
	tasks             map[types.UID]*TaskInfo
	jobs              map[JobID]*JobInfo
	// assumed holds the state of every task with Status TaskAssumed.
	assumed map[types.UID]*assumedPod
	// external holds the external usage by key (see SetExternalUsage).
	external map[string]externalUsage
	// numPlaceholders and numPending count placeholder nodes and pending
	// tasks, for the size gauges.
	numPlaceholders int
	numPending      int
	sizeGauges      cacheSizeGauges

	// dispatchers is built by New and read-only afterwards.
	dispatchers *dispatchStats

	// runMu guards the fields below, which Run and AddCustomInformer set.
	runMu           sync.Mutex
	started         bool
	customInformers []CustomInformer
	registrations   []namedRegistration
}

var _ eventhandlers.Cache = &SchedulerCache{}

type removedNode struct {
	name       string
	generation int64
}

type cacheSizeGauges struct {
	nodes, placeholders, assignedPods, assumedPods, pendingPods, jobs prometheus.Gauge
}

// assumedPod is what the cache knows about an assumed task beyond its
// TaskInfo.
type assumedPod struct {
	// pending is the pod as the informer last reported it, still pending;
	// nil once the informer stopped reporting it pending (it was bound, or
	// deleted, while its bind was in flight). Only while it is set is the
	// pod in the scheduling queue, and can the task become pending again.
	pending *v1.Pod
	// bindingFinished is set by FinishBinding; from then on the assumption
	// expires at deadline unless the informer confirms it.
	bindingFinished bool
	deadline        time.Time
}

// New returns an empty cache configured by opts.
func New(opts Options) (*SchedulerCache, error) {
	if len(opts.SchedulerNames) == 0 {
		opts.SchedulerNames = []string{DefaultSchedulerName}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.InitialBackoff == 0 {
		opts.InitialBackoff = DefaultInitialBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.UnschedulableTimeout == 0 {
		opts.UnschedulableTimeout = DefaultUnschedulableTimeout
	}
	if opts.AssumedPodTTL == 0 {
		opts.AssumedPodTTL = DefaultAssumedPodTTL
	}
	switch {
	case opts.InitialBackoff < 0 || opts.MaxBackoff < 0 || opts.UnschedulableTimeout < 0 || opts.AssumedPodTTL < 0:
		return nil, fmt.Errorf("creating scheduler cache: backoffs and timeouts must not be negative (initial backoff %v, max backoff %v, unschedulable timeout %v, assumed pod TTL %v)",
			opts.InitialBackoff, opts.MaxBackoff, opts.UnschedulableTimeout, opts.AssumedPodTTL)
	case opts.InitialBackoff > opts.MaxBackoff:
		return nil, fmt.Errorf("creating scheduler cache: initial backoff %v exceeds max backoff %v", opts.InitialBackoff, opts.MaxBackoff)
	case opts.ResyncPeriod < 0:
		return nil, fmt.Errorf("creating scheduler cache: negative resync period %v", opts.ResyncPeriod)
	}
	schedulers := make(map[string]bool, len(opts.SchedulerNames))
	for _, name := range opts.SchedulerNames {
		if name == "" {
			return nil, errors.New("creating scheduler cache: empty scheduler name")
		}
		schedulers[name] = true
	}
	nativeResources, err := nativeResourceSet(opts.Resources)
	if err != nil {
		return nil, fmt.Errorf("creating scheduler cache: %w", err)
	}
	if opts.Metrics == nil {
		m, err := metrics.New(nil)
		if err != nil {
			return nil, fmt.Errorf("creating scheduler cache: %w", err)
		}
		opts.Metrics = m
	}
	size := opts.Metrics.CacheSize
	c := &SchedulerCache{
		opts:       opts,
		schedulers: schedulers,
		metrics:    opts.Metrics,
		nodes:      map[string]*nodeItem{},
		tasks:      map[types.UID]*TaskInfo{},
		jobs:       map[JobID]*JobInfo{},
		assumed:    map[types.UID]*assumedPod{},
		external:   map[string]externalUsage{},
		sizeGauges: cacheSizeGauges{
			nodes:        size.WithLabelValues(metrics.CacheNodes),
			placeholders: size.WithLabelValues(metrics.CachePlaceholderNodes),
			assignedPods: size.WithLabelValues(metrics.CacheAssignedPods),
			assumedPods:  size.WithLabelValues(metrics.CacheAssumedPods),
			pendingPods:  size.WithLabelValues(metrics.CachePendingPods),
			jobs:         size.WithLabelValues(metrics.CacheJobs),
		},
		expiredCounter:  opts.Metrics.AssumedPodsExpired,
		nativeResources: nativeResources,
		dispatchers:     newDispatchStats(opts.Metrics),
		queue: newSchedulingQueue(queueConfig{
			clock:                opts.Clock,
			less:                 opts.QueueSort,
			initialBackoff:       opts.InitialBackoff,
			maxBackoff:           opts.MaxBackoff,
			unschedulableTimeout: opts.UnschedulableTimeout,
			metrics:              opts.Metrics,
		}),
	}
	return c, nil
}

// Queue returns the scheduling queue of pending jobs.
func (c *SchedulerCache) Queue() *SchedulingQueue { return c.queue }

// IsResponsibleFor implements eventhandlers.Cache.
func (c *SchedulerCache) IsResponsibleFor(pod *v1.Pod) bool {
	return c.schedulers[pod.Spec.SchedulerName]
}

// AddOrUpdateNode implements eventhandlers.NodeCache.
func (c *SchedulerCache) AddOrUpdateNode(node *v1.Node) error {
	if node == nil || node.Name == "" {
		return errors.New("adding node to the scheduler cache: node has no name")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.nodes[node.Name]
	if !ok {
		item = c.newNodeLocked(node.Name)
	} else if item.info.Placeholder {
		klog.V(4).InfoS("Node arrived for pods already accounted to it", "node", klog.KObj(node), "pods", len(item.info.Pods))
		c.numPlaceholders--
	}
	item.info.setNode(node)
	c.touchLocked(item)
	c.updateSizeGaugesLocked()
	return nil
}

// RemoveNode implements eventhandlers.NodeCache. A node that still has pods
// becomes a placeholder holding them.
func (c *SchedulerCache) RemoveNode(node *v1.Node) error {
	if node == nil {
		return errors.New("removing node from the scheduler cache: nil node")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.nodes[node.Name]
	if !ok || item.info.Placeholder {
		return fmt.Errorf("removing node %q: %w", node.Name, ErrNotFound)
	}
	if !item.info.empty() {
		klog.V(2).InfoS("Node removed while pods or external usage are still accounted to it; keeping them on a placeholder",
			"node", klog.KObj(node), "pods", len(item.info.Pods), "external", len(item.info.ExternalKeys))
		item.info.makePlaceholder()
		c.numPlaceholders++
		c.touchLocked(item)
	} else {
		c.deleteNodeLocked(item)
	}
	c.updateSizeGaugesLocked()
	return nil
}

// NodeIdle implements eventhandlers.NodeCache.
func (c *SchedulerCache) NodeIdle(name string) (resources.Resource, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	item, ok := c.nodes[name]
	if !ok || item.info.Placeholder {
		return resources.Resource{}, false
	}
	return item.info.Idle(), true
}

// NodeInfo returns a clone of the named node's NodeInfo, placeholders
// included.
func (c *SchedulerCache) NodeInfo(name string) (*NodeInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	item, ok := c.nodes[name]
	if !ok {
		return nil, false
	}
	return item.info.Clone(), true
}

// Job returns a clone of the job's JobInfo: all its tasks, pending,
// assumed and bound (see JobInfo.Counts).
func (c *SchedulerCache) Job(id JobID) (*JobInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	j, ok := c.jobs[id]
	if !ok {
		return nil, false
	}
	return j.Clone(), true
}

// AddPod implements eventhandlers.AssignedPodCache. A pod the cache has as
// pending is moved to its node; a pod it has as bound is updated; a pod it
// has as assumed is confirmed (see AssumePod).
func (c *SchedulerCache) AddPod(pod *v1.Pod) error {
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("adding pod %s as assigned: %w: spec.nodeName is empty", klog.KObj(pod), ErrWrongState)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setTaskLocked(newTaskInfo(pod))
	return nil
}

// UpdatePod implements eventhandlers.AssignedPodCache. It follows changes of
// requests (in-place resize), phase and node; an unknown pod is added, and
// an assumed one is confirmed.
func (c *SchedulerCache) UpdatePod(oldPod, newPod *v1.Pod) error {
	if newPod.Spec.NodeName == "" {
		return fmt.Errorf("updating assigned pod %s: %w: spec.nodeName is empty", klog.KObj(newPod), ErrWrongState)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.tasks[newPod.UID]; !ok {
		klog.V(4).InfoS("Update of a pod the cache did not have; adding it", "pod", klog.KObj(newPod), "node", newPod.Spec.NodeName)
	}
	c.setTaskLocked(newTaskInfo(newPod))
	return nil
}

// RemovePod implements eventhandlers.AssignedPodCache. The pod is found by
// UID whatever the cache holds it as: a deleted pod's last known state may
// lag behind the cache's. An assumed pod is dropped, and its node
// accounting reverted.
func (c *SchedulerCache) RemovePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.deleteTaskLocked(pod.UID) {
		return fmt.Errorf("removing pod %s: %w", klog.KObj(pod), ErrNotFound)
	}
	return nil
}

// AddPendingPod implements eventhandlers.PendingPodQueue.
func (c *SchedulerCache) AddPendingPod(pod *v1.Pod) error {
	return c.setPendingPod(pod, "adding")
}

// UpdatePendingPod implements eventhandlers.PendingPodQueue. An unknown pod
// is added. A change of anything but the pod's status moves its job out of
// the unschedulable queue. An assumed pod stays assumed, with the new
// object.
func (c *SchedulerCache) UpdatePendingPod(oldPod, newPod *v1.Pod) error {
	return c.setPendingPod(newPod, "updating")
}

func (c *SchedulerCache) setPendingPod(pod *v1.Pod, verb string) error {
	if pod.Spec.NodeName != "" {
		return fmt.Errorf("%s pending pod %s: %w: it is assigned to node %q", verb, klog.KObj(pod), ErrWrongState, pod.Spec.NodeName)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.tasks[pod.UID]; ok {
		switch old.Status {
		case TaskBound:
			return fmt.Errorf("%s pending pod %s: %w: it is bound to node %q", verb, klog.KObj(pod), ErrWrongState, old.NodeName)
		case TaskAssumed:
			c.updateAssumedLocked(old, pod)
			return nil
		}
	}
	c.setTaskLocked(newTaskInfo(pod))
	return nil
}

// RemovePendingPod implements eventhandlers.PendingPodQueue. Like RemovePod,
// it finds the pod by UID whatever the cache holds it as.
//
// An assumed pod is the exception: it stays assumed, and accounted on its
// node, and only leaves the scheduling queue. The informer stops reporting
// a pod pending when it sees the pod bound, and the default handler then
// calls RemovePendingPod and AddPod one after the other; dropping the
// assumption in between would make the node look free for a moment, and
// another pod could be placed in the same room. If the pod was in fact
// deleted, Run's dispatcher drops the assumption as soon as the handler
// has seen the delete; otherwise a failed bind (ForgetPod) or the expiry
// of the assumption drops the pod, which is not made pending again.
func (c *SchedulerCache) RemovePendingPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.tasks[pod.UID]; ok && t.Status == TaskAssumed {
		if a := c.assumed[pod.UID]; a.pending != nil {
			klog.V(4).InfoS("Assumed pod is no longer pending; keeping the assumption until the pod is reported bound",
				"pod", klog.KObj(pod), "node", t.NodeName)
			a.pending = nil
			c.queue.podRemoved(t.Job, pod.UID)
		}
		return nil
	}
	if !c.deleteTaskLocked(pod.UID) {
		return fmt.Errorf("removing pending pod %s: %w", klog.KObj(pod), ErrNotFound)
	}
	return nil
}

// MoveAllToActiveOrBackoffQueue implements eventhandlers.PendingPodQueue.
func (c *SchedulerCache) MoveAllToActiveOrBackoffQueue(event eventhandlers.ClusterEvent, preCheck eventhandlers.PreEnqueueCheck) {
	c.queue.MoveAllToActiveOrBackoffQueue(event, preCheck)
}

// AssumePod records that the scheduler placed pod on nodeName and is about
// to bind it. The pod is accounted on the node at once (its NodeInfo's
// Requested grows and its generation moves, so the next UpdateSnapshot
// sees it) and its task becomes TaskAssumed. The pod stays in the
// scheduling queue, with its job, until the informer reports it bound.
//
// Only the pod's UID is read: the cache uses its own, latest, copy of the
// pod. It fails, changing nothing, when the cache does not have the pod as
// pending (it is unknown, already assumed or bound), when nodeName is not
// a node the cache knows (or only a placeholder), or when pod's own
// spec.nodeName names another node.
//
// After a successful bind call the scheduler calls FinishBinding; after a
// failed one, ForgetPod.
func (c *SchedulerCache) AssumePod(pod *v1.Pod, nodeName string) error {
	if pod == nil {
		return errors.New("assuming pod: nil pod")
	}
	if nodeName == "" {
		return fmt.Errorf("assuming pod %s: empty node name", klog.KObj(pod))
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != nodeName {
		return fmt.Errorf("assuming pod %s on node %q: %w: its spec.nodeName is %q", klog.KObj(pod), nodeName, ErrWrongState, pod.Spec.NodeName)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tasks[pod.UID]
	if !ok {
		return fmt.Errorf("assuming pod %s on node %q: %w", klog.KObj(pod), nodeName, ErrNotFound)
	}
	switch t.Status {
	case TaskAssumed:
		return fmt.Errorf("assuming pod %s on node %q: %w: it is already assumed on node %q", klog.KObj(pod), nodeName, ErrWrongState, t.NodeName)
	case TaskBound:
		return fmt.Errorf("assuming pod %s on node %q: %w: it is bound to node %q", klog.KObj(pod), nodeName, ErrWrongState, t.NodeName)
	}
	item, ok := c.nodes[nodeName]
	if !ok {
		return fmt.Errorf("assuming pod %s on node %q: node %w", klog.KObj(pod), nodeName, ErrNotFound)
	}
	if item.info.Placeholder {
		return fmt.Errorf("assuming pod %s on node %q: node %w: it is only a placeholder for pods bound to it", klog.KObj(pod), nodeName, ErrNotFound)
	}

	at := assumedTaskInfo(t.Pod, nodeName, t.Requests)
	c.assumed[pod.UID] = &assumedPod{pending: t.Pod}
	c.tasks[pod.UID] = at
	c.numPending--
	c.jobs[t.Job].setTask(at)
	item.info.addTask(at)
	c.touchLocked(item)
	c.updateSizeGaugesLocked()
	klog.V(4).InfoS("Assumed pod", "pod", klog.KObj(pod), "node", nodeName)
	return nil
}

// FinishBinding records that the bind call for an assumed pod succeeded.
// From now on the assumption expires after Options.AssumedPodTTL unless
// the informer reports the pod bound first (see Run).
//
// A pod the informer has already reported bound, or that has been deleted
// since, needs nothing and is not an error. A pod the cache has as pending
// (never assumed, or forgotten) is.
func (c *SchedulerCache) FinishBinding(pod *v1.Pod) error {
	if pod == nil {
		return errors.New("finishing binding: nil pod")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tasks[pod.UID]
	switch {
	case !ok:
		klog.V(4).InfoS("Pod left the cache before its binding finished", "pod", klog.KObj(pod))
		return nil
	case t.Status == TaskBound:
		return nil
	case t.Status == TaskPending:
		return fmt.Errorf("finishing binding of pod %s: %w: it is pending, not assumed", klog.KObj(pod), ErrWrongState)
	}
	a := c.assumed[pod.UID]
	a.bindingFinished = true
	a.deadline = c.opts.Clock.Now().Add(c.opts.AssumedPodTTL)
	return nil
}

// ForgetPod undoes AssumePod after a failed bind: the pod is taken off its
// node and is pending again, or, if the informer has meanwhile stopped
// reporting it pending (it was deleted), leaves the cache. The job is not
// requeued: the caller ends the attempt with AddUnschedulable, which
// accepts a job awaiting binding.
//
// It fails, changing nothing, when the pod is not assumed: unknown (it
// was deleted), pending, or already reported bound by the informer (to
// the assumed node or, if another binder won, to another one).
func (c *SchedulerCache) ForgetPod(pod *v1.Pod) error {
	if pod == nil {
		return errors.New("forgetting pod: nil pod")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tasks[pod.UID]
	switch {
	case !ok:
		return fmt.Errorf("forgetting pod %s: %w", klog.KObj(pod), ErrNotFound)
	case t.Status == TaskPending:
		return fmt.Errorf("forgetting pod %s: %w: it is pending, not assumed", klog.KObj(pod), ErrWrongState)
	case t.Status == TaskBound:
		return fmt.Errorf("forgetting pod %s: %w: the informer reported it bound to node %q", klog.KObj(pod), ErrWrongState, t.NodeName)
	}
	pending := c.revertAssumedLocked(t)
	klog.V(4).InfoS("Forgot assumed pod", "pod", klog.KObj(pod), "node", t.NodeName, "pending", pending)
	return nil
}

// revertAssumedLocked takes the assumed task t off its node. It becomes
// pending again if the informer still reports the pod pending, and leaves
// the cache otherwise; the result says which. The scheduling queue is not
// told: it still holds the pod in the first case, and never did in the
// second.
func (c *SchedulerCache) revertAssumedLocked(t *TaskInfo) (pending bool) {
	uid := t.Pod.UID
	a := c.assumed[uid]
	delete(c.assumed, uid)
	c.removeFromNodeLocked(t)
	if a.pending == nil {
		delete(c.tasks, uid)
		c.removeFromJobLocked(t)
	} else {
		pt := newTaskInfo(a.pending)
		c.tasks[uid] = pt
		c.numPending++
		c.jobs[t.Job].setTask(pt)
	}
	c.updateSizeGaugesLocked()
	return a.pending != nil
}

// updateAssumedLocked replaces the pending pod behind the assumed task old
// with pod, a newer version the informer reports, keeping the assumption.
func (c *SchedulerCache) updateAssumedLocked(old *TaskInfo, pod *v1.Pod) {
	uid := pod.UID
	a := c.assumed[uid]
	prev := a.pending
	t := assumedTaskInfo(pod, old.NodeName, resources.PodRequests(pod))
	if old.Job != t.Job {
		c.removeFromJobLocked(old)
		if prev != nil {
			c.queue.podRemoved(old.Job, uid)
		}
	}
	c.tasks[uid] = t
	c.jobLocked(t.Job).setTask(t)
	item := c.nodes[t.NodeName]
	item.info.removeTask(uid)
	item.info.addTask(t)
	c.touchLocked(item)
	a.pending = pod
	relevant := prev == nil || old.Job != t.Job || schedulingRelevantChange(prev, pod)
	c.queue.podChanged(t.Job, pod, relevant)
	c.updateSizeGaugesLocked()
}

// podDeleted is called by Run's dispatcher after the event handler has
// handled the informer's delete of a pod. A pod the cache still holds as
// assumed was deleted while its bind was in flight, or before the informer
// saw it bound: its assumption is dropped (see RemovePendingPod).
func (c *SchedulerCache) podDeleted(obj any) {
	pod, ok := unwrapTombstone(obj).(*v1.Pod)
	if !ok || pod == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.tasks[pod.UID]; ok && t.Status == TaskAssumed {
		klog.V(2).InfoS("Assumed pod was deleted before it was reported bound; dropping it", "pod", klog.KObj(pod), "node", t.NodeName)
		c.deleteTaskLocked(pod.UID)
		// Its capacity is free again, as when a bound pod is deleted; the
		// handler saw a pending pod go and raised nothing.
		c.queue.MoveAllToActiveOrBackoffQueue(eventhandlers.EventAssignedPodDelete, nil)
	}
}

// cleanupAssumedPods drops the assumptions whose bind finished more than
// Options.AssumedPodTTL ago without the informer reporting the pod bound.
// Such a pod is pending again, and its job is requeued after backoff; or,
// if the informer no longer reports it pending, it leaves the cache.
func (c *SchedulerCache) cleanupAssumedPods() {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, a := range c.assumed {
		if !a.bindingFinished || now.Before(a.deadline) {
			continue
		}
		t := c.tasks[uid]
		pending := c.revertAssumedLocked(t)
		c.expiredCounter.Inc()
		klog.ErrorS(nil, "Assumed pod was not reported bound in time; dropping the assumption",
			"pod", klog.KObj(t.Pod), "node", t.NodeName, "ttl", c.opts.AssumedPodTTL, "pending", pending)
		if pending {
			c.queue.assumptionExpired(t.Job,
				fmt.Sprintf("pod %s was not reported bound to node %s within %v of its bind", t.Key(), t.NodeName, c.opts.AssumedPodTTL))
		}
	}
}

// runAssumedCleanup calls cleanupAssumedPods every second until ctx ends.
func (c *SchedulerCache) runAssumedCleanup(ctx context.Context) {
	ticker := c.opts.Clock.NewTicker(assumedCleanupPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			c.cleanupAssumedPods()
		}
	}
}

// queuedLocked reports whether the scheduling queue holds t's pod: t is
// pending, or assumed and still reported pending by the informer.
func (c *SchedulerCache) queuedLocked(t *TaskInfo) bool {
	switch t.Status {
	case TaskPending:
		return true
	case TaskAssumed:
		return c.assumed[t.Pod.UID].pending != nil
	}
	return false
}

// jobLocked returns the job id, creating it if needed.
func (c *SchedulerCache) jobLocked(id JobID) *JobInfo {
	job, ok := c.jobs[id]
	if !ok {
		job = newJobInfo(id)
		c.jobs[id] = job
	}
	return job
}

// setTaskLocked records t, a pending or bound task built from an informer
// object, replacing the task of the same pod wherever it was: in another
// job, on another node, pending, assumed or bound. A bound t confirms an
// assumed task.
func (c *SchedulerCache) setTaskLocked(t *TaskInfo) {
	uid := t.Pod.UID
	old, existed := c.tasks[uid]
	if existed {
		wasQueued := c.queuedLocked(old)
		if old.Job != t.Job {
			c.removeFromJobLocked(old)
		}
		if old.onNode() && !sameNode(old, t) {
			c.removeFromNodeLocked(old)
		}
		switch old.Status {
		case TaskPending:
			c.numPending--
		case TaskAssumed:
			delete(c.assumed, uid)
			if t.NodeName != old.NodeName {
				klog.InfoS("Assumed pod was reported bound to another node; accounting it there",
					"pod", klog.KObj(t.Pod), "assumedNode", old.NodeName, "node", t.NodeName)
			} else {
				klog.V(4).InfoS("Assumed pod was reported bound", "pod", klog.KObj(t.Pod), "node", t.NodeName)
			}
		}
		if wasQueued && (t.Status != TaskPending || old.Job != t.Job) {
			c.queue.podRemoved(old.Job, uid)
		}
	}
	c.tasks[uid] = t
	if t.Status == TaskPending {
		c.numPending++
	}
	c.jobLocked(t.Job).setTask(t)

	switch {
	case existed && sameNode(old, t):
		item := c.nodes[t.NodeName]
		item.info.removeTask(uid)
		item.info.addTask(t)
		c.touchLocked(item)
	case t.Status == TaskBound:
		c.addToNodeLocked(t)
	default:
		relevant := !existed || old.Status != TaskPending || old.Job != t.Job || schedulingRelevantChange(old.Pod, t.Pod)
		c.queue.podChanged(t.Job, t.Pod, relevant)
	}
	c.updateSizeGaugesLocked()
}

// sameNode reports whether a and b are both on (bound or assumed to) the
// same node.
func sameNode(a, b *TaskInfo) bool {
	return a.onNode() && b.onNode() && a.NodeName == b.NodeName
}

// deleteTaskLocked forgets the task of the pod with uid and reports whether
// there was one. An assumed task's node accounting is reverted.
func (c *SchedulerCache) deleteTaskLocked(uid types.UID) bool {
	t, ok := c.tasks[uid]
	if !ok {
		return false
	}
	wasQueued := c.queuedLocked(t)
	delete(c.tasks, uid)
	c.removeFromJobLocked(t)
	if t.onNode() {
		c.removeFromNodeLocked(t)
	}
	switch t.Status {
	case TaskPending:
		c.numPending--
	case TaskAssumed:
		delete(c.assumed, uid)
	}
	if wasQueued {
		c.queue.podRemoved(t.Job, uid)
	}
	c.updateSizeGaugesLocked()
	return true
}

func (c *SchedulerCache) removeFromJobLocked(t *TaskInfo) {
	job, ok := c.jobs[t.Job]
	if !ok {
		return
	}
	job.deleteTask(t.Pod.UID)
	if len(job.Tasks) == 0 {
		delete(c.jobs, t.Job)
	}
}

func (c *SchedulerCache) addToNodeLocked(t *TaskInfo) {
	item, ok := c.nodes[t.NodeName]
	if !ok {
		klog.V(4).InfoS("Pod bound to a node the cache does not know; accounting it to a placeholder",
			"pod", klog.KObj(t.Pod), "node", t.NodeName)
		item = c.newNodeLocked(t.NodeName)
		item.info.makePlaceholder()
		c.numPlaceholders++
	}
	item.info.addTask(t)
	c.touchLocked(item)
}

func (c *SchedulerCache) removeFromNodeLocked(t *TaskInfo) {
	item, ok := c.nodes[t.NodeName]
	if !ok || !item.info.removeTask(t.Pod.UID) {
		// The cache's own bookkeeping is broken if this happens.
		klog.ErrorS(nil, "Pod missing from the node the cache accounted it to", "pod", klog.KObj(t.Pod), "node", t.NodeName)
		return
	}
	if item.info.Placeholder && item.info.empty() {
		c.deleteNodeLocked(item)
		return
	}
	c.touchLocked(item)
}

// externalUsage is one entry of SetExternalUsage.
type externalUsage struct {
	node  string
	usage resources.Resource
}

// SetExternalUsage implements eventhandlers.ExternalUsageCache. Usage on a
// node the cache does not know is kept on a placeholder, as for pods.
func (c *SchedulerCache) SetExternalUsage(key, nodeName string, usage resources.Resource) error {
	if key == "" {
		return errors.New("setting external usage: empty key")
	}
	if nodeName == "" {
		return fmt.Errorf("setting external usage %q: empty node name", key)
	}
	usage = usage.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.external[key]; ok {
		if old.node == nodeName {
			item := c.nodes[nodeName]
			item.info.External.Sub(old.usage)
			item.info.External.Add(usage)
			c.external[key] = externalUsage{node: nodeName, usage: usage}
			c.touchLocked(item)
			return nil
		}
		c.removeExternalLocked(key, old)
	}
	item, ok := c.nodes[nodeName]
	if !ok {
		klog.V(4).InfoS("External usage on a node the cache does not know; accounting it to a placeholder",
			"key", key, "node", nodeName)
		item = c.newNodeLocked(nodeName)
		item.info.makePlaceholder()
		c.numPlaceholders++
	}
	c.external[key] = externalUsage{node: nodeName, usage: usage}
	item.info.External.Add(usage)
	// Copy on write: clones share the slice.
	keys := make([]string, 0, len(item.info.ExternalKeys)+1)
	keys = append(keys, item.info.ExternalKeys...)
	i, _ := slices.BinarySearch(keys, key)
	item.info.ExternalKeys = slices.Insert(keys, i, key)
	c.touchLocked(item)
	c.updateSizeGaugesLocked()
	return nil
}

// RemoveExternalUsage implements eventhandlers.ExternalUsageCache.
func (c *SchedulerCache) RemoveExternalUsage(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.external[key]
	if !ok {
		return fmt.Errorf("removing external usage %q: %w", key, ErrNotFound)
	}
	c.removeExternalLocked(key, old)
	c.updateSizeGaugesLocked()
	return nil
}

// removeExternalLocked takes the usage old of key off its node, deleting
// the node if it is a placeholder left empty.
func (c *SchedulerCache) removeExternalLocked(key string, old externalUsage) {
	delete(c.external, key)
	item, ok := c.nodes[old.node]
	if !ok {
		klog.ErrorS(nil, "External usage missing from the node the cache accounted it to", "key", key, "node", old.node)
		return
	}
	item.info.External.Sub(old.usage)
	keys := slices.Clone(item.info.ExternalKeys)
	if i, found := slices.BinarySearch(keys, key); found {
		keys = slices.Delete(keys, i, i+1)
	}
	if len(keys) == 0 {
		keys = nil
		item.info.External = resources.Resource{}
	}
	item.info.ExternalKeys = keys
	if item.info.Placeholder && item.info.empty() {
		c.deleteNodeLocked(item)
		return
	}
	c.touchLocked(item)
}

// newNodeLocked adds an empty NodeInfo for name; the caller fills it in and
// touches it.
func (c *SchedulerCache) newNodeLocked(name string) *nodeItem {
	item := &nodeItem{info: &NodeInfo{name: name}}
	c.nodes[name] = item
	return item
}

// touchLocked records a change of item's NodeInfo: a new generation, and
// the head of the list.
func (c *SchedulerCache) touchLocked(item *nodeItem) {
	c.generation++
	item.info.Generation = c.generation
	if c.headNode == item {
		return
	}
	c.unlinkLocked(item)
	item.next = c.headNode
	if c.headNode != nil {
		c.headNode.prev = item
	}
	c.headNode = item
}

func (c *SchedulerCache) unlinkLocked(item *nodeItem) {
	if item.prev != nil {
		item.prev.next = item.next
	}
	if item.next != nil {
		item.next.prev = item.prev
	}
	if c.headNode == item {
		c.headNode = item.next
	}
	item.prev, item.next = nil, nil
}

// maxRemovedNodes bounds the log of removed nodes; see UpdateSnapshot.
const maxRemovedNodes = 1024

func (c *SchedulerCache) deleteNodeLocked(item *nodeItem) {
	if item.info.Placeholder {
		c.numPlaceholders--
	}
	c.unlinkLocked(item)
	delete(c.nodes, item.info.name)
	c.generation++
	c.removedNodes = append(c.removedNodes, removedNode{name: item.info.name, generation: c.generation})
	if limit := max(maxRemovedNodes, len(c.nodes)); len(c.removedNodes) > limit {
		// Forget the older half. A snapshot older than what is forgotten
		// falls back to a full check of its nodes.
		drop := len(c.removedNodes) / 2
		c.removedNodesFloor = c.removedNodes[drop-1].generation
		c.removedNodes = slices.Delete(c.removedNodes, 0, drop)
	}
}

func (c *SchedulerCache) updateSizeGaugesLocked() {
	c.sizeGauges.nodes.Set(float64(len(c.nodes) - c.numPlaceholders))
	c.sizeGauges.placeholders.Set(float64(c.numPlaceholders))
	c.sizeGauges.pendingPods.Set(float64(c.numPending))
	c.sizeGauges.assumedPods.Set(float64(len(c.assumed)))
	c.sizeGauges.assignedPods.Set(float64(len(c.tasks) - c.numPending - len(c.assumed)))
	c.sizeGauges.jobs.Set(float64(len(c.jobs)))
}

// schedulingRelevantChange reports whether newPod differs from oldPod in
// anything the scheduler looks at: its spec, labels or annotations. Status
// updates (conditions the scheduler itself writes, for instance) are not.
func schedulingRelevantChange(oldPod, newPod *v1.Pod) bool {
	return !apiequality.Semantic.DeepEqual(oldPod.Spec, newPod.Spec) ||
		!apiequality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) ||
		!apiequality.Semantic.DeepEqual(oldPod.Annotations, newPod.Annotations)
}

// keyOf returns the informer key of obj, tombstones included, for logs.
func keyOf(obj any) string {
	key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return fmt.Sprintf("<%T>", obj)
	}
	return key
}
