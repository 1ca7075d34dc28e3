package cache

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/fairshare"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// queueSources are the sources of queues in the order of precedence when
// two define a queue of the same name: the project's own Queues, then
// Volcano's.
var queueSources = []string{framework.QueueSourceOwn, framework.QueueSourceVolcano}

// DefaultQueueRefresh is the default of Options.QueueRefresh.
const DefaultQueueRefresh = 200 * time.Millisecond

// queueDemandRefresh is how often, at most, the shares are recomputed
// because what queues that already ask for something ask for changed. A
// queue that starts asking (its first job waits, or a job moves to it)
// has its share recomputed at once, for that job's cycle.
const queueDemandRefresh = 50 * time.Millisecond

// A queue "starts asking" when it asked for nothing (no pod running or
// waiting) before.

// queueUsage is what the jobs of one queue use and wait for. It is kept
// for every queue name jobs name, whether or not a Queue of that name
// exists, in step with every task change (see changeJobLocked), so that a
// cycle reads it in O(queues), not O(pods).
type queueUsage struct {
	// allocated sums the requests of the tasks that use the queue's share
	// (framework.TaskInfo.UsesShare); pending those of its pending tasks;
	// releasing the part of allocated of terminating tasks.
	allocated, pending, releasing resources.Resource
	// pendingJobs and runningJobs count the jobs with at least one
	// pending task, and at least one task that uses the share.
	pendingJobs, runningJobs int
}

func (u *queueUsage) empty() bool {
	return u.pendingJobs == 0 && u.runningJobs == 0 && u.allocated.IsZero() && u.pending.IsZero()
}

func (u *queueUsage) addTask(t *framework.TaskInfo, sign int) {
	if t == nil {
		return
	}
	var to *resources.Resource
	switch {
	case t.UsesShare():
		to = &u.allocated
	case t.Status == framework.TaskPending:
		to = &u.pending
	default:
		return
	}
	add := func(to *resources.Resource) {
		if sign > 0 {
			to.Add(t.Requests)
		} else {
			to.Sub(t.Requests)
		}
	}
	add(to)
	if to == &u.allocated && t.Pod.DeletionTimestamp != nil {
		add(&u.releasing)
	}
}

func (u *queueUsage) addJob(pending, running bool, sign int) {
	if pending {
		u.pendingJobs += sign
	}
	if running {
		u.runningJobs += sign
	}
}

// queueShares is the last division of the capacity among the queues.
// Guarded by SchedulerCache.sharesMu.
type queueShares struct {
	// at is when it was computed, specGen the queueSpecGen it was computed
	// for.
	at      time.Time
	specGen int64
	// demandGen and askGen are the queueDemandGen and queueAskGen it was
	// computed for, computed when; capacity the capacity it divided,
	// recounted at most every Options.QueueRefresh (at).
	demandGen, askGen int64
	computed          time.Time
	capacity          resources.Resource
	// snap holds the shares; the usage in it is as of at, and
	// QueueSnapshot refreshes it.
	snap *framework.QueueSnapshot
}

// SetQueue records what a queue object of source (framework.QueueSourceOwn,
// framework.QueueSourceVolcano) says; spec nil forgets the queue of name. Waiting
// jobs are retried (EventQueueChange) when anything changed.
func (c *SchedulerCache) SetQueue(source, name string, spec *framework.QueueSpec) {
	if spec != nil {
		cp := *spec
		cp.API = source
		spec = &cp
	}
	c.mu.Lock()
	bySource := c.queueSpecs[source]
	old, had := bySource[name]
	if !had && spec == nil {
		c.mu.Unlock()
		return
	}
	if had && spec != nil && sameQueueSpec(old, spec) {
		c.mu.Unlock()
		return
	}
	if spec == nil {
		delete(bySource, name)
		if len(bySource) == 0 {
			delete(c.queueSpecs, source)
		}
	} else {
		if bySource == nil {
			bySource = map[string]*framework.QueueSpec{}
			c.queueSpecs[source] = bySource
		}
		bySource[name] = spec
	}
	c.queueSpecGen++
	if len(c.queueSpecs) == 0 {
		// Queues are off again: every job is equal.
		c.queue.SetQueueRanks(nil)
	}
	c.mu.Unlock()
	klog.V(2).InfoS("Queue changed", "source", source, "queue", name, "deleted", spec == nil)
	c.queue.MoveAllToActiveOrBackoffQueue(framework.EventQueueChange, nil, &framework.QueueChange{Queue: name})
}

func sameQueueSpec(a, b *framework.QueueSpec) bool {
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	return a.Name == b.Name && a.Parent == b.Parent && a.Weight == b.Weight && a.Borrow == b.Borrow &&
		a.Lend == b.Lend && a.Reclaimable == b.Reclaimable && a.Source == b.Source && a.API == b.API &&
		equalAmounts(a.Guarantee, b.Guarantee) && equalAmounts(a.Limit, b.Limit) && errText(a.Err) == errText(b.Err)
}

func equalAmounts(a, b framework.ResourceAmounts) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// changeJobLocked runs change, a change of job's task uid (or of its
// group policy, uid ""), and keeps the queues' usage in step: the task's
// old and new contribution, the job's pending and running counts and, when
// the job's queue changed (or the job is new, or gone), the whole job
// moved from one queue to the other. The caller holds mu.
func (c *SchedulerCache) changeJobLocked(job *framework.JobInfo, uid types.UID, change func()) {
	before := job.QueueAccount
	hadPending, hadRunning := job.PendingTasks() > 0, job.RunningShareTasks() > 0
	old := job.Tasks[uid]
	change()
	now := ""
	if len(job.Tasks) > 0 {
		now, _ = job.Queue()
	}
	isPending, isRunning := job.PendingTasks() > 0, job.RunningShareTasks() > 0
	if now == before {
		if now == "" {
			return
		}
		u := c.queueUsageLocked(now)
		cur := job.Tasks[uid]
		if !sameDemand(old, cur) {
			c.queueDemandGen++
			if u.allocated.IsZero() && u.pending.IsZero() {
				// The queue starts asking: its share, zero until now,
				// must be there for the cycle of this job.
				c.queueAskGen++
			}
		}
		u.addTask(old, -1)
		u.addTask(cur, 1)
		u.addJob(hadPending, hadRunning, -1)
		u.addJob(isPending, isRunning, 1)
		c.dropQueueUsageLocked(now, u)
		return
	}
	if before != "" {
		u := c.queueUsageLocked(before)
		for id, t := range job.Tasks {
			if id != uid {
				u.addTask(t, -1)
			}
		}
		u.addTask(old, -1)
		u.addJob(hadPending, hadRunning, -1)
		c.dropQueueUsageLocked(before, u)
	}
	if now != "" {
		u := c.queueUsageLocked(now)
		for _, t := range job.Tasks {
			u.addTask(t, 1)
		}
		u.addJob(isPending, isRunning, 1)
	}
	job.QueueAccount = now
	c.queueDemandGen++
	c.queueAskGen++
	c.queue.SetJobQueue(job.ID, now)
}

// sameDemand reports whether a and b ask the same of their queue:
// nothing, or the same requests, pending or running alike (placing a pod
// changes no demand).
func sameDemand(a, b *framework.TaskInfo) bool {
	asks := func(t *framework.TaskInfo) bool {
		return t != nil && (t.UsesShare() || t.Status == framework.TaskPending)
	}
	if asks(a) != asks(b) {
		return false
	}
	if !asks(a) {
		return true
	}
	x, y := &a.Requests, &b.Requests
	return x.MilliCPU == y.MilliCPU && x.Memory == y.Memory && x.EphemeralStorage == y.EphemeralStorage &&
		maps.Equal(x.Scalar, y.Scalar)
}

func (c *SchedulerCache) queueUsageLocked(name string) *queueUsage {
	u, ok := c.queueUsage[name]
	if !ok {
		u = &queueUsage{}
		c.queueUsage[name] = u
	}
	return u
}

// dropQueueUsageLocked forgets the usage of a queue no job names any more.
func (c *SchedulerCache) dropQueueUsageLocked(name string, u *queueUsage) {
	if u.empty() {
		delete(c.queueUsage, name)
	}
}

// WatchQueues implements eventhandlers.QueueCache.
func (c *SchedulerCache) WatchQueues() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queuesWatched = true
}

// QueueSnapshot returns the queues as a scheduling cycle sees them (see
// framework.QueueSnapshot), or nil while no Queue exists. The shares are
// recomputed when a queue changed, and otherwise at most every
// Options.QueueRefresh while what the queues ask for or the capacity
// moves; what the queues use is current.
func (c *SchedulerCache) QueueSnapshot() *framework.QueueSnapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.queueSnapshotLocked(false)
}

// queueSnapshotLocked is QueueSnapshot for a caller that holds mu, for
// reading or writing. It takes sharesMu. With always, it returns the
// queues even while no Queue exists (the implicit default queue alone):
// for a job that names a queue, which must then wait for it.
func (c *SchedulerCache) queueSnapshotLocked(always bool) *framework.QueueSnapshot {
	if len(c.queueSpecs) == 0 && !always {
		return nil
	}
	c.sharesMu.Lock()
	defer c.sharesMu.Unlock()
	now := c.opts.Clock.Now()
	s := c.shares
	stale := s == nil || now.Sub(s.at) >= c.opts.QueueRefresh
	demandMoved := s != nil && s.demandGen != c.queueDemandGen && now.Sub(s.computed) >= queueDemandRefresh
	if stale || demandMoved || s.specGen != c.queueSpecGen || s.askGen != c.queueAskGen {
		capacity := resources.Resource{}
		if stale {
			capacity = c.capacityLocked()
		} else {
			capacity = s.capacity
		}
		c.shares = c.computeSharesLocked(now, s, capacity)
		if !stale {
			c.shares.at = s.at
		}
		s = c.shares
	}
	return c.withUsageLocked(s.snap)
}

// effectiveSpecsLocked returns the queues in force: of every name, the
// spec of the first source in precedence, plus the implicit default
// queue when no source defines it.
func (c *SchedulerCache) effectiveSpecsLocked() []*framework.QueueSpec {
	seen := map[string]bool{}
	var out []*framework.QueueSpec
	for _, src := range queueSources {
		names := make([]string, 0, len(c.queueSpecs[src]))
		for name := range c.queueSpecs[src] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !seen[name] {
				seen[name] = true
				out = append(out, c.queueSpecs[src][name])
			}
		}
	}
	if !seen[framework.DefaultQueue] {
		out = append(out, &framework.QueueSpec{Name: framework.DefaultQueue, Weight: 1, Borrow: true, Lend: true,
			Reclaimable: true, Source: "the implicit default queue"})
	}
	return out
}

// computeSharesLocked divides the capacity among the queues (see
// pkg/fairshare), and hands the queues' order to the scheduling queue.
// prev is the last division; when a share moved, jobs that wait for
// their queue's share are retried. The caller holds mu and sharesMu.
func (c *SchedulerCache) computeSharesLocked(now time.Time, prev *queueShares, nodeCapacity resources.Resource) *queueShares {
	specs := c.effectiveSpecsLocked()
	capacity := nodeCapacity.Clone()
	// What jobs of queues that do not exist use is not the queues' to
	// share.
	valid := map[string]bool{}
	for _, sp := range specs {
		valid[sp.Name] = true
	}
	for name, u := range c.queueUsage {
		if !valid[name] {
			capacity.Sub(u.allocated)
		}
	}
	clampNegative(&capacity)

	in := make([]fairshare.Queue, 0, len(specs))
	invalid := map[string]error{}
	for _, sp := range specs {
		if sp.Err != nil {
			invalid[sp.Name] = fmt.Errorf("%s: %w", sp.Source, sp.Err)
			continue
		}
		q := fairshare.Queue{Name: sp.Name, Parent: sp.Parent, Weight: sp.Weight, Guarantee: fairshare.Vector(sp.Guarantee),
			Limit: fairshare.Vector(sp.Limit), Borrow: sp.Borrow, Lend: sp.Lend}
		if u := c.queueUsage[sp.Name]; u != nil {
			d := u.allocated.Clone()
			d.Add(u.pending)
			q.Demand = fairshare.Vector(framework.AmountsOf(d))
		}
		in = append(in, q)
	}
	res := fairshare.Compute(fairshare.Vector(framework.AmountsOf(capacity)), in)
	snap := &framework.QueueSnapshot{Capacity: framework.AmountsOf(capacity), Queues: map[string]*framework.QueueState{}, Invalid: invalid}
	for name, err := range res.Invalid {
		snap.Invalid[name] = err
	}
	for _, sp := range specs {
		sh, ok := res.Shares[sp.Name]
		if !ok {
			// A spec with an error, or left out by the computation.
			if _, bad := snap.Invalid[sp.Name]; !bad {
				snap.Invalid[sp.Name] = errors.New("left out of the division of the capacity")
			}
			continue
		}
		snap.Queues[sp.Name] = &framework.QueueState{QueueSpec: *sp, Depth: sh.Depth,
			Guaranteed: framework.ResourceAmounts(sh.Guarantee), Entitlement: framework.ResourceAmounts(sh.Entitlement),
			FairShare: framework.ResourceAmounts(sh.FairShare)}
	}
	for name, q := range snap.Queues {
		if p, ok := snap.Queues[q.Parent]; ok {
			p.Children = append(p.Children, name)
		}
	}
	for _, q := range snap.Queues {
		sort.Strings(q.Children)
	}
	out := &queueShares{at: now, computed: now, specGen: c.queueSpecGen, demandGen: c.queueDemandGen, askGen: c.queueAskGen,
		capacity: nodeCapacity, snap: snap}
	withUsage := c.withUsageLocked(snap)
	c.queue.SetQueueRanks(queueRanks(withUsage))
	if prev != nil && sharesMoved(prev.snap, snap) {
		c.queue.MoveAllToActiveOrBackoffQueue(framework.EventQueueChange, nil, &framework.QueueChange{})
	}
	return out
}

// sharesMoved reports whether any queue's fair share, or the set of
// queues, differs between a and b.
func sharesMoved(a, b *framework.QueueSnapshot) bool {
	if len(a.Queues) != len(b.Queues) || len(a.Invalid) != len(b.Invalid) {
		return true
	}
	for name, qa := range a.Queues {
		qb, ok := b.Queues[name]
		if !ok || !equalAmounts(qa.FairShare, qb.FairShare) {
			return true
		}
	}
	return false
}

// withUsageLocked returns a copy of snap with what the queues use and wait
// for now: a queue's Allocated and Pending include its subtree's. The
// caller holds mu.
func (c *SchedulerCache) withUsageLocked(snap *framework.QueueSnapshot) *framework.QueueSnapshot {
	out := &framework.QueueSnapshot{Capacity: snap.Capacity, Invalid: snap.Invalid, Queues: make(map[string]*framework.QueueState, len(snap.Queues))}
	for name, q := range snap.Queues {
		cp := *q
		cp.Allocated, cp.Pending, cp.Releasing = framework.ResourceAmounts{}, framework.ResourceAmounts{}, framework.ResourceAmounts{}
		cp.PendingJobs, cp.RunningJobs = 0, 0
		out.Queues[name] = &cp
	}
	for tenant, w := range c.queue.RoomWaiters() {
		if tenant == "" {
			tenant = framework.DefaultQueue
		}
		if q, ok := out.Queues[tenant]; ok {
			w := w
			q.FirstWaiter = &w
		}
	}
	for name, u := range c.queueUsage {
		q, ok := out.Queues[name]
		if !ok {
			continue
		}
		q.PendingJobs, q.RunningJobs = u.pendingJobs, u.runningJobs
		for hops := 0; q != nil && hops <= len(out.Queues); hops++ {
			addResource(q.Allocated, &u.allocated)
			addResource(q.Releasing, &u.releasing)
			addResource(q.Pending, &u.pending)
			q = out.Queues[q.Parent]
		}
	}
	return out
}

// addResource adds r to the amounts to, as framework.AmountsOf counts
// them (no pod count, no zero amounts).
func addResource(to framework.ResourceAmounts, r *resources.Resource) {
	add := func(name v1.ResourceName, v int64) {
		if v != 0 {
			to[name] = resources.AddSat(to[name], v)
		}
	}
	add(v1.ResourceCPU, r.MilliCPU)
	add(v1.ResourceMemory, r.Memory)
	add(v1.ResourceEphemeralStorage, r.EphemeralStorage)
	for name, v := range r.Scalar {
		add(name, v)
	}
}

// DominantUse is the largest share of fair the amounts in used take:
// max over resources of used/fair; +Inf where something is used of a
// resource whose fair share is 0, and 0 when nothing is used.
func DominantUse(used, fair framework.ResourceAmounts) float64 {
	return fairshare.DominantShare(fairshare.Vector(used), fairshare.Vector(fair))
}

// queueRanks orders the queues for the scheduling queue: at each level of
// the tree, the queue whose use is the smallest part of its fair share
// first, so that the queue furthest below its share is served first.
// Queues of equal use keep name order. The default queue is named "" in
// the result, as the scheduling queue names it.
func queueRanks(s *framework.QueueSnapshot) map[string]int {
	type keyed struct {
		name string
		key  []float64
	}
	all := make([]keyed, 0, len(s.Queues))
	for name := range s.Queues {
		path := s.Path(name)
		key := make([]float64, len(path))
		for i, q := range path {
			key[i] = DominantUse(q.Allocated, q.FairShare)
			if math.IsNaN(key[i]) {
				key[i] = math.Inf(1)
			}
		}
		all = append(all, keyed{name: name, key: key})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i].key, all[j].key
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return all[i].name < all[j].name
	})
	ranks := make(map[string]int, len(all)+1)
	for i, k := range all {
		name := k.name
		if name == framework.DefaultQueue {
			name = ""
		}
		// Rank 0 is for jobs whose queue the ranks do not name; queues
		// start at 1 so that such jobs (of queues that do not exist,
		// which only wait) go first and fail fast.
		ranks[name] = i + 1
	}
	return ranks
}

// QueueStatus is one queue as the cache sees it, for the status writer
// and the metrics: its state (nil for a queue left out) or why it is left
// out.
type QueueStatus struct {
	Name string
	// API is the API group the queue comes from, empty for the implicit
	// default queue.
	API   string
	State *framework.QueueState
	Err   error
}

// QueueStatuses returns every queue a source defines (each name once, as
// in force) and the implicit default queue, sorted by name; nil while no
// Queue exists.
func (c *SchedulerCache) QueueStatuses() []QueueStatus {
	c.mu.RLock()
	defer c.mu.RUnlock()
	snap := c.queueSnapshotLocked(false)
	if snap == nil {
		return nil
	}
	var out []QueueStatus
	for _, sp := range c.effectiveSpecsLocked() {
		st := QueueStatus{Name: sp.Name, API: sp.API, State: snap.Queues[sp.Name], Err: snap.Invalid[sp.Name]}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
