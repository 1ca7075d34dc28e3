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

package interpodaffinity

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "InterPodAffinity"

// The rejection reasons, worded as kube-scheduler words them.
const (
	// ErrReasonAffinityRulesNotMatch: the pod's required affinity is not met.
	ErrReasonAffinityRulesNotMatch = "node(s) didn't match pod affinity rules"
	// ErrReasonAntiAffinityRulesNotMatch: the pod's required anti-affinity
	// is violated.
	ErrReasonAntiAffinityRulesNotMatch = "node(s) didn't match pod anti-affinity rules"
	// ErrReasonExistingAntiAffinityRulesNotMatch: the required
	// anti-affinity of a pod already there is violated.
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// stateKey is where PreFilterPod leaves its result for Filter.
const stateKey framework.StateKey = Name + "/pod"

// errNamespacesNotSynced is returned while namespace labels are needed and
// the namespace informer has not synced.
var errNamespacesNotSynced = errors.New("the namespace informer has not synced yet")

// errNoNamespaces is returned when namespace labels are needed and the
// framework handle had no informer factory to list namespaces from.
var errNoNamespaces = errors.New("no namespace lister: the framework handle has no shared informer factory")

// InterPodAffinity filters out nodes where the pod's required pod
// affinity or anti-affinity, or that of the pods already there, is not
// met.
type InterPodAffinity struct {
	namespaces       corelisters.NamespaceLister
	namespacesSynced func() bool
	// existing caches the parsed terms of pods already on nodes.
	existing termCache
}

var (
	_ framework.PodPreFilterPlugin = &InterPodAffinity{}
	_ framework.FilterPlugin       = &InterPodAffinity{}
	_ framework.EnqueueExtensions  = &InterPodAffinity{}
	_ framework.PreScorePlugin     = &InterPodAffinity{}
	_ framework.ScorePlugin        = &InterPodAffinity{}
)

// kubeDefaults are kube-scheduler's InterPodAffinityArgs this plugin
// behaves as if given.
var kubeDefaults = pluginutil.KubeDefaults{
	"hardPodAffinityWeight":              {"1"},
	"ignorePreferredTermsOfExistingPods": {"false"},
}

// New is the plugin's framework.PluginFactory. It takes no args of its
// own; kube-scheduler's are accepted at their defaults (kubeDefaults).
// It asks h's informer factory for the Namespace informer, which the
// scheduler cache starts with the factory.
func New(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeKubeDefaultArgs(Name, args, kubeDefaults); err != nil {
		return nil, err
	}
	if h == nil || h.SharedInformerFactory() == nil {
		// Without namespaces, terms with a namespace selector fail (see
		// namespacesReady); all others work.
		return &InterPodAffinity{}, nil
	}
	inf := h.SharedInformerFactory().Core().V1().Namespaces()
	return &InterPodAffinity{namespaces: inf.Lister(), namespacesSynced: inf.Informer().HasSynced}, nil
}

// Name implements framework.Plugin.
func (*InterPodAffinity) Name() string { return Name }

// podState is what PreFilterPod computes for one pod.
type podState struct {
	pod          *v1.Pod
	affinity     []term
	antiAffinity []term
	// affinityCounts counts, per domain of each affinity term, the pods
	// that match all affinity terms.
	affinityCounts pairCounts
	// antiAffinityCounts counts, per domain of each anti-affinity term,
	// the pods that match that term.
	antiAffinityCounts pairCounts
	// existingAntiCounts counts, per domain, the existing pods with a
	// required anti-affinity term of that topology key matching the pod.
	existingAntiCounts pairCounts
}

// namespaceLabels returns a function giving the labels of ns, looked up
// once on first use; a namespace that is not found has no labels, as in
// kube-scheduler. *err is set when the lister cannot be read yet.
func (pl *InterPodAffinity) namespaceLabels(logger klog.Logger, ns string, err *error) nsLabelsFunc {
	var (
		set  labels.Set
		done bool
	)
	return func() labels.Set {
		if done {
			return set
		}
		done = true
		if e := pl.namespacesReady(); e != nil {
			*err = e
			return nil
		}
		n, e := pl.namespaces.Get(ns)
		switch {
		case e == nil:
			set = labels.Set(n.Labels)
		case apierrors.IsNotFound(e):
			logger.V(4).Info("Namespace of the pod not found; assuming no labels", "namespace", ns)
		default:
			*err = fmt.Errorf("getting namespace %q: %w", ns, e)
		}
		return set
	}
}

// namespacesReady says why the namespace lister cannot be read, or nil.
func (pl *InterPodAffinity) namespacesReady() error {
	switch {
	case pl.namespaces == nil:
		return errNoNamespaces
	case !pl.namespacesSynced():
		return errNamespacesNotSynced
	}
	return nil
}

// resolveNamespaces resolves the namespace selectors of terms (see
// resolveTerm).
func (pl *InterPodAffinity) resolveNamespaces(terms []term) error {
	for i := range terms {
		if err := pl.resolveTerm(&terms[i]); err != nil {
			return err
		}
	}
	return nil
}

// resolveTerm adds to t's namespaces those its namespace selector
// selects, and drops the selector, as kube-scheduler does for the
// incoming pod's terms. An empty selector (every namespace) is kept.
func (pl *InterPodAffinity) resolveTerm(t *term) error {
	if t.nsSelector == nil || t.nsSelector.Empty() {
		return nil
	}
	if err := pl.namespacesReady(); err != nil {
		return err
	}
	nss, err := pl.namespaces.List(t.nsSelector)
	if err != nil {
		return fmt.Errorf("listing namespaces for a namespaceSelector: %w", err)
	}
	for _, ns := range nss {
		t.namespaces.Insert(ns.Name)
	}
	t.nsSelector = nil
	return nil
}

// PreFilterPod implements framework.PodPreFilterPlugin. It returns Skip
// when the pod has no required pod (anti-)affinity and no existing pod's
// required anti-affinity matches it; otherwise it counts the matching
// pods per topology domain, over nodes (which hold the pods of this cycle
// placed before pod), for Filter.
func (pl *InterPodAffinity) PreFilterPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	// PreScore is given only the feasible nodes; domains span them all.
	state.Write(nodesKey, &allNodes{pod: pod, nodes: nodes})
	rawAffinity, rawAnti := requiredAffinity(pod.Spec.Affinity), requiredAntiAffinity(pod.Spec.Affinity)
	if len(rawAffinity) == 0 && len(rawAnti) == 0 && !anyRequiredAntiAffinity(state, nodes) {
		return framework.NewStatus(framework.Skip)
	}
	logger := klog.FromContext(ctx)
	s := &podState{pod: pod}
	var err error
	if s.affinity, err = parseTerms(pod.Namespace, "podAffinity", rawAffinity); err != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("parsing pod: %v", err))
	}
	if s.antiAffinity, err = parseTerms(pod.Namespace, "podAntiAffinity", rawAnti); err != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("parsing pod: %v", err))
	}
	if err := pl.resolveNamespaces(s.affinity); err != nil {
		return framework.AsStatus(fmt.Errorf("pod %s: %w", klog.KObj(pod), err))
	}
	if err := pl.resolveNamespaces(s.antiAffinity); err != nil {
		return framework.AsStatus(fmt.Errorf("pod %s: %w", klog.KObj(pod), err))
	}

	var nsErr error
	nsLabels := pl.namespaceLabels(logger, pod.Namespace, &nsErr)
	s.existingAntiCounts = make(pairCounts)
	hasTerms := len(s.affinity) > 0 || len(s.antiAffinity) > 0
	if hasTerms {
		s.affinityCounts, s.antiAffinityCounts = make(pairCounts), make(pairCounts)
	}
	for _, n := range nodes {
		if n.Node == nil {
			continue
		}
		if n.PodsWithRequiredAntiAffinity > 0 {
			pl.countExistingAnti(logger, s, n, nsLabels)
		}
		if hasTerms {
			s.countIncoming(n)
		}
	}
	if nsErr != nil {
		return framework.AsStatus(fmt.Errorf("pod %s: namespace labels: %w", klog.KObj(pod), nsErr))
	}
	if !hasTerms && len(s.existingAntiCounts) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, s)
	return nil
}

// anyRequiredAntiAffinity reports whether some node holds a counted pod
// with required pod anti-affinity. The cycle's census, when state has
// one, answers for most pods without a walk over every node.
func anyRequiredAntiAffinity(state *framework.CycleState, nodes []*framework.NodeInfo) bool {
	if c := framework.AffinityCensusOf(state); c != nil && !c.MayHoldRequiredAntiAffinity() {
		return false
	}
	for _, n := range nodes {
		if n.PodsWithRequiredAntiAffinity > 0 {
			return true
		}
	}
	return false
}

// countExistingAnti counts the required anti-affinity terms of n's pods
// that match the incoming pod, in n's domains.
func (pl *InterPodAffinity) countExistingAnti(logger klog.Logger, s *podState, n *framework.NodeInfo, nsLabels nsLabelsFunc) {
	for _, t := range n.Pods {
		if !t.Counted || len(requiredAntiAffinity(t.Affinity())) == 0 {
			continue
		}
		parsed := pl.existing.get(t)
		terms, err := parsed.requiredAnti, parsed.errAnti
		if err != nil {
			// The API server validates selectors; such a pod cannot be
			// created, and its terms cannot select anything.
			logger.V(4).Info("Ignoring the unparsable anti-affinity of an existing pod", "pod", klog.KObj(t), "err", err)
			continue
		}
		for i := range terms {
			if terms[i].matches(s.pod, nsLabels) {
				s.existingAntiCounts.add(n.Node, terms[i].topologyKey)
			}
		}
	}
}

// countIncoming counts n's pods that match the incoming pod's terms.
func (s *podState) countIncoming(n *framework.NodeInfo) {
	for _, t := range n.Pods {
		if !t.Counted {
			continue
		}
		if matchesAll(s.affinity, t) {
			for i := range s.affinity {
				s.affinityCounts.add(n.Node, s.affinity[i].topologyKey)
			}
		}
		for i := range s.antiAffinity {
			if s.antiAffinity[i].matches(t, nil) {
				s.antiAffinityCounts.add(n.Node, s.antiAffinity[i].topologyKey)
			}
		}
	}
}

// Filter implements framework.FilterPlugin.
func (pl *InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if node.Node == nil || node.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	d, _ := state.Read(stateKey)
	s, _ := d.(*podState)
	if s == nil || s.pod != pod {
		// PreFilterPod did not run for pod (a caller that filters
		// directly). Only the trivial case can be decided on one node.
		if len(requiredAffinity(pod.Spec.Affinity)) == 0 && len(requiredAntiAffinity(pod.Spec.Affinity)) == 0 && node.PodsWithRequiredAntiAffinity == 0 {
			return nil
		}
		return framework.AsStatus(fmt.Errorf("%s: no pre-filter state for pod %s", Name, klog.KObj(pod)))
	}
	nodeLabels := node.Node.Labels
	if !s.affinitySatisfied(nodeLabels) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	for i := range s.antiAffinity {
		key := s.antiAffinity[i].topologyKey
		if v, ok := nodeLabels[key]; ok && s.antiAffinityCounts[topologyPair{key, v}] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	if len(s.existingAntiCounts) > 0 {
		for k, v := range nodeLabels {
			if s.existingAntiCounts[topologyPair{k, v}] > 0 {
				return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
			}
		}
	}
	return nil
}

// affinitySatisfied reports whether a node with nodeLabels meets the pod's
// required affinity: it has every term's topology label, and each of its
// domains holds a pod matching all terms; or no pod anywhere matches them
// and the pod matches them itself (the first pod of a self-affine group).
func (s *podState) affinitySatisfied(nodeLabels map[string]string) bool {
	if len(s.affinity) == 0 {
		return true
	}
	found := true
	for i := range s.affinity {
		key := s.affinity[i].topologyKey
		v, ok := nodeLabels[key]
		if !ok {
			return false
		}
		if s.affinityCounts[topologyPair{key, v}] <= 0 {
			found = false
		}
	}
	if found {
		return true
	}
	return len(s.affinityCounts) == 0 && matchesAll(s.affinity, s.pod)
}

// JudgesBySpec implements framework.SpecJudge: the plugin reads of a pod
// its namespace, labels and spec only.
func (*InterPodAffinity) JudgesBySpec(*v1.Pod) bool { return true }
