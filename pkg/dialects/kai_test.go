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

package dialects

import (
	"maps"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

const kaiSrc = "PodGroup.scheduling.run.ai ns/g"

// A KAI PodGroup without sub-groups: spec.minMember (1 when absent),
// spec.queue and spec.topologyConstraint, each bad field named.
func TestKAIPolicy(t *testing.T) {
	rack := func(field string, required bool) *framework.TopologyConstraint {
		return &framework.TopologyConstraint{Key: "example.com/rack", Required: required, Source: kaiSrc + " spec.topologyConstraint." + field}
	}
	tests := []struct {
		name     string
		spec     map[string]any
		min      int32
		queue    string
		topology *framework.TopologyConstraint
		err      string
	}{
		{name: "minMember", spec: map[string]any{"minMember": int64(3), "queue": "team-a"}, min: 3, queue: "team-a"},
		{name: "default minMember", spec: map[string]any{}, min: 1},
		{name: "minMember 0", spec: map[string]any{"minMember": int64(0)}, err: "spec.minMember is 0, must be >= 1"},
		{name: "minMember a string", spec: map[string]any{"minMember": "2"}, err: "spec.minMember is a string, not an integer"},
		{name: "queue a number", spec: map[string]any{"queue": int64(2)}, err: "spec.queue is a number, not a string"},
		{name: "required", spec: map[string]any{"minMember": int64(2), "topologyConstraint": map[string]any{
			"requiredTopologyLevel": "example.com/rack", "topology": "cluster-topology"}}, min: 2, topology: rack("requiredTopologyLevel", true)},
		{name: "preferred", spec: map[string]any{"minMember": int64(2), "topologyConstraint": map[string]any{
			"preferredTopologyLevel": "example.com/rack"}}, min: 2, topology: rack("preferredTopologyLevel", false)},
		{name: "required wins over preferred", spec: map[string]any{"minMember": int64(2), "topologyConstraint": map[string]any{
			"preferredTopologyLevel": "example.com/node", "requiredTopologyLevel": "example.com/rack"}}, min: 2, topology: rack("requiredTopologyLevel", true)},
		{name: "empty constraint", spec: map[string]any{"minMember": int64(2), "topologyConstraint": map[string]any{}}, min: 2},
		{name: "level not a label key", spec: map[string]any{"topologyConstraint": map[string]any{"requiredTopologyLevel": "a rack"}},
			err: `spec.topologyConstraint.requiredTopologyLevel "a rack" is not a node label key`},
		{name: "constraint a list", spec: map[string]any{"topologyConstraint": []any{}}, err: "spec.topologyConstraint is a list, not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := kaiPolicy(obj(tt.spec))
			if tt.err != "" {
				checkErr(t, p, kaiSrc, tt.err)
				return
			}
			if p.Err != nil || p.MinMember != tt.min || p.Queue != tt.queue || !sameConstraint(p.Topology, tt.topology) || len(p.SubGroups) != 0 {
				t.Fatalf("policy %+v (topology %v), want minMember %d queue %q topology %v and no sub-groups", p, p.Topology, tt.min, tt.queue, tt.topology)
			}
		})
	}
}

// KAI sub-groups: the leaves of the tree are the sub-groups, keyed by the
// pods' label kai.scheduler/subgroup-name, each with max(minMember, 1)
// and its own domain or its nearest ancestor's; all of them are the
// whole's quorum in sub-groups and the sum of theirs its quorum in pods.
func TestKAISubGroups(t *testing.T) {
	level := func(key string, required bool, at string) *framework.TopologyConstraint {
		field := ".preferredTopologyLevel"
		if required {
			field = ".requiredTopologyLevel"
		}
		return &framework.TopologyConstraint{Key: key, Required: required, Source: kaiSrc + " " + at + ".topologyConstraint" + field}
	}
	sg := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	within := func(key string) map[string]any { return map[string]any{"requiredTopologyLevel": key} }

	t.Run("two roles", func(t *testing.T) {
		p := kaiPolicy(obj(map[string]any{"minMember": int64(2), "subGroups": []any{
			sg("name", "decode", "minMember", int64(4), "topologyConstraint", within("example.com/rack")),
			sg("name", "prefill", "minMember", int64(0)),
		}}))
		if p.Err != nil || p.MinMember != 5 || len(p.SubGroups) != 1 {
			t.Fatalf("policy %+v, want minMember 5 (4+1) and one rule", p)
		}
		r := p.SubGroups[0]
		if r.MinSubGroups != 2 || !maps.Equal(r.Quorums, map[string]int32{"decode": 4, "prefill": 1}) ||
			len(r.KeyLabels) != 1 || r.KeyLabels[0] != framework.KAISubGroupLabel || r.Source != kaiSrc+" spec.subGroups" {
			t.Fatalf("rule %+v, want both leaves required with quorums 4 and 1 keyed by %s", r, framework.KAISubGroupLabel)
		}
		if !sameConstraint(r.Topologies["decode"], level("example.com/rack", true, "spec.subGroups[0]")) || r.Topologies["prefill"] != nil {
			t.Errorf("topologies %v, want decode's rack and none for prefill", r.Topologies)
		}
		checkSubGroupOf(t, p.SubGroups, podWithLabels(framework.KAISubGroupLabel, "decode"), 0, "decode")
		checkSubGroupOf(t, p.SubGroups, podWithLabels("role", "decode"), 0, "")
	})
	t.Run("nested", func(t *testing.T) {
		p := kaiPolicy(obj(map[string]any{
			"topologyConstraint": within("example.com/zone"),
			"subGroups": []any{
				sg("name", "decode", "topologyConstraint", within("example.com/block")),
				sg("name", "decode-workers", "parent", "Decode", "minMember", int64(4), "topologyConstraint",
					map[string]any{"preferredTopologyLevel": "example.com/rack"}),
				sg("name", "decode-leader", "parent", "decode"),
				sg("name", "prefill", "minMember", int64(2)),
			}}))
		if p.Err != nil || p.MinMember != 7 {
			t.Fatalf("policy %+v, want minMember 7 (4+1+2)", p)
		}
		if !sameConstraint(p.Topology, level("example.com/zone", true, "spec")) {
			t.Errorf("whole's topology %v, want the zone", p.Topology)
		}
		r := p.SubGroups[0]
		if r.MinSubGroups != 3 || !maps.Equal(r.Quorums, map[string]int32{"decode-workers": 4, "decode-leader": 1, "prefill": 2}) {
			t.Fatalf("rule %+v, want the three leaves", r)
		}
		want := map[string]*framework.TopologyConstraint{
			"decode-workers": level("example.com/rack", false, "spec.subGroups[1]"),
			"decode-leader":  level("example.com/block", true, "spec.subGroups[0]"),
		}
		if !maps.EqualFunc(r.Topologies, want, sameConstraint) {
			t.Errorf("topologies %v, want %v", r.Topologies, want)
		}
		// A pod naming the middle sub-group is in a sub-group with no
		// quorum: the framework reports it (the gang does not start).
		if _, ok := r.Quorums["decode"]; ok {
			t.Error("the middle sub-group has a quorum")
		}
	})
	for _, tt := range []struct {
		name      string
		subGroups any
		err       string
	}{
		{name: "not a list", subGroups: map[string]any{}, err: "spec.subGroups is an object, not a list"},
		{name: "entry not an object", subGroups: []any{"a"}, err: "spec.subGroups[0] is a string, not an object"},
		{name: "no name", subGroups: []any{sg("minMember", int64(1))}, err: "spec.subGroups[0].name is missing"},
		{name: "name not a label value", subGroups: []any{sg("name", "a b")}, err: `spec.subGroups[0].name "a b" cannot be the value of label kai.scheduler/subgroup-name`},
		{name: "duplicate", subGroups: []any{sg("name", "a"), sg("name", "A")}, err: `spec.subGroups[1].name "A" is also spec.subGroups[0].name`},
		{name: "unknown parent", subGroups: []any{sg("name", "a", "parent", "b")}, err: `spec.subGroups[0].parent "b" names no sub-group`},
		{name: "cycle", subGroups: []any{sg("name", "a", "parent", "b"), sg("name", "b", "parent", "a")}, err: "form a cycle"},
		{name: "minMember negative", subGroups: []any{sg("name", "a", "minMember", int64(-1))}, err: "spec.subGroups[0].minMember is negative"},
		{name: "bad level", subGroups: []any{sg("name", "a", "topologyConstraint", within("-x-"))},
			err: `spec.subGroups[0].topologyConstraint.requiredTopologyLevel "-x-" is not a node label key`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, kaiPolicy(obj(map[string]any{"minMember": int64(1), "subGroups": tt.subGroups})), kaiSrc, tt.err)
		})
	}
}

// A pod names its KAI PodGroup with the annotation pod-group-name; the
// label kai.scheduler/subgroup-name alone names no gang.
func TestKAIMatch(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
		Annotations: map[string]string{framework.KAIPodGroupAnnotation: "train"}}}
	refs := Builtin().Explicit(pod)
	if len(refs) != 1 || refs[0].Kind != framework.GroupKindKAI || refs[0].Name != "train" ||
		!strings.Contains(refs[0].Signal(), "annotation pod-group-name=train") {
		t.Fatalf("refs %+v, want the KAI PodGroup train", refs)
	}
	pod.Annotations = nil
	pod.Labels = map[string]string{framework.KAISubGroupLabel: "decode"}
	if refs := Builtin().Explicit(pod); len(refs) != 0 {
		t.Errorf("refs %+v for a pod with only a sub-group label, want none", refs)
	}
}
