package nodeunschedulable

import (
	"context"
	"io"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/pluginutil"
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
func New(_ context.Context, args io.Reader, _ framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeNoArgs(Name, args); err != nil {
		return nil, err
	}
	return &NodeUnschedulable{}, nil
}

// Name implements framework.Plugin.
func (*NodeUnschedulable) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*NodeUnschedulable) EventsToRegister() []eventhandlers.ClusterEvent {
	return []eventhandlers.ClusterEvent{
		eventhandlers.EventNodeAdd,
		eventhandlers.EventNodeBecameSchedulable,
		eventhandlers.EventNodeTaintChange,
	}
}

// Filter implements framework.FilterPlugin.
func (*NodeUnschedulable) Filter(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, node *cache.NodeInfo) *framework.Status {
	if node.Node == nil || node.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	if !node.Node.Spec.Unschedulable {
		return nil
	}
	logger := klog.FromContext(ctx)
	if v1helper.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, &unschedulableTaint, pluginutil.EnableTaintTolerationComparisonOperators) {
		return nil
	}
	logger.V(5).Info("Node is unschedulable", "pod", klog.KObj(pod), "node", klog.KObj(node.Node))
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}
