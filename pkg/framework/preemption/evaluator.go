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

package preemption

import (
	"context"
	"fmt"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Policy is what a PostFilter plugin that makes room by eviction brings:
// whether a job may make room its way, which pods may go and within what
// bounds, and how its outcome reads. The search itself (candidate nodes,
// victim order, whole victim gangs, PodDisruptionBudgets, nomination,
// eviction) is the Engine's and the same for every policy.
// DefaultPreemption's policy takes pods of lower priority within the
// job's queue; Reclaim's takes pods of queues above their fair share,
// within a budget per queue.
type Policy interface {
	// Bounds returns the bounds of job's victim search. A non-nil status
	// declines: the plugin's PostFilter returns it and nothing is
	// searched. room answers lookups of victims' jobs (RoomMaker.Job).
	Bounds(ctx context.Context, job *framework.Job, room framework.RoomMaker) (SearchBounds, *framework.Status)
	// Messages words the outcomes of job's search.
	Messages(job *framework.Job) Messages
}

// Messages word the outcomes of one search; they end the pending pods'
// unschedulable messages.
type Messages struct {
	// Action names what the plugin does ("preemption"), in errors.
	Action string
	// Waiting says that victims of the job's last search are still
	// terminating; %d is how many.
	Waiting string
	// Unhelpful is the rejection when no eviction the policy allows
	// makes room.
	Unhelpful string
	// Evicting says that victims are being evicted; %d is how many.
	Evicting string
}

// Evaluator runs a PostFilter plugin's Policy through the RoomMaker the
// scheduler hands the plugin (the Engine's): every plugin that makes room
// by eviction calls it the same way and maps its outcome to a result the
// same way.
type Evaluator struct {
	Policy Policy
}

// PostFilter implements the body of framework.PostFilterPlugin for the
// Evaluator's policy: it asks the policy for the bounds, makes room within
// them (RoomMaker.MakeRoom, or MakeRoomWithin with a budget; with a
// candidate sample, through RoomMaker.WithSample) and words the outcome:
// Success while victims are terminating or being evicted, or when the job
// fits placed differently; Unschedulable when nothing the policy allows
// makes room; an Error naming the job when the search failed.
func (e Evaluator) PostFilter(ctx context.Context, _ *framework.CycleState, job *framework.Job, room framework.RoomMaker) (*framework.PostFilterResult, *framework.Status) {
	b, st := e.Policy.Bounds(ctx, job, room)
	if st != nil {
		return nil, st
	}
	if b.Sample != (framework.CandidateSample{}) {
		room = room.WithSample(b.Sample)
	}
	if d, ok := room.(framework.DisruptionRoomMaker); ok && b.GroupDisruption {
		room = d.WithGroupDisruption()
	}
	var out framework.RoomOutcome
	var err error
	if b.Budget != nil {
		out, err = room.MakeRoomWithin(ctx, b.Victims, b.Budget)
	} else {
		out, err = room.MakeRoom(ctx, b.Victims)
	}
	m := e.Policy.Messages(job)
	switch {
	case err != nil:
		return nil, framework.AsStatus(fmt.Errorf("%s for job %s: %w", m.Action, job.ID, err))
	case out.Waiting > 0:
		return &framework.PostFilterResult{Message: fmt.Sprintf(m.Waiting, out.Waiting)}, nil
	case !out.Fits:
		return nil, framework.NewStatus(framework.Unschedulable, m.Unhelpful)
	case out.Victims == 0:
		// It fits as the cluster is, placed differently: nothing to say.
		return &framework.PostFilterResult{}, nil
	}
	return &framework.PostFilterResult{Message: fmt.Sprintf(m.Evicting, out.Victims)}, nil
}
