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

package nodeunschedulable

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "NodeUnschedulable"

// ErrReasonUnschedulable is the reason a cordoned node is rejected.
const ErrReasonUnschedulable = "node(s) were unschedulable"

// unschedulableTaint is what a pod must tolerate to run on a cordoned node.
var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// NodeUnschedulable rejects cordoned nodes.
type NodeUnschedulable struct{}

var (
	_ framework.FilterPlugin      = &NodeUnschedulable{}
	_ framework.EnqueueExtensions = &NodeUnschedulable{}
)

// New is the plugin's framework.PluginFactory. It takes no args.
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeNoArgs(Name, args); err != nil {
		return nil, err
	}
	return &NodeUnschedulable{}, nil
}

// Name implements framework.Plugin.
func (*NodeUnschedulable) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions. A new node, or
// one that became schedulable, may help a job this plugin rejected, if it
// admits one of its pods (see Admits).
func (*NodeUnschedulable) EventsToRegister() []framework.ClusterEventWithHint {
	hint := pluginutil.NodeRuleHint(Admits)
	return []framework.ClusterEventWithHint{
		{Event: framework.EventNodeAdd, QueueingHintFn: hint},
		{Event: framework.EventNodeBecameSchedulable, QueueingHintFn: hint},
	}
}

// Admits reports whether pod may run on node as far as cordoning goes:
// the node is schedulable, or the pod tolerates the
// node.kubernetes.io/unschedulable:NoSchedule taint. It is the one rule of
// both Filter and the queueing hint.
func Admits(pod *v1.Pod, node *v1.Node) bool {
	return !node.Spec.Unschedulable ||
		v1helper.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, &unschedulableTaint, pluginutil.EnableTaintTolerationComparisonOperators)
}

// Filter implements framework.FilterPlugin.
func (*NodeUnschedulable) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if node.Node == nil || node.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	// node.Unschedulable mirrors node.Node.Spec.Unschedulable without
	// reading the node object.
	if !node.Unschedulable || Admits(pod, node.Node) {
		return nil
	}
	klog.FromContext(ctx).V(5).Info("Node is unschedulable", "pod", klog.KObj(pod), "node", klog.KObj(node.Node))
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}

// JudgesBySpec implements framework.SpecJudge: the plugin reads of a pod
// its namespace, labels and spec only.
func (*NodeUnschedulable) JudgesBySpec(*v1.Pod) bool { return true }

// NodeLocal implements framework.NodeLocal: its Filter reads the node's own
// unschedulable flag.
func (*NodeUnschedulable) NodeLocal() {}
