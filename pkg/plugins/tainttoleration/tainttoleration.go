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

package tainttoleration

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "TaintToleration"

// TaintToleration filters and scores nodes by their taints.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin      = &TaintToleration{}
	_ framework.ScorePlugin       = &TaintToleration{}
	_ framework.ScoreExtensions   = &TaintToleration{}
	_ framework.EnqueueExtensions = &TaintToleration{}
)

// New is the plugin's framework.PluginFactory. It takes no args.
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeNoArgs(Name, args); err != nil {
		return nil, err
	}
	return &TaintToleration{}, nil
}

// Name implements framework.Plugin.
func (*TaintToleration) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions. A new node, or
// a change of a node's taints, may help a job this plugin rejected, if the
// node now admits one of its pods (see UntoleratedTaint).
func (*TaintToleration) EventsToRegister() []framework.ClusterEventWithHint {
	hint := pluginutil.NodeRuleHint(func(pod *v1.Pod, node *v1.Node) bool {
		_, untolerated := UntoleratedTaint(klog.Background(), pod, node)
		return !untolerated
	})
	return []framework.ClusterEventWithHint{
		{Event: framework.EventNodeAdd, QueueingHintFn: hint},
		{Event: framework.EventNodeTaintChange, QueueingHintFn: hint},
	}
}

// ErrReasonUntolerated is the reason a node with a taint the pod does not
// tolerate is rejected: kube-scheduler 1.37's wording, which names
// no taint, so that nodes with different taints count as one reason. The
// taint is logged at -v=5.
const ErrReasonUntolerated = "node(s) had untolerated taint(s)"

// blocksScheduling selects the taints Filter enforces.
func blocksScheduling(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// UntoleratedTaint returns a NoSchedule or NoExecute taint of node that pod
// does not tolerate, if there is one. It is the one rule of both Filter
// and the queueing hint.
func UntoleratedTaint(logger klog.Logger, pod *v1.Pod, node *v1.Node) (v1.Taint, bool) {
	return v1helper.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations,
		blocksScheduling, pluginutil.EnableTaintTolerationComparisonOperators)
}

// Filter implements framework.FilterPlugin.
func (*TaintToleration) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if node.Node == nil || node.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	if len(node.Taints) == 0 {
		// Most nodes have no taint: no need to read the node object or
		// fetch the logger, which walks the context's chain, for every
		// node of every pod.
		return nil
	}
	logger := klog.FromContext(ctx)
	taint, untolerated := UntoleratedTaint(logger, pod, node.Node)
	if !untolerated {
		return nil
	}
	if v := logger.V(5); v.Enabled() { // the taint is worded only when logged
		v.Info("Node has a taint the pod does not tolerate", "pod", klog.KObj(pod), "node", klog.KObj(node.Node), "taint", taint.ToString())
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUntolerated)
}

// Score implements framework.ScorePlugin: the number of PreferNoSchedule
// taints of node that pod does not tolerate (fewer is better; see
// NormalizeScore).
func (*TaintToleration) Score(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	if node.Node == nil || node.Placeholder {
		return framework.MinNodeScore, framework.AsStatus(fmt.Errorf("scoring pod %s: node %q not found", klog.KObj(pod), node.Name()))
	}
	taints := node.Taints
	if len(taints) == 0 {
		// As in Filter: most nodes have no taint.
		return 0, nil
	}
	logger := klog.FromContext(ctx)
	var count int64
	for i := range taints {
		if taints[i].Effect != v1.TaintEffectPreferNoSchedule {
			continue
		}
		// A toleration with another effect never matches a
		// PreferNoSchedule taint, so all tolerations can be passed.
		if !v1helper.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, &taints[i], pluginutil.EnableTaintTolerationComparisonOperators) {
			count++
		}
	}
	return count, nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *TaintToleration) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions: the fewest
// intolerable taints score MaxNodeScore, the most MinNodeScore.
func (*TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	pluginutil.NormalizeScores(scores, true)
	return nil
}

// JudgesBySpec implements framework.SpecJudge: the plugin reads of a pod
// its namespace, labels and spec only.
func (*TaintToleration) JudgesBySpec(*v1.Pod) bool { return true }

// NodeLocal implements framework.NodeLocal: its Filter and Score read the node's
// own taints.
func (*TaintToleration) NodeLocal() {}
