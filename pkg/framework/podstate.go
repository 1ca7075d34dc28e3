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

import v1 "k8s.io/api/core/v1"

// The rules below answer, once for every component, two questions about a
// pod: is it this scheduler's to track, and does it use its node's
// resources. The informer filter, the event handlers, the job model and
// the cache checker all call them, so that they cannot disagree.

// PodState says where the scheduler keeps a pod.
type PodState int

const (
	// PodUntracked: another scheduler's pending pod, or a pod that
	// finished without ever being assigned.
	PodUntracked PodState = iota
	// PodPending: waiting to be scheduled by this scheduler.
	PodPending
	// PodAssigned: bound to a node (spec.nodeName set), whoever bound it.
	PodAssigned
	// PodGated: would be pending, but has scheduling gates
	// (spec.schedulingGates). The API server refuses to bind it, so it is
	// not queued: its job is scheduled as if the pod did not exist yet.
	PodGated
)

func (s PodState) String() string {
	switch s {
	case PodPending:
		return "pending"
	case PodAssigned:
		return "assigned"
	case PodGated:
		return "gated"
	default:
		return "untracked"
	}
}

// ClassifyPod says where the scheduler keeps pod. responsible says
// whether a pod is this scheduler's to place (its schedulerName is one of
// the scheduler's profiles); it is asked only about pods not assigned.
// A nil pod is untracked.
func ClassifyPod(pod *v1.Pod, responsible func(*v1.Pod) bool) PodState {
	switch {
	case pod == nil:
		return PodUntracked
	case pod.Spec.NodeName != "":
		return PodAssigned
	case PodFinished(pod) || !responsible(pod):
		return PodUntracked
	case len(pod.Spec.SchedulingGates) > 0:
		return PodGated
	default:
		return PodPending
	}
}

// PodOfInterest reports whether the scheduler must see pod's events at
// all: it is assigned (it uses its node's resources, whoever placed it),
// or it is this scheduler's (pending, gated, or finished before it was
// bound, so that the scheduler forgets it). This is the informers' filter;
// ClassifyPod then says what to do with what passes.
func PodOfInterest(pod *v1.Pod, responsible func(*v1.Pod) bool) bool {
	return pod.Spec.NodeName != "" || responsible(pod)
}

// PodFinished reports whether pod's containers have all terminated for
// good: its phase is Succeeded or Failed.
func PodFinished(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// PodCountedOnNode reports whether pod uses its node's resources: it is
// assigned and has not finished. A terminating pod still counts, until it
// is deleted or reports a final phase.
func PodCountedOnNode(pod *v1.Pod) bool {
	return pod.Spec.NodeName != "" && !PodFinished(pod)
}
