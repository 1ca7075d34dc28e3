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

package runtime

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// podPreFilterRunKey holds the last run of the PodPreFilter plugins in a
// state (podPreFilterRun): for which pod, whether every plugin ran to
// success or Skip, and which did not skip. The PodPreFilterExtensions may only
// update a state so written.
const podPreFilterRunKey framework.StateKey = "framework.batch-scheduler.io/pod-pre-filter-run"

// podPreFilterRun is what RunPreFilterPodPlugins leaves under
// podPreFilterRunKey. It is not changed once written, so clones share it.
type podPreFilterRun struct {
	pod *v1.Pod
	// succeeded: no plugin rejected the pod or failed, so each plugin
	// either wrote its state for pod or skipped it.
	succeeded bool
	// update are the indices (in Framework.preFilterPod) of the plugins
	// that did not skip pod, whose state the updates change.
	update []int
	// missing names the first plugin of update without
	// PodPreFilterExtensions, "" when all have them.
	missing string
}

// Clone implements framework.StateData.
func (r *podPreFilterRun) Clone() framework.StateData { return r }

// newPodPreFilterRun records a run of the PodPreFilter plugins for pod
// that succeeded or not, in which the plugins of skip returned Skip.
func (f *Framework) newPodPreFilterRun(pod *v1.Pod, succeeded bool, skip sets.Set[string]) *podPreFilterRun {
	r := &podPreFilterRun{pod: pod, succeeded: succeeded}
	if !succeeded {
		return r
	}
	for i, pl := range f.preFilterPod {
		if skip.Has(pl.Name()) {
			continue
		}
		r.update = append(r.update, i)
		if f.preFilterPodExt[i] == nil && r.missing == "" {
			r.missing = pl.Name()
		}
	}
	return r
}

// errNoPodPreFilterRun says that the PodPreFilter plugins did not run to
// success for the pod in the state, so there is no state to update.
var errNoPodPreFilterRun = errors.New("the PodPreFilter plugins have not run to success for this pod in this state")

// PreFilterPodUpdatable reports, as nil, whether the state the PodPreFilter
// plugins left for pod in state can be updated by the pods that leave or
// join nodes (RunPreFilterPodAddPod, RunPreFilterPodRemovePod) instead of
// running RunPreFilterPodPlugins again: they last ran for pod in state,
// none rejected it, and every plugin that did not skip it implements
// framework.PodPreFilterExtensions. Otherwise the error says why; the
// caller then runs the PodPreFilter plugins again over the changed nodes.
// Without PodPreFilter plugins there is nothing to update, which is
// always possible.
func (f *Framework) PreFilterPodUpdatable(state *framework.CycleState, pod *v1.Pod) error {
	_, err := f.updatableRun(state, pod)
	return err
}

// updatableRun returns the run of the PodPreFilter plugins recorded in
// state if its state can be updated for pod (see PreFilterPodUpdatable);
// nil and no error when there are no PodPreFilter plugins.
func (f *Framework) updatableRun(state *framework.CycleState, pod *v1.Pod) (*podPreFilterRun, error) {
	if len(f.preFilterPod) == 0 {
		return nil, nil
	}
	var run *podPreFilterRun
	if d, ok := state.Read(podPreFilterRunKey); ok {
		run, _ = d.(*podPreFilterRun)
	}
	if run == nil || run.pod != pod || !run.succeeded {
		return nil, fmt.Errorf("pod %s: %w", klog.KObj(pod), errNoPodPreFilterRun)
	}
	if run.missing != "" {
		return nil, fmt.Errorf("pod %s: plugin %q did not skip it and has no PodPreFilterExtensions", klog.KObj(pod), run.missing)
	}
	return run, nil
}

// RunPreFilterPodAddPod tells each PodPreFilter plugin that did not skip
// pod, in order, that added joined node (which already holds it), so that
// it updates the state it wrote for pod (see
// framework.PodPreFilterExtensions). It is an Error when the state cannot
// be updated (see PreFilterPodUpdatable) and when a plugin fails; the
// status then names the plugin. Plugins that skipped pod have nothing to
// update: the caller only puts back pods it took off the nodes since
// RunPreFilterPodPlugins, under which a Skip stays true.
func (f *Framework) RunPreFilterPodAddPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, added *framework.TaskInfo, node *framework.NodeInfo) *framework.Status {
	return f.runPodPreFilterUpdate(ctx, state, pod, added, node, true)
}

// RunPreFilterPodRemovePod is RunPreFilterPodAddPod for removed, which
// has left node (node no longer holds it).
func (f *Framework) RunPreFilterPodRemovePod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, removed *framework.TaskInfo, node *framework.NodeInfo) *framework.Status {
	return f.runPodPreFilterUpdate(ctx, state, pod, removed, node, false)
}

// runPodPreFilterUpdate runs AddPod (add) or RemovePod of the PodPreFilter
// plugins that did not skip pod.
func (f *Framework) runPodPreFilterUpdate(ctx context.Context, state *framework.CycleState, pod *v1.Pod, t *framework.TaskInfo, node *framework.NodeInfo, add bool) *framework.Status {
	run, err := f.updatableRun(state, pod)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("updating the pre-filter state: %w", err))
	}
	if run == nil {
		return nil
	}
	for _, i := range run.update {
		pl, ext := f.preFilterPod[i], f.preFilterPodExt[i]
		var s *framework.Status
		verb := "RemovePod"
		if add {
			verb = "AddPod"
			s = ext.AddPod(ctx, state, pod, t, node)
		} else {
			s = ext.RemovePod(ctx, state, pod, t, node)
		}
		if !s.IsSuccess() {
			return pluginError(s, pl.Name(), "running %s of plugin %q for pod %s with pod %s on node %q",
				verb, pl.Name(), klog.KObj(pod), klog.KObj(t), node.Name())
		}
	}
	return nil
}
