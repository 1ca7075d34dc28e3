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

// Package capacity holds the plugins of queues (docs/queues.md): Capacity
// keeps every queue within its limit and, for a queue that may not borrow,
// within its entitled share, and tells a job at once when it can never
// start; Reclaim, at PostFilter, takes back for a queue below its fair
// share what other queues borrowed, through the preemption library
// (pkg/framework/preemption), the same machinery DefaultPreemption uses
// with another victim rule.
package capacity

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Name is the Capacity plugin's name in profiles.
const Name = "Capacity"

// stateKey holds what the cycle reserved so far (reserved).
const stateKey framework.StateKey = Name + "/reserved"

// DefaultStarvationAfter is the default of CapacityArgs.StarvationAfter.
const DefaultStarvationAfter = 5 * time.Minute

// CapacityArgs are the Capacity plugin's arguments (its pluginConfig),
// typed in the configuration API (config.CapacityArgs). StarvationAfter
// is how long a job may wait for room before the jobs behind it in its
// queue stop starting: e.g. "5m" (the default); "0" turns anti-starvation
// off.
type CapacityArgs = config.CapacityArgs

// Capacity checks a job against its queue before it is placed
// (PreFilter), and each pod against the room its queue and the queue's
// ancestors have left (PreFilterPod), counting the pods the cycle
// reserved before it (Reserve, Unreserve). It does nothing while no Queue
// exists.
type Capacity struct {
	starvationAfter time.Duration
	// now is the clock, time.Now but in tests.
	now func() time.Time
}

var (
	_ framework.PreFilterPlugin    = &Capacity{}
	_ framework.PodPreFilterPlugin = &Capacity{}
	_ framework.ReservePlugin      = &Capacity{}
	_ framework.EnqueueExtensions  = &Capacity{}

	_ framework.PodPreFilterExtensions = &Capacity{}
)

// New builds the plugin from its args.
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	a, err := pluginutil.TypedArgs[CapacityArgs](Name, args)
	if err != nil {
		return nil, err
	}
	d, err := time.ParseDuration(a.StarvationAfter)
	if err != nil {
		// Validation parsed it already.
		return nil, fmt.Errorf("%s args: starvationAfter: %w", Name, err)
	}
	return &Capacity{starvationAfter: d, now: time.Now}, nil
}

// Name implements framework.Plugin.
func (*Capacity) Name() string { return Name }

// RejectsForRoom implements framework.RoomRejecter: a job it rejects
// (resolvably) waits for room in its queue.
func (*Capacity) RejectsForRoom() bool { return true }

// EventsToRegister implements framework.EnqueueExtensions: a queue that
// changed (created, limit raised, shares recomputed), a pod that left its
// node or was resized down (its queue's room grows), and capacity that
// grew (a job larger than the cluster may fit after all).
func (*Capacity) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventQueueChange},
		{Event: framework.EventAssignedPodDelete},
		{Event: framework.EventAssignedPodScaleDown},
		{Event: framework.EventNodeAdd},
		{Event: framework.EventNodeAllocatableChange},
		{Event: framework.EventGrantIncrease},
	}
}

// reserved is what the cycle placed so far, per queue of the job's path.
// The pods of a job are bound in parallel, and each failed bind
// unreserves its pod: mu guards the fields, and pods holds the pods
// reserved, so that Unreserve frees only what Reserve took (it must be
// idempotent).
type reserved struct {
	mu      sync.Mutex
	amounts framework.ResourceAmounts
	pods    map[types.UID]bool
}

// Clone implements StateData. Empty maps are not copied (a clone is taken
// per node the victim search tries, and most cycles reserve nothing);
// addReserved makes them when it first reserves.
func (r *reserved) Clone() framework.StateData {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &reserved{}
	if len(r.pods) > 0 {
		c.amounts, c.pods = r.amounts.Clone(), maps.Clone(r.pods)
	}
	return c
}

// PreFilter implements framework.PreFilterPlugin. It rejects, unresolvably
// until a queue changes, a job whose queue does not exist, is unusable or
// has child queues, and a job that can never start: what its quorum asks
// for exceeds the limit of its queue or of an ancestor, or everything the
// scheduler may use.
func (pl *Capacity) PreFilter(_ context.Context, state *framework.CycleState, job *framework.Job) *framework.Status {
	state.Write(stateKey, &reserved{})
	state.Write(jobKey, &jobData{job: job})
	qs := job.Queues
	if qs == nil {
		return neverFits(job)
	}
	q, ok := qs.Queues[job.Queue]
	if !ok {
		named := ""
		if job.QueueVia != "" {
			named = " (named by " + job.QueueVia + ")"
		}
		if err, bad := qs.Invalid[job.Queue]; bad {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("queue %q%s is unusable: %v", job.Queue, named, err))
		}
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("queue %q%s does not exist", job.Queue, named))
	}
	if len(q.Children) > 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("queue %q has child queues (%s); jobs go in leaf queues", q.Name, strings.Join(q.Children, ", ")))
	}
	need := quorumRequest(job)
	for _, a := range qs.Path(job.Queue) {
		if name, ok := exceeds(need, a.Limit); ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("the job can never start: it needs %s but queue %q is limited to %s", amount(name, need), a.Name, amount(name, a.Limit)))
		}
	}
	if st := neverFits(job); st != nil {
		return st
	}
	if w := q.FirstWaiter; w != nil && pl.starvationAfter > 0 && w.ID != job.ID && behind(job, w) {
		if waited := pl.now().Sub(w.Since); waited >= pl.starvationAfter {
			return framework.NewStatus(framework.Unschedulable, fmt.Sprintf("job %s of queue %s has waited %s for room; jobs behind it wait (anti-starvation)",
				w.ID, q.Name, waited.Round(time.Second)))
		}
	}
	return nil
}

// neverFits rejects a job whose quorum asks for more than the ceiling,
// what this scheduler could use with every other pod gone (Job.Ceiling):
// it cannot start whatever is evicted or finishes. A job with pods bound
// already is left alone. The verdict is retried when the ceiling may grow
// (a node added, a grant raised).
//
// Without queues only gangs are judged so: a single pod keeps
// kube-scheduler's message, which says the same per node.
func neverFits(job *framework.Job) *framework.Status {
	if job.Ceiling == nil || job.Bound > 0 || (job.Queues == nil && job.MinAvailable <= 1) {
		return nil
	}
	need := quorumRequest(job)
	name, ok := exceeds(need, job.Ceiling)
	if !ok {
		return nil
	}
	why := fmt.Sprintf("needs %s but this scheduler could use %s with every other pod gone", amount(name, need), amount(name, job.Ceiling))
	if job.ID.Gang {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable,
			fmt.Sprintf("gang %s can never start: its quorum (min-available %d) %s", job.ID, job.MinAvailable, why))
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, "the job can never start: it "+why)
}

// behind reports whether job comes after the waiter w in its queue's
// order: a lower priority, or the same and younger.
func behind(job *framework.Job, w *framework.RoomWaiter) bool {
	if job.Priority != w.Priority {
		return job.Priority < w.Priority
	}
	return job.Since.After(w.Since)
}

// quorumRequest is what the job's quorum still asks of its queue: the
// requests (and claim devices, framework.Job.QueueRequest) of the
// smallest pending pods it needs to reach MinAvailable with the pods
// already running.
func quorumRequest(job *framework.Job) framework.ResourceAmounts {
	missing := int(job.MinAvailable) - job.Bound
	if missing <= 0 {
		return framework.ResourceAmounts{}
	}
	reqs := make([]resources.Resource, len(job.Pending))
	for i, p := range job.Pending {
		reqs[i] = job.QueueRequest(p)
	}
	sort.Slice(reqs, func(i, j int) bool {
		if reqs[i].MilliCPU != reqs[j].MilliCPU {
			return reqs[i].MilliCPU < reqs[j].MilliCPU
		}
		return reqs[i].Memory < reqs[j].Memory
	})
	var sum resources.Resource
	for i := 0; i < missing && i < len(reqs); i++ {
		sum.Add(reqs[i])
	}
	return framework.AmountsOf(sum)
}

// exceeds returns a resource of need above bound, by name order; bound
// names only the resources it bounds.
func exceeds(need, bound framework.ResourceAmounts) (v1.ResourceName, bool) {
	for _, rn := range sortedNames(need) {
		if b, limited := bound[rn]; limited && need[rn] > 0 && need[rn] > b {
			return rn, true
		}
	}
	return "", false
}

func amount(name v1.ResourceName, a framework.ResourceAmounts) string {
	return string(name) + " " + framework.FormatAmount(name, a[name])
}

// PreFilterPod implements framework.PodPreFilterPlugin: pod fits its queue
// if, for the queue and each ancestor, what they use plus what the cycle
// reserved plus what pod asks of its queue (its requests and the devices
// of its own claims, framework.Job.QueueRequest) stays within the limit,
// and, for a queue
// that may not borrow, within its entitled share (at least its
// guarantee).
func (*Capacity) PreFilterPod(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	job := jobOf(state)
	if job == nil || job.Queues == nil {
		return framework.NewStatus(framework.Skip)
	}
	path := job.Queues.Path(job.Queue)
	if len(path) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	req := framework.AmountsOf(job.QueueRequest(pod))
	var cycle framework.ResourceAmounts
	if d, ok := state.Read(stateKey); ok {
		r := d.(*reserved)
		r.mu.Lock()
		cycle = r.amounts.Clone()
		r.mu.Unlock()
	}
	for _, a := range path {
		used := sumAmounts(a.Allocated, cycle)
		// Only the resources pod requests: one it does not request, over
		// the limit already, must not hide one it does.
		after := framework.ResourceAmounts{}
		for n, v := range req {
			after[n] = resources.AddSat(used[n], v)
		}
		if name, ok := exceeds(after, a.Limit); ok && req[name] > 0 {
			return framework.NewStatus(framework.Unschedulable,
				fmt.Sprintf("queue %s at its limit: %s/%s", a.Name, string(name)+" "+framework.FormatAmount(name, used[name]), framework.FormatAmount(name, a.Limit[name])))
		}
		if !a.Borrow {
			bound := framework.ResourceAmounts{}
			for n := range req {
				bound[n] = max(a.Entitlement[n], a.Guaranteed[n])
			}
			if name, ok := exceeds(after, bound); ok && req[name] > 0 {
				return framework.NewStatus(framework.Unschedulable,
					fmt.Sprintf("queue %s may not borrow beyond its share: %s/%s", a.Name, string(name)+" "+framework.FormatAmount(name, used[name]), framework.FormatAmount(name, bound[name])))
			}
		}
	}
	return nil
}

// AddPod implements framework.PodPreFilterExtensions. PreFilterPod reads
// no node, so a pod joining one changes nothing it decided; preemption's
// victim search, which updates the per-pod PreFilter state victim by
// victim, need not run it again for a job with queues.
func (*Capacity) AddPod(context.Context, *framework.CycleState, *v1.Pod, *framework.TaskInfo, *framework.NodeInfo) *framework.Status {
	return nil
}

// RemovePod implements framework.PodPreFilterExtensions; see AddPod.
func (*Capacity) RemovePod(context.Context, *framework.CycleState, *v1.Pod, *framework.TaskInfo, *framework.NodeInfo) *framework.Status {
	return nil
}

func sumAmounts(a, b framework.ResourceAmounts) framework.ResourceAmounts {
	out := a.Clone()
	for k, v := range b {
		out[k] = resources.AddSat(out[k], v)
	}
	return out
}

// Reserve implements framework.ReservePlugin: what the pod asks of its
// queue (framework.Job.QueueRequest) counts against it for the rest of
// the cycle.
func (*Capacity) Reserve(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ string) *framework.Status {
	addReserved(state, pod, 1)
	return nil
}

// Unreserve implements framework.ReservePlugin.
func (*Capacity) Unreserve(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ string) {
	addReserved(state, pod, -1)
}

func addReserved(state *framework.CycleState, pod *v1.Pod, sign int64) {
	d, ok := state.Read(stateKey)
	if !ok {
		return
	}
	r := d.(*reserved)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods[pod.UID] == (sign > 0) {
		// Reserved already, or not reserved (any more).
		return
	}
	if sign > 0 {
		if r.pods == nil {
			r.amounts, r.pods = framework.ResourceAmounts{}, map[types.UID]bool{}
		}
		r.pods[pod.UID] = true
	} else {
		delete(r.pods, pod.UID)
	}
	for k, v := range framework.AmountsOf(jobOf(state).QueueRequest(pod)) {
		r.amounts[k] += sign * v
	}
}

// jobKey holds the cycle's job for the per-pod checks.
const jobKey framework.StateKey = Name + "/job"

type jobData struct{ job *framework.Job }

func (d *jobData) Clone() framework.StateData { return d }

func jobOf(state *framework.CycleState) *framework.Job {
	d, ok := state.Read(jobKey)
	if !ok {
		return nil
	}
	return d.(*jobData).job
}

// JudgesBySpec implements framework.SpecJudge: what a pod asks of its
// queue counts the devices of its own ResourceClaims.
func (*Capacity) JudgesBySpec(pod *v1.Pod) bool { return len(pod.Spec.ResourceClaims) == 0 }
