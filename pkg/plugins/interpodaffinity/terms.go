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
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// term is a required pod (anti-)affinity term with its selectors parsed.
type term struct {
	topologyKey string
	selector    labels.Selector
	// namespaces the term names explicitly, or the owning pod's namespace
	// when it names none and has no namespace selector.
	namespaces sets.Set[string]
	// nsSelector selects further namespaces by their labels; nil when the
	// term has no namespace selector (it selects none).
	nsSelector labels.Selector
}

// nsLabelsFunc returns the labels of the namespace of the pod being
// matched; it is only called when a term's namespace selector needs them.
type nsLabelsFunc func() labels.Set

// matches reports whether pod is selected by t: it is in one of t's
// namespaces and its labels match t's selector. nsLabels gives the labels
// of pod's namespace; nil stands for a namespace without labels.
func (t *term) matches(pod framework.PodMeta, nsLabels nsLabelsFunc) bool {
	if !t.namespaces.Has(pod.GetNamespace()) {
		if t.nsSelector == nil {
			return false
		}
		if !t.nsSelector.Empty() {
			var set labels.Set
			if nsLabels != nil {
				set = nsLabels()
			}
			if !t.nsSelector.Matches(set) {
				return false
			}
		}
	}
	return t.selector.Matches(labels.Set(pod.GetLabels()))
}

// parseTerms parses the terms of a pod of namespace ownerNamespace; an
// error names the bad term.
func parseTerms(ownerNamespace string, kind string, in []v1.PodAffinityTerm) ([]term, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]term, 0, len(in))
	for i := range in {
		t := &in[i]
		sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("%s term %d: labelSelector: %w", kind, i, err)
		}
		pt := term{topologyKey: t.TopologyKey, selector: sel, namespaces: sets.New(t.Namespaces...)}
		if t.NamespaceSelector != nil {
			if pt.nsSelector, err = metav1.LabelSelectorAsSelector(t.NamespaceSelector); err != nil {
				return nil, fmt.Errorf("%s term %d: namespaceSelector: %w", kind, i, err)
			}
		} else if len(t.Namespaces) == 0 {
			pt.namespaces.Insert(ownerNamespace)
		}
		out = append(out, pt)
	}
	return out, nil
}

// requiredAffinity returns the required pod affinity terms of a pod's
// affinity a, unparsed.
func requiredAffinity(a *v1.Affinity) []v1.PodAffinityTerm {
	if a != nil && a.PodAffinity != nil {
		return a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// requiredAntiAffinity returns the required pod anti-affinity terms of a
// pod's affinity a, unparsed.
func requiredAntiAffinity(a *v1.Affinity) []v1.PodAffinityTerm {
	if a != nil && a.PodAntiAffinity != nil {
		return a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// matchesAll reports whether terms is not empty and pod matches every
// term. The incoming pod's terms have their namespace selectors resolved
// into namespaces, so no namespace labels are needed.
func matchesAll(terms []term, pod framework.PodMeta) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].matches(pod, nil) {
			return false
		}
	}
	return true
}

// matchesAny reports whether pod matches some term of terms (resolved, as
// for matchesAll).
func matchesAny(terms []term, pod framework.PodMeta) bool {
	for i := range terms {
		if terms[i].matches(pod, nil) {
			return true
		}
	}
	return false
}

// topologyPair is a topology domain: a node label key and value.
type topologyPair struct {
	key, value string
}

// pairCounts counts matching pods per topology domain.
type pairCounts map[topologyPair]int

// add counts one pod on node in the domain of key, if node has the label.
func (m pairCounts) add(node *v1.Node, key string) {
	if v, ok := node.Labels[key]; ok {
		m[topologyPair{key, v}]++
	}
}
