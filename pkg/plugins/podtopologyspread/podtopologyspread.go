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

package podtopologyspread

import (
	"context"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "PodTopologySpread"

// The rejection reasons, worded as kube-scheduler words them.
const (
	// ErrReasonConstraintsNotMatch: the skew would exceed maxSkew.
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	// ErrReasonNodeLabelNotMatch: the node lacks a topology label.
	ErrReasonNodeLabelNotMatch = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// stateKey is where PreFilterPod leaves its result for Filter.
const stateKey framework.StateKey = Name + "/pod"

// PodTopologySpread filters out nodes where placing the pod would spread
// the pods its DoNotSchedule constraints select too unevenly.
type PodTopologySpread struct{}

var (
	_ framework.PodPreFilterPlugin = &PodTopologySpread{}
	_ framework.FilterPlugin       = &PodTopologySpread{}
	_ framework.EnqueueExtensions  = &PodTopologySpread{}
	_ framework.PreScorePlugin     = &PodTopologySpread{}
	_ framework.ScorePlugin        = &PodTopologySpread{}
)

// kubeDefaults are kube-scheduler's PodTopologySpreadArgs this plugin
// behaves as if given: the system default constraints, which are never
// scored here (see the package doc), or List with no default
// constraints, which comes to the same.
var kubeDefaults = pluginutil.KubeDefaults{
	"defaultingType":     {`"System"`, `"List"`},
	"defaultConstraints": {"[]", "null"},
}

// New is the plugin's framework.PluginFactory. It takes no args of its
// own; kube-scheduler's are accepted at their defaults (kubeDefaults).
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeKubeDefaultArgs(Name, args, kubeDefaults); err != nil {
		return nil, err
	}
	return &PodTopologySpread{}, nil
}

// Name implements framework.Plugin.
func (*PodTopologySpread) Name() string { return Name }

// constraint is a DoNotSchedule topology spread constraint, parsed, with
// the API's defaults applied.
type constraint struct {
	maxSkew            int32
	topologyKey        string
	selector           labels.Selector
	minDomains         int32
	nodeAffinityPolicy v1.NodeInclusionPolicy
	nodeTaintsPolicy   v1.NodeInclusionPolicy
}

// hardConstraints returns pod's DoNotSchedule constraints; nil when it has
// none (the system default constraints are all ScheduleAnyway). The error
// names the bad constraint.
func hardConstraints(pod *v1.Pod) ([]constraint, error) {
	return constraintsOf(pod, v1.DoNotSchedule)
}

// constraintsOf returns pod's constraints with whenUnsatisfiable action.
func constraintsOf(pod *v1.Pod, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for i := range pod.Spec.TopologySpreadConstraints {
		c := &pod.Spec.TopologySpreadConstraints[i]
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("topology spread constraint %d: labelSelector: %w", i, err)
		}
		sel = withMatchLabelKeys(sel, c.MatchLabelKeys, pod.Labels)
		pc := constraint{
			maxSkew:            c.MaxSkew,
			topologyKey:        c.TopologyKey,
			selector:           sel,
			minDomains:         1,
			nodeAffinityPolicy: v1.NodeInclusionPolicyHonor,
			nodeTaintsPolicy:   v1.NodeInclusionPolicyIgnore,
		}
		if c.MinDomains != nil {
			pc.minDomains = *c.MinDomains
		}
		if c.NodeAffinityPolicy != nil {
			pc.nodeAffinityPolicy = *c.NodeAffinityPolicy
		}
		if c.NodeTaintsPolicy != nil {
			pc.nodeTaintsPolicy = *c.NodeTaintsPolicy
		}
		out = append(out, pc)
	}
	return out, nil
}

// withMatchLabelKeys adds to sel a requirement key=value for each key of
// keys that podLabels has. A selector that selects nothing stays so.
func withMatchLabelKeys(sel labels.Selector, keys []string, podLabels map[string]string) labels.Selector {
	set := labels.Set{}
	for _, k := range keys {
		if v, ok := podLabels[k]; ok {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return sel
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return sel
	}
	merged := labels.SelectorFromSet(set)
	for _, r := range reqs {
		merged = merged.Add(r)
	}
	return merged
}

// hasAllTopologyKeys reports whether nodeLabels has every constraint's key.
func hasAllTopologyKeys(nodeLabels map[string]string, cs []constraint) bool {
	for i := range cs {
		if _, ok := nodeLabels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

// admits reports whether c's node inclusion policies let node count.
func (c *constraint) admits(logger klog.Logger, pod *v1.Pod, node *v1.Node, required nodeaffinity.RequiredNodeAffinity) bool {
	if c.nodeAffinityPolicy == v1.NodeInclusionPolicyHonor {
		// A bad node selector matches nothing; the error is ignored, as in
		// kube-scheduler (the NodeAffinity plugin reports it).
		if ok, _ := required.Match(node); !ok {
			return false
		}
	}
	if c.nodeTaintsPolicy == v1.NodeInclusionPolicyHonor {
		if _, untolerated := v1helper.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations, doNotScheduleTaint,
			pluginutil.EnableTaintTolerationComparisonOperators); untolerated {
			return false
		}
	}
	return true
}

// doNotScheduleTaint selects the taints that keep pods off a node.
func doNotScheduleTaint(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// countMatching counts the pods on n that a constraint with sel counts:
// counted, not terminating, in namespace ns, matching sel. An empty
// selector counts nothing, as in kube-scheduler.
func countMatching(n *framework.NodeInfo, sel labels.Selector, ns string) int {
	if sel.Empty() {
		return 0
	}
	count := 0
	for _, t := range n.Pods {
		if !t.Counted || t.GetDeletionTimestamp() != nil || t.GetNamespace() != ns {
			continue
		}
		if sel.Matches(labels.Set(t.GetLabels())) {
			count++
		}
	}
	return count
}

// podState is what PreFilterPod computes for one pod.
type podState struct {
	pod         *v1.Pod
	constraints []constraint
	// counts[i] maps each domain of constraint i to its matching pods.
	counts []map[string]int
	// minimum[i] is constraint i's global minimum (see the package doc).
	minimum []int
	// required is the pod's required node affinity, which the node
	// inclusion policies read.
	required nodeaffinity.RequiredNodeAffinity
}

// PreFilterPod implements framework.PodPreFilterPlugin: Skip for a pod
// without DoNotSchedule constraints; otherwise it counts the matching
// pods per domain over nodes (which hold the pods of this cycle placed
// before pod) for Filter.
func (*PodTopologySpread) PreFilterPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	// PreScore is given only the feasible nodes; domains span them all.
	state.Write(nodesKey, &allNodes{pod: pod, nodes: nodes})
	cs, err := hardConstraints(pod)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("pod %s: %w", klog.KObj(pod), err))
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	logger := klog.FromContext(ctx)
	s := &podState{pod: pod, constraints: cs, counts: make([]map[string]int, len(cs)), minimum: make([]int, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int{}
	}
	s.required = nodeaffinity.GetRequiredNodeAffinity(pod)
	required := s.required
	for _, n := range nodes {
		node := n.Node
		if node == nil || !hasAllTopologyKeys(node.Labels, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if !c.admits(logger, pod, node, required) {
				continue
			}
			s.counts[i][node.Labels[c.topologyKey]] += countMatching(n, c.selector, pod.Namespace)
		}
	}
	for i := range cs {
		s.minimum[i] = s.globalMinimum(i)
	}
	state.Write(stateKey, s)
	return nil
}

// globalMinimum is constraint i's global minimum over s.counts[i]: the
// smallest count of its domains, or 0 when it has fewer domains than
// minDomains.
func (s *podState) globalMinimum(i int) int {
	if len(s.counts[i]) < int(s.constraints[i].minDomains) {
		return 0
	}
	m := math.MaxInt
	for _, v := range s.counts[i] {
		m = min(m, v)
	}
	return m
}

// Filter implements framework.FilterPlugin.
func (*PodTopologySpread) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if node.Node == nil || node.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	d, _ := state.Read(stateKey)
	s, _ := d.(*podState)
	if s == nil || s.pod != pod {
		// PreFilterPod did not run for pod (a caller that filters
		// directly): without hard constraints there is nothing to check.
		if cs, err := hardConstraints(pod); err == nil && len(cs) == 0 {
			return nil
		}
		return framework.AsStatus(fmt.Errorf("%s: no pre-filter state for pod %s", Name, klog.KObj(pod)))
	}
	podLabels := labels.Set(pod.Labels)
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Node.Labels[c.topologyKey]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		self := 0
		if c.selector.Matches(podLabels) {
			self = 1
		}
		skew := s.counts[i][v] + self - s.minimum[i]
		if skew > int(c.maxSkew) {
			if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
				logger.Info("Node would exceed the maximum skew of a topology spread constraint", "pod", klog.KObj(pod), "node", node.Name(),
					"topologyKey", c.topologyKey, "matching", s.counts[i][v], "self", self, "minimum", s.minimum[i], "maxSkew", c.maxSkew)
			}
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

// JudgesBySpec implements framework.SpecJudge: the plugin reads of a pod
// its namespace, labels and spec only.
func (*PodTopologySpread) JudgesBySpec(*v1.Pod) bool { return true }
