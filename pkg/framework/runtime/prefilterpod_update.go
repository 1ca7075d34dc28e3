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
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// podPreFilterRunKey holds the last run of the PodPreFilter plugins in a
// state (podPreFilterRun): for which pod, whether every plugin ran to
// success or Skip, and which skipped. The PodPreFilterExtensions may only
// update a state so written.
const podPreFilterRunKey framework.StateKey = "framework.batch-scheduler.io/pod-pre-filter-run"

// podPreFilterRun is what RunPreFilterPodPlugins leaves under
// podPreFilterRunKey. It is not changed once written, so clones share it.
type podPreFilterRun struct {
	pod *v1.Pod
	// succeeded: no plugin rejected the pod or failed, so each plugin
	// either wrote its state for pod or skipped it.
	succeeded bool
	// skip are the plugins that returned Skip.
	skip pluginSet
}

// Clone implements framework.StateData.
func (r *podPreFilterRun) Clone() framework.StateData { return r }

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
	if len(f.preFilterPod) == 0 {
		return nil
	}
	var run *podPreFilterRun
	if d, ok := state.Read(podPreFilterRunKey); ok {
		run, _ = d.(*podPreFilterRun)
	}
	if run == nil || run.pod != pod || !run.succeeded {
		return fmt.Errorf("pod %s: %w", klog.KObj(pod), errNoPodPreFilterRun)
	}
	for i, pl := range f.preFilterPod {
		if f.preFilterPodExt[i] == nil && !run.skip.Has(pl.Name()) {
			return fmt.Errorf("pod %s: plugin %q did not skip it and has no PodPreFilterExtensions", klog.KObj(pod), pl.Name())
		}
	}
	return nil
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
	if err := f.PreFilterPodUpdatable(state, pod); err != nil {
		return framework.AsStatus(fmt.Errorf("updating the pre-filter state: %w", err))
	}
	if len(f.preFilterPod) == 0 {
		return nil
	}
	d, _ := state.Read(podPreFilterRunKey)
	skip := d.(*podPreFilterRun).skip
	for i, pl := range f.preFilterPod {
		if skip.Has(pl.Name()) {
			continue
		}
		ext := f.preFilterPodExt[i]
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
				verb, pl.Name(), klog.KObj(pod), klog.KObj(t.Pod), node.Name())
		}
	}
	return nil
}
