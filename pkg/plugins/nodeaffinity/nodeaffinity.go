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

package nodeaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "NodeAffinity"

// ErrReasonPod is the reason a node is rejected.
const ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"

// stateKey is where PreFilter keeps the parsed affinities.
const stateKey framework.StateKey = Name + "/affinities"

// NodeAffinity filters and scores nodes by the pod's node selector and
// node affinity.
type NodeAffinity struct{}

var (
	_ framework.PreFilterPlugin   = &NodeAffinity{}
	_ framework.FilterPreparer    = &NodeAffinity{}
	_ framework.ScorePreparer     = &NodeAffinity{}
	_ framework.ScoreExtensions   = &NodeAffinity{}
	_ framework.EnqueueExtensions = &NodeAffinity{}
)

// kubeDefaults are kube-scheduler's NodeAffinityArgs this plugin behaves
// as if given: no added affinity.
var kubeDefaults = pluginutil.KubeDefaults{"addedAffinity": {"null", "{}"}}

// New is the plugin's framework.PluginFactory. It takes no args of its
// own; kube-scheduler's are accepted at their defaults (kubeDefaults).
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeKubeDefaultArgs(Name, args, kubeDefaults); err != nil {
		return nil, err
	}
	return &NodeAffinity{}, nil
}

// Name implements framework.Plugin.
func (*NodeAffinity) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions. A new node, or
// a change of a node's labels, may help a job this plugin rejected, if the
// node now matches one of its pods' node selector and required affinity.
func (*NodeAffinity) EventsToRegister() []framework.ClusterEventWithHint {
	hint := pluginutil.NodeRuleHint(func(pod *v1.Pod, node *v1.Node) bool {
		return matches(nodeaffinity.GetRequiredNodeAffinity(pod), node)
	})
	return []framework.ClusterEventWithHint{
		{Event: framework.EventNodeAdd, QueueingHintFn: hint},
		{Event: framework.EventNodeLabelChange, QueueingHintFn: hint},
	}
}

// matches is the one rule of both Filter and the queueing hint: node
// matches the pod's nodeSelector and required node affinity. A term that
// cannot be parsed (the API server validates them, so only an old or odd
// object has one) matches no node.
func matches(required nodeaffinity.RequiredNodeAffinity, node *v1.Node) bool {
	match, err := required.Match(node)
	return match && err == nil
}

// podAffinity is one pod's parsed node selector and node affinity.
type podAffinity struct {
	pod *v1.Pod
	// required matches spec.nodeSelector and the required affinity.
	required nodeaffinity.RequiredNodeAffinity
	// preferred is nil when the pod has no preferred terms.
	preferred *nodeaffinity.PreferredSchedulingTerms
	// preferredErr is why the preferred terms could not be parsed.
	preferredErr error
}

func parse(pod *v1.Pod) *podAffinity {
	a := &podAffinity{pod: pod, required: nodeaffinity.GetRequiredNodeAffinity(pod)}
	if aff := pod.Spec.Affinity; aff != nil && aff.NodeAffinity != nil &&
		len(aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		a.preferred, a.preferredErr = nodeaffinity.NewPreferredSchedulingTerms(aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return a
}

// preFilterState holds the parsed affinities of a job's pending pods by
// pod object: an updated copy of a pod (same UID) is not the object
// PreFilter saw, and a pointer is hashed far faster than a UID, for every
// node. It is never changed after PreFilter writes it, so Clone shares it.
type preFilterState map[*v1.Pod]*podAffinity

// Clone implements framework.StateData.
func (s preFilterState) Clone() framework.StateData { return s }

// PreFilter implements framework.PreFilterPlugin.
func (*NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, job *framework.Job) *framework.Status {
	s := make(preFilterState, len(job.Pending))
	for _, pod := range job.Pending {
		s[pod] = parse(pod)
	}
	state.Write(stateKey, s)
	return nil
}

// affinityOf returns pod's parsed affinity from state, or parses it when
// PreFilter did not run for pod.
func affinityOf(state *framework.CycleState, pod *v1.Pod) *podAffinity {
	if state != nil {
		if d, ok := state.Read(stateKey); ok {
			if s, ok := d.(preFilterState); ok {
				if a, ok := s[pod]; ok {
					return a
				}
			}
		}
	}
	return parse(pod)
}

// Filter implements framework.FilterPlugin.
func (*NodeAffinity) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	return filter(ctx, pod, affinityOf(state, pod), node)
}

// PrepareFilter implements framework.FilterPreparer: pod's affinity is
// read from state once, not on every node.
func (*NodeAffinity) PrepareFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) framework.NodeFilter {
	a := affinityOf(state, pod)
	return func(ctx context.Context, node *framework.NodeInfo) *framework.Status {
		return filter(ctx, pod, a, node)
	}
}

// filter is Filter for pod, whose parsed affinity is a.
func filter(ctx context.Context, pod *v1.Pod, a *podAffinity, node *framework.NodeInfo) *framework.Status {
	if node.Node == nil || node.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	if matches(a.required, node.Node) {
		return nil
	}
	klog.FromContext(ctx).V(5).Info("Node does not match pod's node affinity/selector", "pod", klog.KObj(pod), "node", klog.KObj(node.Node))
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
}

// NodeNames implements framework.NodeNamer: the nodes the pod's required
// node affinity names by metadata.name. Each term's "In" requirements on
// the name narrow it (all must hold); the terms are alternatives, so a
// term that names no node leaves every node possible. An empty set: the
// terms name no node at all.
func (*NodeAffinity) NodeNames(pod *v1.Pod) (sets.Set[string], bool) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		return nil, false
	}
	named := sets.New[string]()
	for _, t := range terms {
		var names sets.Set[string]
		for _, r := range t.MatchFields {
			if r.Key != metav1.ObjectNameField || r.Operator != v1.NodeSelectorOpIn {
				continue
			}
			if names == nil {
				names = sets.New(r.Values...)
			} else {
				names = names.Intersection(sets.New(r.Values...))
			}
		}
		if names == nil {
			return nil, false
		}
		named = named.Union(names)
	}
	return named, true
}

// Score implements framework.ScorePlugin: the summed weights of the
// preferred terms node matches.
func (*NodeAffinity) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	return score(pod, affinityOf(state, pod), node)
}

// PrepareScore implements framework.ScorePreparer: pod's affinity is read
// from state once, not on every node.
func (*NodeAffinity) PrepareScore(_ context.Context, state *framework.CycleState, pod *v1.Pod) framework.NodeScorer {
	a := affinityOf(state, pod)
	return func(_ context.Context, node *framework.NodeInfo) (int64, *framework.Status) {
		return score(pod, a, node)
	}
}

// score is Score for pod, whose parsed affinity is a.
func score(pod *v1.Pod, a *podAffinity, node *framework.NodeInfo) (int64, *framework.Status) {
	if node.Node == nil || node.Placeholder {
		return framework.MinNodeScore, framework.AsStatus(fmt.Errorf("scoring pod %s: node %q not found", klog.KObj(pod), node.Name()))
	}
	if a.preferredErr != nil {
		return framework.MinNodeScore, framework.AsStatus(fmt.Errorf("pod %s: parsing preferred node affinity: %w", klog.KObj(pod), a.preferredErr))
	}
	if a.preferred == nil {
		return framework.MinNodeScore, nil
	}
	return a.preferred.Score(node.Node), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions: the highest sum
// becomes MaxNodeScore.
func (*NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	pluginutil.NormalizeScores(scores, false)
	return nil
}

// JudgesBySpec implements framework.SpecJudge: the plugin reads of a pod
// its namespace, labels and spec only.
func (*NodeAffinity) JudgesBySpec(*v1.Pod) bool { return true }

// NodeLocal implements framework.NodeLocal: its Filter and Score read the node's
// own labels and fields.
func (*NodeAffinity) NodeLocal() {}
