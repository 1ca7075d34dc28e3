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

package capacity

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework/preemption"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// ReclaimName is the Reclaim plugin's name in profiles.
const ReclaimName = "Reclaim"

// ReclaimArgs are the Reclaim plugin's arguments (its pluginConfig),
// typed in the configuration API (config.ReclaimArgs). Below is the share
// a queue's waiting job reclaims up to: "FairShare" (the default), or
// "Guarantee" (only what the queue is guaranteed).
type ReclaimArgs = config.ReclaimArgs

// Reclaim takes back, for a job whose queue stays within its share with
// the job started, what other queues use above theirs: at PostFilter its
// policy (preemption.Policy) has the preemption library evict pods of
// queues above their fair share (whose queue is reclaimable), with the
// same simulation, gang rules (a victim gang never left below its
// quorum), PodDisruptionBudgets, nomination and Eviction API as
// preemption by priority. It does nothing
// while no Queue exists.
type Reclaim struct {
	guaranteeOnly bool
}

var (
	_ framework.PostFilterPlugin  = &Reclaim{}
	_ framework.EnqueueExtensions = &Reclaim{}
	_ preemption.Policy           = &Reclaim{}
)

// NewReclaim builds the plugin from its args.
func NewReclaim(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	a, err := pluginutil.TypedArgs[ReclaimArgs](ReclaimName, args)
	if err != nil {
		return nil, err
	}
	return &Reclaim{guaranteeOnly: a.Below == config.ReclaimBelowGuarantee}, nil
}

// Name implements framework.Plugin.
func (*Reclaim) Name() string { return ReclaimName }

// EventsToRegister implements framework.EnqueueExtensions: a job it
// found nothing to reclaim for may find something once the queues' shares
// move (more demand of the queues above their share, a queue changed).
func (*Reclaim) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{{Event: framework.EventQueueChange}}
}

// PostFilter implements framework.PostFilterPlugin: the preemption
// library runs the search with the plugin's policy (Bounds, Messages).
func (r *Reclaim) PostFilter(ctx context.Context, state *framework.CycleState, job *framework.Job, room framework.RoomMaker) (*framework.PostFilterResult, *framework.Status) {
	return preemption.Evaluator{Policy: r}.PostFilter(ctx, state, job, room)
}

// Bounds implements preemption.Policy: pods of the queues above their
// fair share that compete with the job's queue, each such queue giving
// back no more than its excess (reclaimBudget); nothing while the job's
// queue would exceed its share (or guarantee) with the job started.
func (r *Reclaim) Bounds(_ context.Context, job *framework.Job, room framework.RoomMaker) (preemption.SearchBounds, *framework.Status) {
	qs := job.Queues
	if qs == nil || job.Err != nil || len(job.Pending) == 0 {
		return preemption.SearchBounds{}, framework.NewStatus(framework.UnschedulableAndUnresolvable)
	}
	path := qs.Path(job.Queue)
	if len(path) == 0 {
		return preemption.SearchBounds{}, framework.NewStatus(framework.UnschedulableAndUnresolvable)
	}
	need := quorumRequest(job)
	for _, a := range path {
		bound, what := a.FairShare, "fair share"
		if r.guaranteeOnly {
			bound, what = a.Guaranteed, "guarantee"
		}
		after := sumAmounts(a.Allocated, need)
		if name, over := exceedsAll(after, bound, need); over {
			return preemption.SearchBounds{}, framework.NewStatus(framework.Unschedulable,
				fmt.Sprintf("queue %s would exceed its %s (%s %s/%s): nothing to reclaim", a.Name, what, name,
					framework.FormatAmount(name, after[name]), framework.FormatAmount(name, bound[name])))
		}
	}
	b := &reclaimBudget{room: room, qs: qs, path: path, need: need}
	policy := func(t *framework.TaskInfo) bool {
		v := b.competitor(t)
		return v != nil && overShare(v, need, nil)
	}
	return preemption.SearchBounds{Victims: policy, Budget: b}, nil
}

// Messages implements preemption.Policy.
func (*Reclaim) Messages(job *framework.Job) preemption.Messages {
	return preemption.Messages{
		Action:    "reclaim",
		Waiting:   "reclaim: waiting for %d reclaimed pods to terminate",
		Unhelpful: "no queue above its fair share whose pods' eviction makes room",
		Evicting:  "reclaim: queue " + job.Queue + " takes back %d pods from queues above their fair share",
	}
}

// reclaimBudget is the victim budget of one reclaim: a pod's group is the
// queue that competes with the reclaimer's for it (see competitor), and a
// group may lose pods while it is still above its fair share once what it
// is giving back (terminating pods, victims chosen) is gone. So however
// many jobs wait, the queues above their share lose about their excess,
// not more.
type reclaimBudget struct {
	room framework.RoomMaker
	qs   *framework.QueueSnapshot
	// path is the reclaimer's queue and its ancestors, root first.
	path []*framework.QueueState
	need framework.ResourceAmounts
}

// competitor returns the queue through which t's job competes with the
// reclaimer's: of the victim's queue and its ancestors, the one that is a
// sibling of the reclaimer's queue or of one of its ancestors. It is nil
// when the job is unknown, in the reclaimer's own queue, or when that
// queue or the victim's own may not be reclaimed from.
func (b *reclaimBudget) competitor(t *framework.TaskInfo) *framework.QueueState {
	j, ok := b.room.Job(t.Job)
	if !ok {
		return nil
	}
	vpath := b.qs.Path(j.QueueName())
	if len(vpath) == 0 || !vpath[len(vpath)-1].Reclaimable {
		return nil
	}
	for i := 0; i < len(vpath) && i < len(b.path); i++ {
		if vpath[i].Name == b.path[i].Name {
			continue
		}
		if !vpath[i].Reclaimable {
			return nil
		}
		return vpath[i]
	}
	return nil
}

// Group implements framework.VictimBudget.
func (b *reclaimBudget) Group(t *framework.TaskInfo) string {
	if v := b.competitor(t); v != nil {
		return v.Name
	}
	return ""
}

// Allows implements framework.VictimBudget.
func (b *reclaimBudget) Allows(group string, taken framework.ResourceAmounts) bool {
	q, ok := b.qs.Queues[group]
	return ok && overShare(q, b.need, taken)
}

// overShare reports whether q uses more than its fair share of a resource
// need asks for, without what it is giving back (Releasing) and taken.
func overShare(q *framework.QueueState, need, taken framework.ResourceAmounts) bool {
	for name, v := range need {
		if v > 0 && q.Allocated[name]-q.Releasing[name]-taken[name] > q.FairShare[name] {
			return true
		}
	}
	return false
}

// exceedsAll returns a resource need asks for of which after exceeds
// bound (a resource bound does not name is bounded at zero).
func exceedsAll(after, bound, need framework.ResourceAmounts) (v1.ResourceName, bool) {
	for _, name := range sortedNames(need) {
		if need[name] > 0 && after[name] > bound[name] {
			return name, true
		}
	}
	return "", false
}

func sortedNames(a framework.ResourceAmounts) []v1.ResourceName {
	return slices.Sorted(maps.Keys(a))
}
