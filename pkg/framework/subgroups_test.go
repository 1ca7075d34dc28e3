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

package framework

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func subPod(name string, lbls, ann map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Labels: lbls, Annotations: ann}}
}

func names(pods []*v1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

func TestSplitSubGroupsByLabels(t *testing.T) {
	rules := []SubGroupRule{
		{Name: "prefill", Selector: labels.SelectorFromSet(labels.Set{"role": "prefill"}), KeyLabels: []string{"replica"}, MinMember: 2, MinSubGroups: 1},
		{Name: "decode", Selector: labels.SelectorFromSet(labels.Set{"role": "decode"}), MinMember: 1},
	}
	pf := func(name, replica string) *v1.Pod {
		return subPod(name, map[string]string{"role": "prefill", "replica": replica}, nil)
	}
	job := &Job{ID: JobID{Namespace: "ns", Name: "svc", Gang: true}, Pending: []*v1.Pod{
		pf("a", "10"), pf("b", "2"), subPod("c", map[string]string{"role": "decode"}, nil),
		subPod("d", nil, nil), pf("e", "2"), subPod("f", map[string]string{"role": "prefill"}, nil),
	}}
	running := []*v1.Pod{pf("z", "10")}
	if err := SplitSubGroups(job, rules, running, []string{"n1"}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, g := range job.SubGroups {
		keys = append(keys, g.Key+"="+names(g.Pending))
	}
	// Numbers by value ("2" before "10"); a pod without the key label
	// (f) and one no rule takes (d) are in no sub-group, last.
	if got, want := strings.Join(keys, " "), "prefill/2=b,e prefill/10=a decode=c"; got != want {
		t.Errorf("sub-groups = %q, want %q", got, want)
	}
	if got, want := names(job.Pending), "b,e,a,c,d,f"; got != want {
		t.Errorf("pending = %q, want %q", got, want)
	}
	if g := job.SubGroups[1]; g.Bound != 1 || !slices.Equal(g.PlacedNodes, []string{"n1"}) || g.MinMember != 2 {
		t.Errorf("prefill/10 = bound %d on %v, quorum %d; want the running pod counted, quorum 2", g.Bound, g.PlacedNodes, g.MinMember)
	}
	// One placed pod of prefill/10 holds it (one runs); prefill/2 needs both.
	placed := map[string]string{"a": "n2", "b": "n3"}
	if got := SubGroupsAtQuorum(job, placed); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("at quorum = %v, want [1 0]", got)
	}
}

func TestSplitSubGroupsFromAnnotations(t *testing.T) {
	ann := func(group, quorum, minSub string) map[string]string {
		m := map[string]string{SubGroupAnnotation: group, SubGroupMinAvailableAnnotation: quorum}
		if minSub != "" {
			m[MinSubGroupsAnnotation] = minSub
		}
		return m
	}
	job := &Job{ID: JobID{Namespace: "ns", Name: "g", Gang: true}, Pending: []*v1.Pod{
		subPod("a-0", nil, ann("a", "2", "2")), subPod("a-1", nil, ann("a", "2", "2")),
		subPod("b-0", nil, map[string]string{SubGroupAnnotation: "b", SubGroupMinAvailableAnnotation: "3", SubGroupTopologyRequiredAnnotation: "rack"}),
	}}
	if err := SplitSubGroups(job, []SubGroupRule{ownSubGroupRule}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(job.SubGroups) != 2 || job.SubGroups[0].MinMember != 2 || job.SubGroups[1].MinMember != 3 {
		t.Fatalf("sub-groups = %+v, want a (quorum 2) and b (quorum 3)", job.SubGroups)
	}
	if tp := job.SubGroups[1].Topology; tp == nil || tp.Key != "rack" || !tp.Required {
		t.Errorf("b's topology = %v, want required rack", tp)
	}
	if got := job.SubGroupRules[0].MinSubGroups; got != 2 {
		t.Errorf("min sub-groups = %d, want 2 from the first pod", got)
	}

	for _, tt := range []struct {
		ann  map[string]string
		want string
	}{
		{map[string]string{SubGroupAnnotation: "a", SubGroupMinAvailableAnnotation: "0"}, SubGroupMinAvailableAnnotation + `="0" of pod ns/x must be an integer >= 1`},
		{map[string]string{SubGroupAnnotation: "a"}, `sub-group "a" of gang ns/g declares no quorum`},
		{map[string]string{SubGroupAnnotation: "a", SubGroupMinAvailableAnnotation: "1", MinSubGroupsAnnotation: "-1"}, MinSubGroupsAnnotation + `="-1" of pod ns/x must be an integer >= 0`},
		{map[string]string{SubGroupAnnotation: "a", SubGroupMinAvailableAnnotation: "1", SubGroupTopologyPreferredAnnotation: "not a key"}, SubGroupTopologyPreferredAnnotation + `="not a key" of pod ns/x is not a node label key`},
	} {
		job := &Job{ID: JobID{Namespace: "ns", Name: "g", Gang: true}, Pending: []*v1.Pod{subPod("x", nil, tt.ann)}}
		err := SplitSubGroups(job, []SubGroupRule{ownSubGroupRule}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("annotations %v: error %v, want one containing %q", tt.ann, err, tt.want)
		}
		if job.SubGroups != nil {
			t.Errorf("annotations %v: sub-groups set on error", tt.ann)
		}
	}
}

func TestNaturalCompare(t *testing.T) {
	keys := []string{"r/10", "r/2", "a", "r/02x", "r/1", "b/3", ""}
	slices.SortFunc(keys, naturalCompare)
	if got, want := strings.Join(keys, " "), " a b/3 r/1 r/2 r/02x r/10"; got != want {
		t.Errorf("sorted = %q, want %q", got, want)
	}
}

func TestSubGroupRulesOfAJob(t *testing.T) {
	j := NewJobInfo(JobID{Namespace: "ns", Name: "g", Gang: true})
	if r := j.SubGroupRules(); r != nil {
		t.Errorf("rules of an empty gang = %v, want none", r)
	}
	j.SetTask(&TaskInfo{Pod: subPod("p", nil, map[string]string{SubGroupAnnotation: "x"}), Job: j.ID})
	if r := j.SubGroupRules(); len(r) != 1 || r[0].KeyAnnotation != SubGroupAnnotation {
		t.Errorf("rules = %+v, want the annotation's", r)
	}
	// The job counts its annotated members: a member replaced without
	// the annotation, or deleted, no longer names a sub-group.
	j.SetTask(&TaskInfo{Pod: subPod("q", nil, map[string]string{SubGroupAnnotation: "x"}), Job: j.ID})
	j.SetTask(&TaskInfo{Pod: subPod("p", nil, nil), Job: j.ID})
	if r := j.SubGroupRules(); len(r) != 1 {
		t.Errorf("rules with q annotated = %+v, want the annotation's", r)
	}
	j.DeleteTask("q")
	if r := j.SubGroupRules(); r != nil {
		t.Errorf("rules after the annotated members left = %+v, want none", r)
	}
	if r := NewJobInfo(JobID{Namespace: "ns", Name: "p"}).SubGroupRules(); r != nil {
		t.Errorf("rules of a single pod = %v, want none", r)
	}
}

// A rule keyed by the pods' native PodGroup (a CompositePodGroup's
// children) takes each sub-group's quorum and topology by key, ignoring
// the pods' annotations; a sub-group without a quorum is an error.
func TestSplitSubGroupsByPodGroup(t *testing.T) {
	child := func(name, group string) *v1.Pod {
		p := subPod(name, nil, map[string]string{SubGroupMinAvailableAnnotation: "9", SubGroupTopologyRequiredAnnotation: "zone"})
		if group != "" {
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
		}
		return p
	}
	rack := &TopologyConstraint{Key: "rack", Required: true}
	rules := []SubGroupRule{{KeyPodGroup: true, MinSubGroups: 2, Source: "composite",
		Quorums: map[string]int32{"a": 2, "b": 1}, Topologies: map[string]*TopologyConstraint{"a": rack}}}
	job := &Job{ID: JobID{Namespace: "ns", Name: "c", Gang: true}, Pending: []*v1.Pod{child("a0", "a"), child("b0", "b"), child("x", ""), child("a1", "a")}}
	if err := SplitSubGroups(job, rules, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(job.SubGroups) != 2 {
		t.Fatalf("sub-groups %+v", job.SubGroups)
	}
	a, b := job.SubGroups[0], job.SubGroups[1]
	if a.Key != "a" || a.MinMember != 2 || a.Topology != rack || names(a.Pending) != "a0,a1" {
		t.Errorf("a = %+v", a)
	}
	if b.Key != "b" || b.MinMember != 1 || b.Topology != nil {
		t.Errorf("b = %+v", b)
	}
	if got := SubGroupQuorum(&rules[0], child("a9", "a")); got != 2 {
		t.Errorf("SubGroupQuorum of a = %d", got)
	}
	if got := SubGroupQuorum(&rules[0], child("x", "")); got != 0 {
		t.Errorf("SubGroupQuorum of a pod of no PodGroup = %d", got)
	}
	job = &Job{ID: JobID{Namespace: "ns", Name: "c", Gang: true}, Pending: []*v1.Pod{child("z0", "z")}}
	if err := SplitSubGroups(job, rules, nil, nil); err == nil || !strings.Contains(err.Error(), `sub-group "z" of gang ns/`) {
		t.Errorf("a child without a quorum: %v", err)
	}
}

// A pod of a native PodGroup whose parent composite is a gang is in the
// composite's job, keyed apart from a group of the same name.
func TestResolveCompositeParent(t *testing.T) {
	r := GroupResolver{Matcher: testMatcher{}, Parent: func(namespace, podGroup string) (string, bool) {
		return "c", namespace == "ns" && podGroup == "a"
	}}
	group := "a"
	pod := subPod("p", nil, nil)
	pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	m := r.Resolve(pod)
	if got, want := m.JobID("ns", "p"), (JobID{Namespace: "ns", Name: "c", Gang: true, Owner: GroupKindComposite}); got != want || m.Ref.Object != "c" {
		t.Fatalf("job %v (object %s), want %v", got, m.Ref.Object, want)
	}
	group = "b"
	if got := r.JobID(pod); got != (JobID{Namespace: "ns", Name: "b", Gang: true}) {
		t.Fatalf("a PodGroup without a parent: job %v", got)
	}
}
