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

// Package defaultpreemption is the DefaultPreemption plugin: at PostFilter,
// a job that found no room may evict running pods of strictly lower
// priority, as kube-scheduler's plugin of the same name does for a pod,
// here for a whole job (see docs/preemption.md).
package defaultpreemption

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework/preemption"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in profiles.
const Name = "DefaultPreemption"

// DefaultPreemption brings the policy of preemption by priority
// (preemption.Policy); the preemption library (pkg/framework/preemption)
// does the simulation, nomination and eviction.
type DefaultPreemption struct {
	// sample bounds the victim search, from the args.
	sample framework.CandidateSample
	// groupDisruption follows victim gangs' disruption modes, from the
	// args (HonorPodGroupDisruptionMode).
	groupDisruption bool
}

var (
	_ framework.PostFilterPlugin  = &DefaultPreemption{}
	_ framework.EnqueueExtensions = &DefaultPreemption{}
	_ preemption.Policy           = &DefaultPreemption{}
)

// Args are the plugin's args, kube-scheduler's DefaultPreemptionArgs,
// typed in the configuration API (config.DefaultPreemptionArgs): how many
// nodes the victim search tries for each pod that fits nowhere
// (framework.CandidateSample), and whether a victim gang whose PodGroup
// says spec.disruptionMode.single loses its pods one by one
// (SearchBounds.GroupDisruption). Unset fields take kube-scheduler's
// defaults, 10 % and 100; disruption modes are not followed by default.
type Args = config.DefaultPreemptionArgs

// Default search bounds, kube-scheduler's (the configuration API's).
const (
	DefaultMinCandidateNodesPercentage = v1alpha1.DefaultMinCandidateNodesPercentage
	DefaultMinCandidateNodesAbsolute   = v1alpha1.DefaultMinCandidateNodesAbsolute
)

// New builds the plugin from its args (Args, or none).
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	a, err := pluginutil.TypedArgs[Args](Name, args)
	if err != nil {
		return nil, err
	}
	sample := framework.CandidateSample{Percentage: a.MinCandidateNodesPercentage, Absolute: a.MinCandidateNodesAbsolute}
	if err := sample.Validate(); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	return &DefaultPreemption{sample: sample, groupDisruption: a.HonorPodGroupDisruptionMode}, nil
}

// Name implements framework.Plugin.
func (*DefaultPreemption) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions: the plugin
// rejects nothing that an event could help (the victims' deletion, which
// frees the room, is a pod event that the rejecting plugins registered).
func (*DefaultPreemption) EventsToRegister() []framework.ClusterEventWithHint { return nil }

// PostFilter makes room for job by evicting pods of strictly lower
// priority than its highest-priority pending pod (of its own queue, while
// queues exist), unless one of its pods says preemptionPolicy: Never (a
// gang is one decision, so one such pod keeps the whole gang from
// preempting). The preemption library runs the search with the plugin's
// policy (Bounds, Messages).
func (pl *DefaultPreemption) PostFilter(ctx context.Context, state *framework.CycleState, job *framework.Job, room framework.RoomMaker) (*framework.PostFilterResult, *framework.Status) {
	return preemption.Evaluator{Policy: pl}.PostFilter(ctx, state, job, room)
}

// Bounds implements preemption.Policy: pods of strictly lower priority
// (within the job's queue while queues exist), over the plugin's sample
// of the nodes.
func (pl *DefaultPreemption) Bounds(_ context.Context, job *framework.Job, room framework.RoomMaker) (preemption.SearchBounds, *framework.Status) {
	if job.Err != nil || len(job.Pending) == 0 {
		return preemption.SearchBounds{}, framework.NewStatus(framework.UnschedulableAndUnresolvable)
	}
	if !policyAllows(job.Pending) {
		return preemption.SearchBounds{}, framework.NewStatus(framework.UnschedulableAndUnresolvable, "a pod of the job has preemptionPolicy Never")
	}
	priority := jobPriority(job.Pending)
	victims := func(t *framework.TaskInfo) bool {
		if t.Priority() >= priority {
			return false
		}
		if job.Queues == nil {
			return true
		}
		// With queues, priority counts within a queue: taking from
		// another queue is Reclaim's, by its rule.
		j, ok := room.Job(t.Job)
		return ok && j.QueueName() == job.Queue
	}
	return preemption.SearchBounds{Victims: victims, Sample: pl.sample, GroupDisruption: pl.groupDisruption}, nil
}

// Messages implements preemption.Policy.
func (*DefaultPreemption) Messages(*framework.Job) preemption.Messages {
	return preemption.Messages{
		Action:    "preemption",
		Waiting:   "preemption: waiting for %d preempted pods to terminate",
		Unhelpful: "no pods of lower priority whose eviction makes room",
		Evicting:  "preemption: preempting %d pods of lower priority",
	}
}

// policyAllows reports whether no pod of pods says preemptionPolicy Never.
func policyAllows(pods []*v1.Pod) bool {
	for _, pod := range pods {
		if p := pod.Spec.PreemptionPolicy; p != nil && *p == v1.PreemptNever {
			return false
		}
	}
	return true
}

// jobPriority is the highest priority among pods, as the queue orders the
// job (framework.QueuedJob.Priority).
func jobPriority(pods []*v1.Pod) int32 {
	var p int32
	for i, pod := range pods {
		if q := corev1helpers.PodPriority(pod); i == 0 || q > p {
			p = q
		}
	}
	return p
}
