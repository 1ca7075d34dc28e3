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
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// affinePod has one required affinity, one required anti-affinity and one
// preferred term of each kind, on app=value.
func affinePod(name, value string) *v1.Pod {
	term := v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": value}},
		TopologyKey:   "zone",
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: v1.PodSpec{Affinity: &v1.Affinity{
			PodAffinity: &v1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  []v1.PodAffinityTerm{term},
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 3, PodAffinityTerm: term}},
			},
			PodAntiAffinity: &v1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  []v1.PodAffinityTerm{term},
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 5, PodAffinityTerm: term}},
			},
		}},
	}
}

// taskOf is a task of pod, as the cache holds one on a node.
func taskOf(pod *v1.Pod) *framework.TaskInfo {
	return &framework.TaskInfo{Pod: pod, Status: framework.TaskBound, NodeName: "n", Counted: true}
}

func TestTermCache(t *testing.T) {
	var c termCache
	a := affinePod("a", "x")
	first := c.get(taskOf(a))
	if c.get(taskOf(a)) != first {
		t.Fatal("a second lookup of the same pod object, through another task, parsed it again")
	}
	if len(first.required) != 1 || len(first.requiredAnti) != 1 || len(first.preferred) != 1 || first.preferredAnti[0].weight != 5 {
		t.Fatalf("parsed terms = %+v", first)
	}
	match := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", Labels: map[string]string{"app": "x"}}}
	if !first.required[0].matches(match, nil) {
		t.Error("the cached required term does not match a pod its selector selects")
	}

	// A bound task is looked up by its record, which every task of the
	// same pod version shares: no pod is made of it, and no parse again.
	bound := affinePod("b", "x")
	bound.Spec.NodeName = "n1"
	bt := framework.NewTaskInfo(bound, framework.GroupResolver{})
	if bt.Record() == nil {
		t.Fatal("a bound task without a record")
	}
	again := framework.NewTaskInfoOfRecord(bt.Record(), bound, bt.Requests, framework.Membership{})
	if got := c.get(bt); got != c.get(again) || len(got.required) != 1 {
		t.Error("two tasks sharing a record parsed their terms twice")
	}

	// An update is a new object: its terms are its own.
	updated := affinePod("a", "y")
	if got := c.get(taskOf(updated)); got == first || got.required[0].matches(match, nil) {
		t.Error("the updated pod got the old object's terms")
	}

	// Parse errors are kept per kind.
	bad := affinePod("bad", "x")
	bad.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector = &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}},
	}
	if got := c.get(taskOf(bad)); got.errAnti == nil || got.errRequired != nil {
		t.Errorf("bad anti-affinity: errRequired %v, errAnti %v; want only errAnti", got.errRequired, got.errAnti)
	}

	// The cache is bounded: it starts over when full.
	pods := make([]*v1.Pod, maxCachedPods+10)
	for i := range pods {
		pods[i] = affinePod(fmt.Sprint(i), "x")
		c.get(taskOf(pods[i]))
	}
	c.mu.Lock()
	n := len(c.pods)
	c.mu.Unlock()
	if n > maxCachedPods || n == 0 {
		t.Errorf("the cache holds %d pods, want 1..%d", n, maxCachedPods)
	}
}

// BenchmarkExistingTerms compares what PreFilterPod and PreScore did for
// each existing pod with affinity on every cycle, parsing its terms, with
// the cached lookup that replaced it.
func BenchmarkExistingTerms(b *testing.B) {
	pods := make([]*v1.Pod, 1500)
	for i := range pods {
		pods[i] = affinePod(fmt.Sprint(i), fmt.Sprint(i%7))
	}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pods {
				_ = parseExisting(taskOf(p))
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		var c termCache
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range pods {
				_ = c.get(taskOf(p))
			}
		}
	})
}
