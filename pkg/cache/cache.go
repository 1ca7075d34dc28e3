package cache

import (
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

// Errors wrapped by the cache's methods, for errors.Is.
var (
	// ErrNotFound: the object is not in the cache.
	ErrNotFound = errors.New("not found in the scheduler cache")
	// ErrWrongState: the object is in the cache, but not in the state the
	// call expects (e.g. AddPendingPod of a pod the cache has as bound).
	ErrWrongState = errors.New("in an unexpected state in the scheduler cache")
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
	// Clock drives the scheduling queue's backoff and timeouts. Default: the
	// real clock.
	Clock clock.WithTicker

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
	nodes, placeholders, assignedPods, pendingPods, jobs prometheus.Gauge
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
	switch {
	case opts.InitialBackoff < 0 || opts.MaxBackoff < 0 || opts.UnschedulableTimeout < 0:
		return nil, fmt.Errorf("creating scheduler cache: backoffs and timeouts must not be negative (initial backoff %v, max backoff %v, unschedulable timeout %v)",
			opts.InitialBackoff, opts.MaxBackoff, opts.UnschedulableTimeout)
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
		sizeGauges: cacheSizeGauges{
			nodes:        size.WithLabelValues(metrics.CacheNodes),
			placeholders: size.WithLabelValues(metrics.CachePlaceholderNodes),
			assignedPods: size.WithLabelValues(metrics.CacheAssignedPods),
			pendingPods:  size.WithLabelValues(metrics.CachePendingPods),
			jobs:         size.WithLabelValues(metrics.CacheJobs),
		},
		dispatchers: newDispatchStats(opts.Metrics),
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
	if len(item.info.Pods) > 0 {
		klog.V(2).InfoS("Node removed while pods are still accounted to it; keeping them on a placeholder",
			"node", klog.KObj(node), "pods", len(item.info.Pods))
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

// Job returns a clone of the job's JobInfo.
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
// pending is moved to its node; a pod it has as bound is updated.
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
// requests (in-place resize), phase and node; an unknown pod is added.
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
// lag behind the cache's.
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
// the unschedulable queue.
func (c *SchedulerCache) UpdatePendingPod(oldPod, newPod *v1.Pod) error {
	return c.setPendingPod(newPod, "updating")
}

func (c *SchedulerCache) setPendingPod(pod *v1.Pod, verb string) error {
	if pod.Spec.NodeName != "" {
		return fmt.Errorf("%s pending pod %s: %w: it is assigned to node %q", verb, klog.KObj(pod), ErrWrongState, pod.Spec.NodeName)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.tasks[pod.UID]; ok && old.Status == TaskBound {
		return fmt.Errorf("%s pending pod %s: %w: it is bound to node %q", verb, klog.KObj(pod), ErrWrongState, old.NodeName)
	}
	c.setTaskLocked(newTaskInfo(pod))
	return nil
}

// RemovePendingPod implements eventhandlers.PendingPodQueue. Like RemovePod,
// it finds the pod by UID whatever the cache holds it as.
func (c *SchedulerCache) RemovePendingPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.deleteTaskLocked(pod.UID) {
		return fmt.Errorf("removing pending pod %s: %w", klog.KObj(pod), ErrNotFound)
	}
	return nil
}

// MoveAllToActiveOrBackoffQueue implements eventhandlers.PendingPodQueue.
func (c *SchedulerCache) MoveAllToActiveOrBackoffQueue(event eventhandlers.ClusterEvent, preCheck eventhandlers.PreEnqueueCheck) {
	c.queue.MoveAllToActiveOrBackoffQueue(event, preCheck)
}

// setTaskLocked records t, replacing the task of the same pod wherever it
// was: in another job, on another node, pending or bound.
func (c *SchedulerCache) setTaskLocked(t *TaskInfo) {
	uid := t.Pod.UID
	old, existed := c.tasks[uid]
	if existed {
		if old.Job != t.Job {
			c.removeFromJobLocked(old)
		}
		if old.Status == TaskBound && !sameNode(old, t) {
			c.removeFromNodeLocked(old)
		}
		if old.Status == TaskPending {
			c.numPending--
			if t.Status != TaskPending || old.Job != t.Job {
				c.queue.podRemoved(old.Job, uid)
			}
		}
	}
	c.tasks[uid] = t
	if t.Status == TaskPending {
		c.numPending++
	}

	job, ok := c.jobs[t.Job]
	if !ok {
		job = newJobInfo(t.Job)
		c.jobs[t.Job] = job
	}
	job.setTask(t)

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

// sameNode reports whether a and b are both bound to the same node.
func sameNode(a, b *TaskInfo) bool {
	return a.Status == TaskBound && b.Status == TaskBound && a.NodeName == b.NodeName
}

// deleteTaskLocked forgets the task of the pod with uid and reports whether
// there was one.
func (c *SchedulerCache) deleteTaskLocked(uid types.UID) bool {
	t, ok := c.tasks[uid]
	if !ok {
		return false
	}
	delete(c.tasks, uid)
	c.removeFromJobLocked(t)
	switch t.Status {
	case TaskBound:
		c.removeFromNodeLocked(t)
	case TaskPending:
		c.numPending--
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
	if item.info.Placeholder && len(item.info.Pods) == 0 {
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
	c.sizeGauges.assignedPods.Set(float64(len(c.tasks) - c.numPending))
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
