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

// Package pluginutil is what a plugin author needs beside the framework:
// strict decoding of plugin args, score normalisation, queueing hints
// that apply a plugin's own rule to an event's objects (NodeRuleHint,
// CapHint), typed access to those objects (PodOf, NodesOf), the listers'
// informer factory, and the reasons and settings every plugin agrees on.
// The in-tree plugins use it too, so an out-of-tree plugin built on it
// behaves as they do.
package pluginutil

import (
	"fmt"
	"io"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
)

// ErrReasonNodeNotFound is the rejection reason of every Filter for a
// NodeInfo without a node (a placeholder that should never have reached a
// scheduling cycle).
const ErrReasonNodeNotFound = "node(s) not found"

// EnableTaintTolerationComparisonOperators says whether tolerations with the
// Lt and Gt operators are honoured. They are behind the alpha
// TaintTolerationComparisonOperators feature gate, off by default in
// Kubernetes v1.37, and the API server rejects them while it is off, so
// this scheduler does not honour them either.
const EnableTaintTolerationComparisonOperators = false

// ArgsReader returns a reader over args a plugin decodes itself: the
// *config.RawArgs (pkg/apis/config) a profile gives a plugin the
// configuration API has no type for. Its errors name the configuration
// file and its lines. nil args give a nil reader; args of any other type
// (typed args meant for another plugin) are an error naming the plugin.
func ArgsReader(plugin string, args runtime.Object) (io.Reader, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case *configapi.RawArgs:
		if a == nil {
			return nil, nil
		}
		return a.Reader(), nil
	}
	return nil, fmt.Errorf("%s args: got %T, which the plugin cannot read: it decodes its args itself from the file's YAML (a *config.RawArgs)", plugin, args)
}

// DecodeNoArgs accepts empty args (nil, blank, "{}" or "null") and rejects
// anything else, for plugins that take no args. The error names the plugin.
func DecodeNoArgs(plugin string, args runtime.Object) error {
	r, err := ArgsReader(plugin, args)
	if err != nil {
		return err
	}
	return decodeNoArgs(plugin, r)
}

func decodeNoArgs(plugin string, args io.Reader) error {
	args, err := config.WithoutTypeMeta(args, plugin+"Args")
	if err != nil {
		return fmt.Errorf("%s args: %w", plugin, err)
	}
	var none struct{}
	if err := config.DecodeStrict(args, &none); err != nil {
		return fmt.Errorf("%s args: the plugin takes no args: %w", plugin, err)
	}
	return nil
}

// DecodeArgs strictly decodes the raw args of a plugin the configuration
// API has no type for (an out-of-tree plugin's) into out, which holds the
// defaults, and names the plugin in the error. The apiVersion and kind a
// kube-scheduler configuration may give args (kubescheduler.config.k8s.io/v1,
// <plugin>Args) are accepted and dropped (config.WithoutTypeMeta).
func DecodeArgs(plugin string, args runtime.Object, out any) error {
	r, err := ArgsReader(plugin, args)
	if err != nil {
		return err
	}
	r, err = config.WithoutTypeMeta(r, plugin+"Args")
	if err != nil {
		return fmt.Errorf("%s args: %w", plugin, err)
	}
	if err := config.DecodeStrict(r, out); err != nil {
		return fmt.Errorf("%s args: %w", plugin, err)
	}
	return nil
}

// NormalizeScores scales scores in place so that the highest becomes
// framework.MaxNodeScore and the others keep their proportion to it. With
// reverse, the scale is flipped: the highest raw score becomes
// MinNodeScore and a raw score of zero MaxNodeScore. When every score is
// zero (or there are none above zero), they all become MinNodeScore, or
// MaxNodeScore with reverse: nothing tells the nodes apart.
func NormalizeScores(scores []framework.NodeScore, reverse bool) {
	var highest int64
	for i := range scores {
		highest = max(highest, scores[i].Score)
	}
	for i := range scores {
		s := framework.MinNodeScore
		if highest > 0 {
			s = max(scores[i].Score, 0) * framework.MaxNodeScore / highest
		}
		if reverse {
			s = framework.MaxNodeScore - s
		}
		scores[i].Score = s
	}
}

// NodeRuleHint returns the queueing hint of a plugin whose Filter applies a
// rule to the node object alone: admits reports whether the plugin's
// Filter passes pod on node. The hint answers Queue when, for some pending
// pod of the job, the node after the event admits it and the node before
// (none, for an addition) did not: only then can the event undo a
// rejection by this plugin. Objects that are not nodes answer Queue, with
// an error saying so.
func NodeRuleHint(admits func(pod *v1.Pod, node *v1.Node) bool) framework.QueueingHintFn {
	return func(_ klog.Logger, job *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
		oldNode, newNode, err := NodesOf(oldObj, newObj)
		if err != nil {
			return framework.Queue, err
		}
		for _, pod := range job.Pods {
			if admits(pod, newNode) && (oldNode == nil || !admits(pod, oldNode)) {
				return framework.Queue, nil
			}
		}
		return framework.QueueSkip, nil
	}
}

// CapHint is the queueing hint for framework.EventGrantIncrease: some pending pod
// fits in the node's new cap, and the cap grew in something that pod
// requests (or the node was not capped before).
func CapHint(_ klog.Logger, job *framework.QueuedJob, _, newObj any) (framework.QueueingHint, error) {
	change, ok := newObj.(*framework.NodeCapChange)
	if !ok || change == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want the *framework.NodeCapChange of a grant increase, got %T", newObj)
	}
	if change.New == nil {
		return framework.Queue, nil // the cap was lifted
	}
	for _, pod := range job.Pods {
		req := resources.PodRequests(pod)
		req.Pods = 0 // caps never bound the pod count
		if !change.New.Fits(req) {
			continue
		}
		if change.Old == nil || GrewFor(req, *change.Old, *change.New) {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// GrewFor reports whether cur allocates more than old of a resource req
// asks for (the pod count always counts).
func GrewFor(req, old, cur resources.Resource) bool {
	if cur.Pods > old.Pods ||
		req.MilliCPU > 0 && cur.MilliCPU > old.MilliCPU ||
		req.Memory > 0 && cur.Memory > old.Memory ||
		req.EphemeralStorage > 0 && cur.EphemeralStorage > old.EphemeralStorage {
		return true
	}
	for name, v := range req.Scalar {
		if v > 0 && cur.Scalar[name] > old.Scalar[name] {
			return true
		}
	}
	return false
}

// PodOf returns obj, an object a pod event was raised with, as a pod.
// which says which one it is ("deleted", "added", "old", "new") for the
// error when it is not a pod.
func PodOf(obj any, which string) (*v1.Pod, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod == nil {
		return nil, fmt.Errorf("queueing hint: want the %s *v1.Pod of a pod event, got %T", which, obj)
	}
	return pod, nil
}

// NodesOf returns the nodes a node event was raised with: oldNode is nil
// for an addition. The error says which object is not a node.
func NodesOf(oldObj, newObj any) (oldNode, newNode *v1.Node, err error) {
	newNode, ok := newObj.(*v1.Node)
	if !ok || newNode == nil {
		return nil, nil, fmt.Errorf("queueing hint: want the new *v1.Node of a node event, got %T", newObj)
	}
	if oldObj != nil {
		if oldNode, ok = oldObj.(*v1.Node); !ok || oldNode == nil {
			return nil, nil, fmt.Errorf("queueing hint: want the old *v1.Node of a node update, got %T", oldObj)
		}
	}
	return oldNode, newNode, nil
}

// InformerFactory returns h's informer factory, for a plugin that reads
// listers; the error names plugin when h has none.
func InformerFactory(plugin string, h framework.Handle) (informers.SharedInformerFactory, error) {
	if h == nil || h.SharedInformerFactory() == nil {
		return nil, fmt.Errorf("%s: the framework handle has no informer factory", plugin)
	}
	return h.SharedInformerFactory(), nil
}

// TypedArgs returns a plugin's typed args (T is its type in
// pkg/apis/config, e.g. config.TopologyAwareArgs), for the factory of a
// plugin the configuration API has a type for. A profile read from a file
// gives them decoded, defaulted and validated; nil args (no pluginConfig
// entry) give the defaults, and RawArgs (a configuration built in code)
// are decoded as the file's would be (config.DecodePluginArgs). Args of
// another type are an error naming the plugin.
func TypedArgs[T any](plugin string, args runtime.Object) (*T, error) {
	if a, ok := any(args).(*T); ok && a != nil {
		return a, nil
	}
	switch a := args.(type) {
	case nil, *configapi.RawArgs:
		raw, _ := a.(*configapi.RawArgs)
		obj, err := config.DecodePluginArgs(plugin, raw)
		if err != nil {
			return nil, err
		}
		if typed, ok := any(obj).(*T); ok {
			return typed, nil
		}
		return nil, fmt.Errorf("%s args: the configuration API reads them as %T, not %T", plugin, obj, new(T))
	}
	return nil, fmt.Errorf("%s args: got %T, want %T", plugin, args, new(T))
}

// HasEphemeralVolumes reports whether pod has a generic ephemeral volume,
// whose PersistentVolumeClaim is the pod's own: a plugin that reads that
// claim judges such a pod by more than its spec (framework.SpecJudge).
func HasEphemeralVolumes(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}
