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

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
)

// podFit answers, for one preemptor pod of a simulation, whether the pod
// fits on a node while the victim search takes pods off the snapshot and
// puts them back.
//
// It has two ways. When the per-pod PreFilter state that placePod computed
// over the snapshot (with every candidate victim still on its node) can be
// updated (frameworkruntime.Framework.PreFilterPodUpdatable), each check
// starts from a clone of that state and is told of every pod taken off
// or put back (the plugins' PodPreFilterExtensions), and a fit is the
// Filter plugins' verdict alone: PreFilterPod runs once per pod. Otherwise
// (a plugin that did not skip the pod lacks the extensions, e.g.
// DynamicResources, or PreFilterPod rejected the pod) each fit runs the
// per-pod PreFilter plugins again over the whole snapshot as it is, then
// Filter.
type podFit struct {
	sim *simulation
	pod *v1.Pod
	// base is the state PreFilterPod left for pod over the snapshot, which
	// checks clone; nil when the state cannot be updated and every fit
	// runs PreFilterPod again.
	base *framework.CycleState
}

// newPodFit returns pod's podFit, after placePod ran the per-pod
// PreFilter plugins for pod in sim's cycle state over the snapshot as it
// is, with status preFilter (nil when there are no such plugins).
func (sim *simulation) newPodFit(ctx context.Context, pod *v1.Pod, preFilter *framework.Status) *podFit {
	f := &podFit{sim: sim, pod: pod}
	if !preFilter.IsSuccess() {
		return f
	}
	if err := sim.c.Framework.PreFilterPodUpdatable(sim.c.State, pod); err != nil {
		klog.FromContext(ctx).V(5).Info("Victim search runs the per-pod PreFilter plugins again for each check", "pod", klog.KObj(pod), "reason", err)
		return f
	}
	f.base = sim.c.State
	return f
}

// check starts a line of checks (one candidate node's, say) from the
// snapshot as placePod saw it, before any change the checks are told of.
// Each check has its own state: what one candidate node's search took
// off or put back does not reach another's, nor the base.
func (f *podFit) check() *fitCheck {
	c := &fitCheck{f: f}
	if f.base != nil {
		c.state = f.base.Clone()
	}
	return c
}

// fitCheck is one line of checks of a podFit.
type fitCheck struct {
	f *podFit
	// state is the clone of f.base that the changes update; nil when each
	// fit runs PreFilterPod again.
	state *framework.CycleState
	// line is the Filter plugins bound to the pod and state, at the
	// first fit; nil without a state.
	line *frameworkruntime.FitLine
}

// removed tells c that t has left node in the snapshot (node no longer
// holds it).
func (c *fitCheck) removed(ctx context.Context, t *framework.TaskInfo, node *framework.NodeInfo) error {
	if c.state == nil {
		return nil
	}
	if st := c.f.sim.c.Framework.RunPreFilterPodRemovePod(ctx, c.state, c.f.pod, t, node); !st.IsSuccess() {
		return fmt.Errorf("pre-filter state of pod %s without pod %s on node %s: %w", klog.KObj(c.f.pod), klog.KObj(t), node.Name(), st.AsError())
	}
	return nil
}

// added tells c that t is back on node in the snapshot (node holds it).
func (c *fitCheck) added(ctx context.Context, t *framework.TaskInfo, node *framework.NodeInfo) error {
	if c.state == nil {
		return nil
	}
	if st := c.f.sim.c.Framework.RunPreFilterPodAddPod(ctx, c.state, c.f.pod, t, node); !st.IsSuccess() {
		return fmt.Errorf("pre-filter state of pod %s with pod %s on node %s: %w", klog.KObj(c.f.pod), klog.KObj(t), node.Name(), st.AsError())
	}
	return nil
}

// fits reports whether the pod passes the Filter plugins on node, with
// the snapshot as it is now (and, without an updatable state, the per-pod
// PreFilter plugins run again over it first).
func (c *fitCheck) fits(ctx context.Context, node *framework.NodeInfo) (bool, error) {
	sim := c.f.sim
	if c.state == nil {
		return sim.c.Framework.PodFitsOn(ctx, sim.c.State, c.f.pod, sim.snapshot.NodeInfos(), node, true)
	}
	if c.line == nil {
		c.line = sim.c.Framework.NewFitLine(ctx, c.state, c.f.pod)
	}
	return c.line.Fits(ctx, node)
}
