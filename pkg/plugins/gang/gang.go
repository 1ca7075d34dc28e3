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

package gang

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "Gang"

// Gang enforces min-available at PreFilter and Permit.
type Gang struct{}

var (
	_ framework.PreFilterPlugin   = &Gang{}
	_ framework.QuorumPermit      = &Gang{}
	_ framework.EnqueueExtensions = &Gang{}
)

// New is the plugin's framework.PluginFactory. It takes no args.
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeNoArgs(Name, args); err != nil {
		return nil, err
	}
	return &Gang{}, nil
}

// Name implements framework.Plugin.
func (*Gang) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions. A gang this
// plugin rejected in PreFilter waits for pods of its own (more of them, or
// a quorum declared or fixed on them), and any change of the job's pending
// pods retries it anyway. One rejected in Permit could not place its
// quorum; when some of its pods found no node, the plugins that rejected
// them registered what may help. The one event registered here is a grant
// that grew (two-level scheduling) where one of its pods fits: a gang
// larger than its grants is the case the allocator grows them for. The
// other is a change of the object that defines the job's own gang
// (framework.EventGangGroupChange): a gang waiting for its PodGroup, or
// rejected because the PodGroup disagrees with its pods, retries then.
func (*Gang) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventGrantIncrease, QueueingHintFn: pluginutil.CapHint},
		{Event: framework.EventGangGroupChange, QueueingHintFn: ownGroupHint},
	}
}

// ownGroupHint queues a job when the object that defines its own gang (a
// PodGroup of any dialect, or its Job) appeared, changed or went away:
// that is what a gang waiting for its PodGroup, or rejected for a quorum
// that conflicts with it, waits for.
func ownGroupHint(_ klog.Logger, job *framework.QueuedJob, _, newObj any) (framework.QueueingHint, error) {
	change, ok := newObj.(*framework.GangGroupChange)
	if !ok {
		return framework.Queue, fmt.Errorf("gang group event with a %T, want a *framework.GangGroupChange", newObj)
	}
	if change.Job == job.ID {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// PreFilter implements framework.PreFilterPlugin: the job must declare a
// usable quorum (framework.JobInfo.ValidationError says what is wrong),
// and have at least that many tasks, pending or bound.
func (*Gang) PreFilter(ctx context.Context, _ *framework.CycleState, job *framework.Job) *framework.Status {
	if job.Err != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, job.Err.Error())
	}
	exist := len(job.Pending) + job.Bound
	if int64(exist) >= int64(job.MinAvailable) {
		return subGroupsExist(ctx, job)
	}
	klog.FromContext(ctx).V(4).Info("Gang is waiting for tasks", "job", job.ID.String(), "tasks", exist, "minAvailable", job.MinAvailable)
	return framework.NewStatus(framework.Unschedulable,
		fmt.Sprintf("waiting for tasks: %d of min-available %d exist", exist, job.MinAvailable))
}

// Permit implements framework.PermitPlugin: the tasks placed in this cycle
// plus the bound ones must reach min-available. A job without a usable
// quorum is never permitted, whatever PreFilter did.
func (*Gang) Permit(ctx context.Context, _ *framework.CycleState, job *framework.Job, placements map[string]string) *framework.Status {
	if job.Err != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, job.Err.Error())
	}
	running := len(placements) + job.Bound
	if job.MinAvailable > 0 && int64(running) >= int64(job.MinAvailable) {
		return subGroupsPermit(ctx, job, placements)
	}
	total := len(job.Pending) + job.Bound
	kind := "gang"
	if !job.ID.Gang {
		kind = "job"
	}
	klog.FromContext(ctx).V(3).Info("Gang could not be placed", "job", job.ID.String(),
		"placed", len(placements), "bound", job.Bound, "tasks", total, "minAvailable", job.MinAvailable)
	msg := fmt.Sprintf("%s %s: %d of %d tasks could be placed, min-available %d", kind, job.ID, running, total, job.MinAvailable)
	if job.Untried > 0 {
		msg += fmt.Sprintf(" (%d not tried once a task fit nowhere)", job.Untried)
	}
	return framework.NewStatus(framework.Unschedulable, msg)
}

// OutOfReach implements framework.QuorumPermit: the bound tasks, the
// placed ones and all those left cannot make min-available. A multi-level
// gang is judged by Permit alone (its sub-groups are placed apart).
func (*Gang) OutOfReach(job *framework.Job, placed, left int) bool {
	if len(job.SubGroups) > 0 || job.MinAvailable <= 0 {
		return false
	}
	return int64(job.Bound+placed+left) < int64(job.MinAvailable)
}

// subGroupsExist checks, for a multi-level gang, that each rule has
// enough sub-groups with enough pods to reach its quorum in sub-groups.
func subGroupsExist(ctx context.Context, job *framework.Job) *framework.Status {
	for i := range job.SubGroupRules {
		r := &job.SubGroupRules[i]
		if r.MinSubGroups <= 0 {
			continue
		}
		complete := 0
		for k := range job.SubGroups {
			g := &job.SubGroups[k]
			if g.Rule == i && g.Bound+len(g.Pending) >= int(g.MinMember) {
				complete++
			}
		}
		if complete < int(r.MinSubGroups) {
			klog.FromContext(ctx).V(4).Info("Gang is waiting for sub-groups", "job", job.ID.String(), "rule", r.Name, "complete", complete, "minSubGroups", r.MinSubGroups)
			return framework.NewStatus(framework.Unschedulable,
				fmt.Sprintf("waiting for tasks: %d of the %d sub-groups %s asks for have enough pods to reach their quorum", complete, r.MinSubGroups, ruleName(r)))
		}
	}
	return nil
}

// subGroupsPermit checks, for a multi-level gang, that each rule has at
// least its quorum of sub-groups at their own quorum with placements.
// The scheduler never leaves a sub-group placed below its quorum (it
// undoes such a sub-group's placements), so this is the whole's level.
func subGroupsPermit(ctx context.Context, job *framework.Job, placements map[string]string) *framework.Status {
	if len(job.SubGroupRules) == 0 {
		return nil
	}
	held := framework.SubGroupsAtQuorum(job, placements)
	for i := range job.SubGroupRules {
		r := &job.SubGroupRules[i]
		if int(r.MinSubGroups) <= held[i] {
			continue
		}
		total := 0
		for k := range job.SubGroups {
			if job.SubGroups[k].Rule == i {
				total++
			}
		}
		klog.FromContext(ctx).V(3).Info("Gang could not place enough sub-groups", "job", job.ID.String(),
			"rule", r.Name, "atQuorum", held[i], "subGroups", total, "minSubGroups", r.MinSubGroups)
		return framework.NewStatus(framework.Unschedulable,
			fmt.Sprintf("gang %s: %d of %d sub-groups could reach their quorum, %s asks for %d", job.ID, held[i], total, ruleName(r), r.MinSubGroups))
	}
	return nil
}

// ruleName names a sub-group rule for messages.
func ruleName(r *framework.SubGroupRule) string {
	if r.Name != "" {
		return fmt.Sprintf("sub-group rule %s of %s", framework.QuoteValue(r.Name), r.Source)
	}
	return r.Source
}
