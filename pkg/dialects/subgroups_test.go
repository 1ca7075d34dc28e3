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
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The sub-group rules of the dialects: a Volcano PodGroup's
// spec.subGroupPolicy, a LeaderWorkerSet's groups, a JobSet's Jobs.

// rule is a framework.SubGroupRule as the tests compare it: the selector
// as its string ("" for none).
type rule struct {
	name, selector string
	keys           []string
	min, minGroups int32
	topology       *framework.TopologyConstraint
	source         string
}

// rulesOf renders rules for comparison.
func rulesOf(rules []framework.SubGroupRule) []rule {
	var out []rule
	for _, r := range rules {
		sel := ""
		if r.Selector != nil {
			sel = r.Selector.String()
			if sel == "" {
				sel = "<everything>"
			}
		}
		if r.KeyAnnotation != "" {
			sel += " annotation " + r.KeyAnnotation
		}
		out = append(out, rule{name: r.Name, selector: sel, keys: r.KeyLabels, min: r.MinMember, minGroups: r.MinSubGroups, topology: r.Topology, source: r.Source})
	}
	return out
}

func (r rule) String() string {
	t := "none"
	if r.topology != nil {
		t = fmt.Sprintf("%+v", *r.topology)
	}
	return fmt.Sprintf("{name %q selector %q keys %q min %d minSubGroups %d topology %s source %q}", r.name, r.selector, r.keys, r.min, r.minGroups, t, r.source)
}

func sameRule(a, b rule) bool {
	return a.name == b.name && a.selector == b.selector && slices.Equal(a.keys, b.keys) && a.min == b.min &&
		a.minGroups == b.minGroups && sameConstraint(a.topology, b.topology) && a.source == b.source
}

func sameConstraint(a, b *framework.TopologyConstraint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// sameRules reports whether a and b are the same rules, in order.
func sameRules(a, b []framework.SubGroupRule) bool {
	return slices.EqualFunc(rulesOf(a), rulesOf(b), sameRule)
}

// checkRules fails unless got are want.
func checkRules(t *testing.T, got []framework.SubGroupRule, want []rule) {
	t.Helper()
	g := rulesOf(got)
	if !slices.EqualFunc(g, want, sameRule) {
		t.Errorf("rules\n got %v\nwant %v", g, want)
	}
}

// checkErr fails unless p is an error that names src and contains want.
func checkErr(t *testing.T, p *framework.GroupPolicy, src, want string) {
	t.Helper()
	if p == nil || p.Err == nil || !strings.Contains(p.Err.Error(), want) || !strings.Contains(p.Err.Error(), src) {
		t.Fatalf("policy %+v, want an error naming %s and containing %q", p, src, want)
	}
	if len(p.SubGroups) != 0 {
		t.Errorf("a broken policy has sub-group rules %v", rulesOf(p.SubGroups))
	}
}

// podWithLabels is a pod ns/p with labels (key, value pairs).
func podWithLabels(kv ...string) *v1.Pod {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: l}}
}

// checkSubGroupOf fails unless rules put pod in sub-group key of rule
// index; key "" says no rule takes it.
func checkSubGroupOf(t *testing.T, rules []framework.SubGroupRule, pod *v1.Pod, index int, key string) {
	t.Helper()
	i, k, ok := framework.SubGroupOf(rules, pod)
	switch {
	case key == "" && ok:
		t.Errorf("pod with labels %v is in sub-group %q of rule %d, want none", pod.Labels, k, i)
	case key != "" && (!ok || i != index || k != key):
		t.Errorf("pod with labels %v: rule %d sub-group %q (taken %v), want rule %d sub-group %q", pod.Labels, i, k, ok, index, key)
	}
}

const volcanoSrc = "PodGroup.scheduling.volcano.sh ns/g"

func TestVolcanoSubGroupPolicy(t *testing.T) {
	policy := minMemberPolicy(framework.GroupKindVolcano)
	spec := func(entries any) map[string]any {
		return map[string]any{"minMember": int64(4), "subGroupPolicy": entries}
	}
	list := func(entries ...any) []any { return entries }
	entry := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	src := func(i int) string { return fmt.Sprintf("%s spec.subGroupPolicy[%d]", volcanoSrc, i) }

	t.Run("roles", func(t *testing.T) {
		p := policy(obj(spec(list(
			entry("name", "prefill", "subGroupSize", int64(2), "minSubGroups", int64(1),
				"labelSelector", map[string]any{"matchLabels": map[string]any{"role": "prefill"}},
				"matchLabelKeys", []any{"replica"},
				"networkTopology", map[string]any{"mode": "soft", "highestTierAllowed": int64(2)}),
			entry("name", "decode", "subGroupSize", 3.0,
				"labelSelector", map[string]any{"matchExpressions": []any{
					map[string]any{"key": "role", "operator": "In", "values": []any{"decode", "both"}},
					map[string]any{"key": "zone", "operator": "Exists"}}},
				"matchLabelKeys", []any{"replica", "example.com/shard"}),
		))))
		if p.Err != nil || p.MinMember != 4 || p.Topology != nil {
			t.Fatalf("policy %+v, want minMember 4, no topology, no error", p)
		}
		checkRules(t, p.SubGroups, []rule{
			{name: "prefill", selector: "role=prefill", keys: []string{"replica"}, min: 2, minGroups: 1,
				topology: &framework.TopologyConstraint{Tier: 2, Source: src(0) + ".networkTopology"}, source: src(0)},
			{name: "decode", selector: "role in (both,decode),zone", keys: []string{"replica", "example.com/shard"}, min: 3, source: src(1)},
		})
		checkSubGroupOf(t, p.SubGroups, podWithLabels("role", "prefill", "replica", "1"), 0, "prefill/1")
		checkSubGroupOf(t, p.SubGroups, podWithLabels("role", "decode", "zone", "a", "replica", "0", "example.com/shard", "3"), 1, "decode/0,3")
		checkSubGroupOf(t, p.SubGroups, podWithLabels("role", "decode", "replica", "0", "example.com/shard", "3"), 0, "")
		checkSubGroupOf(t, p.SubGroups, podWithLabels("role", "prefill"), 0, "")
	})
	t.Run("defaults", func(t *testing.T) {
		p := policy(obj(spec(list(entry("name", "all")))))
		if p.Err != nil {
			t.Fatal(p.Err)
		}
		checkRules(t, p.SubGroups, []rule{{name: "all", min: 1, source: src(0)}})
		checkSubGroupOf(t, p.SubGroups, podWithLabels(), 0, "all")
	})
	t.Run("an empty selector selects every pod", func(t *testing.T) {
		p := policy(obj(spec(list(entry("labelSelector", map[string]any{}, "matchLabelKeys", []any{"r"})))))
		if p.Err != nil {
			t.Fatal(p.Err)
		}
		checkRules(t, p.SubGroups, []rule{{selector: "<everything>", keys: []string{"r"}, min: 1, source: src(0)}})
		checkSubGroupOf(t, p.SubGroups, podWithLabels("r", "7"), 0, "7")
	})
	t.Run("hard topology of the default tier", func(t *testing.T) {
		p := policy(obj(spec(list(entry("name", "w", "networkTopology", map[string]any{"mode": "hard"})))))
		if p.Err != nil {
			t.Fatal(p.Err)
		}
		checkRules(t, p.SubGroups, []rule{{name: "w", min: 1, source: src(0),
			topology: &framework.TopologyConstraint{Tier: 1, Required: true, Source: src(0) + ".networkTopology"}}})
	})
	for _, tt := range []struct {
		name string
		spec map[string]any
	}{
		{name: "none", spec: map[string]any{"minMember": int64(4)}},
		{name: "null", spec: spec(nil)},
		{name: "empty", spec: spec([]any{})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if p := policy(obj(tt.spec)); p.Err != nil || len(p.SubGroups) != 0 || p.MinMember != 4 {
				t.Fatalf("policy %+v, want minMember 4 and no rules", p)
			}
		})
	}
	// The scheduler-plugins PodGroup has no sub-groups.
	if p := minMemberPolicy(framework.GroupKindCoscheduling)(obj(spec(list(entry("name", "w"))))); p.Err != nil || len(p.SubGroups) != 0 {
		t.Errorf("scheduler-plugins PodGroup policy %+v, want no rules", p)
	}

	for _, tt := range []struct {
		name    string
		entries any
		want    string
	}{
		{name: "not a list", entries: map[string]any{}, want: "spec.subGroupPolicy is an object, not a list"},
		{name: "entry not an object", entries: list(entry("name", "a"), "b"), want: "spec.subGroupPolicy[1] is a string, not an object"},
		{name: "name not a string", entries: list(entry("name", int64(1))), want: "spec.subGroupPolicy[0].name is a number, not a string"},
		{name: "the same name twice", entries: list(entry("name", "w"), entry("name", "x"), entry("name", "w")),
			want: `spec.subGroupPolicy[2].name "w" is also spec.subGroupPolicy[0].name`},
		{name: "two without a name", entries: list(entry(), entry("subGroupSize", int64(2))),
			want: `spec.subGroupPolicy[1].name "" is also spec.subGroupPolicy[0].name`},
		{name: "size 0", entries: list(entry("name", "a"), entry("name", "b", "subGroupSize", int64(0))),
			want: "spec.subGroupPolicy[1].subGroupSize is 0, must be >= 1"},
		{name: "negative size", entries: list(entry("name", "a"), entry("name", "b", "subGroupSize", int64(-1))),
			want: "spec.subGroupPolicy[1].subGroupSize is negative (-1)"},
		{name: "size as a string", entries: list(entry("subGroupSize", "2")), want: "spec.subGroupPolicy[0].subGroupSize is a string, not an integer"},
		{name: "fractional size", entries: list(entry("subGroupSize", 1.5)), want: "spec.subGroupPolicy[0].subGroupSize is 1.5, not an integer"},
		{name: "huge size", entries: list(entry("subGroupSize", int64(1)<<40)), want: "spec.subGroupPolicy[0].subGroupSize is too large"},
		{name: "negative minSubGroups", entries: list(entry("minSubGroups", int64(-2))), want: "spec.subGroupPolicy[0].minSubGroups is negative (-2)"},
		{name: "minSubGroups as a list", entries: list(entry("minSubGroups", []any{})), want: "spec.subGroupPolicy[0].minSubGroups is a list, not an integer"},
		{name: "selector not an object", entries: list(entry("labelSelector", "role=a")), want: "spec.subGroupPolicy[0].labelSelector is a string, not an object"},
		{name: "matchLabels not an object", entries: list(entry("labelSelector", map[string]any{"matchLabels": []any{}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchLabels is a list, not an object"},
		{name: "matchLabels value not a string", entries: list(entry("labelSelector", map[string]any{"matchLabels": map[string]any{"a": "x", "b": int64(2)}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchLabels[\"b\"] is a number, not a string"},
		{name: "bad label key", entries: list(entry("labelSelector", map[string]any{"matchLabels": map[string]any{"no spaces": "x"}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchLabels[\"no spaces\"]: "},
		{name: "bad label value", entries: list(entry("labelSelector", map[string]any{"matchLabels": map[string]any{"a": "not ok!"}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchLabels[\"a\"]: "},
		{name: "matchExpressions not a list", entries: list(entry("labelSelector", map[string]any{"matchExpressions": map[string]any{}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchExpressions is an object, not a list"},
		{name: "expression not an object", entries: list(entry("labelSelector", map[string]any{"matchExpressions": []any{"a"}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchExpressions[0] is a string, not an object"},
		{name: "bad operator", entries: list(entry("labelSelector", map[string]any{"matchExpressions": []any{
			map[string]any{"key": "a", "operator": "In", "values": []any{"x"}}, map[string]any{"key": "a", "operator": "Near"}}})),
			want: `spec.subGroupPolicy[0].labelSelector.matchExpressions[1]: "Near" is not a valid label selector operator`},
		{name: "In without values", entries: list(entry("labelSelector", map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "In"}}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchExpressions[0]: "},
		{name: "expression without a key", entries: list(entry("labelSelector", map[string]any{"matchExpressions": []any{map[string]any{"operator": "Exists"}}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchExpressions[0]: "},
		{name: "key not a string", entries: list(entry("labelSelector", map[string]any{"matchExpressions": []any{map[string]any{"key": true, "operator": "Exists"}}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchExpressions[0].key is a boolean, not a string"},
		{name: "values not a list", entries: list(entry("labelSelector", map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "In", "values": "x"}}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchExpressions[0].values is a string, not a list"},
		{name: "value not a string", entries: list(entry("labelSelector", map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "In", "values": []any{"x", int64(3)}}}})),
			want: "spec.subGroupPolicy[0].labelSelector.matchExpressions[0].values[1] is a number, not a string"},
		{name: "matchLabelKeys not a list", entries: list(entry("matchLabelKeys", "replica")), want: "spec.subGroupPolicy[0].matchLabelKeys is a string, not a list"},
		{name: "label key not a string", entries: list(entry("matchLabelKeys", []any{"a", map[string]any{}})), want: "spec.subGroupPolicy[0].matchLabelKeys[1] is an object, not a string"},
		{name: "bad label key in matchLabelKeys", entries: list(entry("matchLabelKeys", []any{"-bad-"})), want: `spec.subGroupPolicy[0].matchLabelKeys[0] "-bad-" is not a label key`},
		{name: "empty label key", entries: list(entry("matchLabelKeys", []any{""})), want: `spec.subGroupPolicy[0].matchLabelKeys[0] "" is not a label key`},
		{name: "topology not an object", entries: list(entry("networkTopology", "hard")), want: "spec.subGroupPolicy[0].networkTopology is a string, not an object"},
		{name: "bad mode", entries: list(entry("name", "a"), entry("name", "b", "networkTopology", map[string]any{"mode": "strict"})),
			want: "spec.subGroupPolicy[1].networkTopology.mode strict is neither hard nor soft"},
		{name: "bad tier", entries: list(entry("networkTopology", map[string]any{"highestTierAllowed": int64(0)})),
			want: "spec.subGroupPolicy[0].networkTopology.highestTierAllowed 0 is not an integer >= 1"},
		{name: "tier as a string", entries: list(entry("networkTopology", map[string]any{"highestTierAllowed": "1"})),
			want: "spec.subGroupPolicy[0].networkTopology.highestTierAllowed 1 is not an integer >= 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, policy(obj(spec(tt.entries))), volcanoSrc, tt.want)
		})
	}
}

// The Volcano PodGroup's informer keeps spec.subGroupPolicy: its objects
// are kept whole (their status is written) or, were they slimmed, the
// policy of the slim object has the same rules.
func TestVolcanoWatchKeepsSubGroupPolicy(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "g", "namespace": "ns"},
		"spec": map[string]any{"minMember": int64(4), "subGroupPolicy": []any{map[string]any{
			"name": "w", "subGroupSize": int64(2), "minSubGroups": int64(1), "matchLabelKeys": []any{"r"},
			"labelSelector":   map[string]any{"matchLabels": map[string]any{"role": "w"}},
			"networkTopology": map[string]any{"mode": "hard", "highestTierAllowed": int64(2)}}}},
	}}
	var found bool
	for _, w := range Builtin().Watches(true, 0) {
		if w.Kind != framework.GroupKindVolcano {
			continue
		}
		found = true
		in := u.DeepCopy()
		if w.Transform != nil {
			out, err := w.Transform(in)
			if err != nil {
				t.Fatal(err)
			}
			in = out.(*unstructured.Unstructured)
		}
		p := w.Policy(in)
		if p == nil || p.Err != nil || len(p.SubGroups) != 1 {
			t.Fatalf("policy of the watched object %+v, want one rule", p)
		}
		checkRules(t, p.SubGroups, rulesOf(minMemberPolicy(framework.GroupKindVolcano)(u).SubGroups))
	}
	if !found {
		t.Fatal("the Volcano PodGroup is not watched")
	}
}

// annotatedObject builds the owner object of kind named ns/o with
// annotations (nil for none), spec and status.
func annotatedObject(kind string, annotations map[string]any, spec, status map[string]any) *unstructured.Unstructured {
	u := object(kind, spec, status)
	if annotations != nil {
		u.Object["metadata"].(map[string]any)["annotations"] = annotations
	}
	return u
}

// checkSlimRules fails unless the policy of the object slimmed with
// fields has the same rules and error as the object's.
func checkSlimRules(t *testing.T, u *unstructured.Unstructured, fields [][]string, policy func(*unstructured.Unstructured) *framework.GroupPolicy) {
	t.Helper()
	slim, err := Slimmer(fields...)(u.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	p, ps := policy(u), policy(slim.(*unstructured.Unstructured))
	if !sameRules(p.SubGroups, ps.SubGroups) || (p.Err == nil) != (ps.Err == nil) || (p.Err != nil && p.Err.Error() != ps.Err.Error()) {
		t.Errorf("the slim object's policy (rules %v, err %v) differs from the object's (rules %v, err %v)",
			rulesOf(ps.SubGroups), ps.Err, rulesOf(p.SubGroups), p.Err)
	}
}

const lwsSrc = "LeaderWorkerSet.leaderworkerset.x-k8s.io ns/o"

func TestLeaderWorkerSetSubGroups(t *testing.T) {
	groups := func(min int32, topology *framework.TopologyConstraint) []rule {
		return []rule{{keys: []string{framework.LeaderWorkerSetGroupIndexLabel}, min: min, topology: topology, source: lwsSrc + " spec.leaderWorkerTemplate"}}
	}
	exclusive := func(v any) map[string]any {
		return map[string]any{LeaderWorkerSetExclusiveTopologyAnnotation: v, "other": "x"}
	}
	rack := &framework.TopologyConstraint{Key: "topology.kubernetes.io/rack", Required: true,
		Source: lwsSrc + " annotation leaderworkerset.sigs.k8s.io/exclusive-topology"}
	size := func(n int64, extra ...any) map[string]any {
		s := map[string]any{"leaderWorkerTemplate": map[string]any{"size": n}}
		for i := 0; i+1 < len(extra); i += 2 {
			s[extra[i].(string)] = extra[i+1]
		}
		return s
	}
	for _, tt := range []struct {
		name        string
		annotations map[string]any
		spec        map[string]any
		wantMin     int32
		want        []rule
		wantErr     string
	}{
		{name: "groups of the size", spec: size(4), wantMin: 4, want: groups(4, nil)},
		{name: "default size", spec: map[string]any{}, wantMin: 1, want: groups(1, nil)},
		{name: "leader ready: the leader alone", spec: size(4, "startupPolicy", "LeaderReady"), wantMin: 1, want: groups(1, nil)},
		{name: "leader created", spec: size(3, "startupPolicy", "LeaderCreated"), wantMin: 3, want: groups(3, nil)},
		{name: "exclusive topology", annotations: exclusive("topology.kubernetes.io/rack"), spec: size(4), wantMin: 4, want: groups(4, rack)},
		{name: "other annotations only", annotations: map[string]any{"other": "x"}, spec: size(2), wantMin: 2, want: groups(2, nil)},
		{name: "exclusive topology not a label key", annotations: exclusive("not a key"), spec: size(4),
			wantErr: `annotation leaderworkerset.sigs.k8s.io/exclusive-topology="not a key" is not a node label key`},
		{name: "exclusive topology empty", annotations: exclusive(""), spec: size(4),
			wantErr: `annotation leaderworkerset.sigs.k8s.io/exclusive-topology="" is not a node label key`},
		{name: "exclusive topology not a string", annotations: exclusive(int64(3)), spec: size(4),
			wantErr: "annotation leaderworkerset.sigs.k8s.io/exclusive-topology is a number, not a string"},
		{name: "size 0", spec: size(0), wantErr: "spec.leaderWorkerTemplate.size is 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := annotatedObject("LeaderWorkerSet", tt.annotations, tt.spec, nil)
			p := leaderWorkerSetPolicy(u)
			checkSlimRules(t, u, leaderWorkerSetFields, leaderWorkerSetPolicy)
			if tt.wantErr != "" {
				checkErr(t, p, lwsSrc, tt.wantErr)
				return
			}
			if p.Err != nil || p.MinMember != tt.wantMin || p.Topology != nil {
				t.Fatalf("policy %+v, want minMember %d and no topology of the whole", p, tt.wantMin)
			}
			checkRules(t, p.SubGroups, tt.want)
			checkSubGroupOf(t, p.SubGroups, podWithLabels(framework.LeaderWorkerSetNameLabel, "o", framework.LeaderWorkerSetGroupIndexLabel, "3"), 0, "3")
		})
	}
	bad := object("LeaderWorkerSet", map[string]any{}, nil)
	bad.Object["metadata"].(map[string]any)["annotations"] = "x"
	checkErr(t, leaderWorkerSetPolicy(bad), lwsSrc, "metadata.annotations is a string, not an object")
}

const jobSetSrc = "JobSet.jobset.x-k8s.io ns/o"

func TestJobSetSubGroups(t *testing.T) {
	rj := func(name string, replicas, parallelism, completions any, annotations map[string]any) map[string]any {
		spec := map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{}}}}
		if parallelism != nil {
			spec["parallelism"] = parallelism
		}
		if completions != nil {
			spec["completions"] = completions
		}
		template := map[string]any{"spec": spec}
		if annotations != nil {
			template["metadata"] = map[string]any{"annotations": annotations, "labels": map[string]any{"a": "b"}}
		}
		m := map[string]any{"name": name, "template": template}
		if replicas != nil {
			m["replicas"] = replicas
		}
		return m
	}
	jobs := func(name string, i int, min, minGroups int32, topology *framework.TopologyConstraint) rule {
		return rule{name: name, selector: JobSetReplicatedJobNameLabel + "=" + name, keys: []string{JobSetJobIndexLabel},
			min: min, minGroups: minGroups, topology: topology, source: fmt.Sprintf("%s spec.replicatedJobs[%d]", jobSetSrc, i)}
	}
	exclusive := func(v any) map[string]any { return map[string]any{JobSetExclusiveTopologyAnnotation: v} }
	onJobSet := func(key string) *framework.TopologyConstraint {
		return &framework.TopologyConstraint{Key: key, Required: true, Source: jobSetSrc + " annotation alpha.jobset.sigs.k8s.io/exclusive-topology"}
	}
	onTemplate := func(i int, key string) *framework.TopologyConstraint {
		return &framework.TopologyConstraint{Key: key, Required: true,
			Source: fmt.Sprintf("%s spec.replicatedJobs[%d].template annotation alpha.jobset.sigs.k8s.io/exclusive-topology", jobSetSrc, i)}
	}
	succeeded := func(kv ...any) map[string]any {
		var l []any
		for i := 0; i+1 < len(kv); i += 2 {
			l = append(l, map[string]any{"name": kv[i], "succeeded": kv[i+1]})
		}
		return map[string]any{"replicatedJobsStatus": l}
	}
	driverAndWorkers := []any{rj("driver", nil, nil, nil, nil), rj("workers", int64(3), int64(4), int64(4), nil)}
	for _, tt := range []struct {
		name        string
		annotations map[string]any
		spec        map[string]any
		status      map[string]any
		wantMin     int32
		want        []rule
		wantErr     string
	}{
		{name: "driver and workers", spec: map[string]any{"replicatedJobs": driverAndWorkers}, wantMin: 13,
			want: []rule{jobs("driver", 0, 1, 1, nil), jobs("workers", 1, 4, 3, nil)}},
		{name: "completions below parallelism", spec: map[string]any{"replicatedJobs": []any{rj("w", int64(2), int64(4), int64(3), nil)}},
			wantMin: 6, want: []rule{jobs("w", 0, 3, 2, nil)}},
		{name: "succeeded Jobs are not counted", spec: map[string]any{"replicatedJobs": driverAndWorkers},
			status: succeeded("driver", int64(1), "workers", int64(1)), wantMin: 8,
			want: []rule{jobs("driver", 0, 1, 0, nil), jobs("workers", 1, 4, 2, nil)}},
		{name: "more succeeded than replicas", spec: map[string]any{"replicatedJobs": driverAndWorkers},
			status: succeeded("workers", int64(5)), wantMin: 1,
			want: []rule{jobs("driver", 0, 1, 1, nil), jobs("workers", 1, 4, 0, nil)}},
		{name: "in order: the first replicated Job", spec: map[string]any{"replicatedJobs": driverAndWorkers,
			"startupPolicy": map[string]any{"startupPolicyOrder": "InOrder"}}, wantMin: 1,
			want: []rule{jobs("driver", 0, 1, 1, nil), jobs("workers", 1, 4, 0, nil)}},
		{name: "a replicated Job that runs no pods has no rule", spec: map[string]any{"replicatedJobs": []any{
			rj("idle", int64(2), int64(0), nil, nil), rj("w", nil, int64(2), nil, nil)}}, wantMin: 2,
			want: []rule{jobs("w", 1, 2, 1, nil)}},
		{name: "exclusive topology of the JobSet", annotations: exclusive("topology.kubernetes.io/rack"),
			spec: map[string]any{"replicatedJobs": driverAndWorkers}, wantMin: 13,
			want: []rule{jobs("driver", 0, 1, 1, onJobSet("topology.kubernetes.io/rack")), jobs("workers", 1, 4, 3, onJobSet("topology.kubernetes.io/rack"))}},
		{name: "exclusive topology of a replicated Job wins", annotations: exclusive("topology.kubernetes.io/block"),
			spec: map[string]any{"replicatedJobs": []any{rj("driver", nil, nil, nil, map[string]any{"other": "x"}),
				rj("workers", int64(3), int64(4), nil, exclusive("topology.kubernetes.io/rack"))}}, wantMin: 13,
			want: []rule{jobs("driver", 0, 1, 1, onJobSet("topology.kubernetes.io/block")), jobs("workers", 1, 4, 3, onTemplate(1, "topology.kubernetes.io/rack"))}},
		{name: "exclusive topology of one replicated Job only", spec: map[string]any{"replicatedJobs": []any{rj("driver", nil, nil, nil, nil),
			rj("workers", int64(3), int64(4), nil, exclusive("topology.kubernetes.io/rack"))}}, wantMin: 13,
			want: []rule{jobs("driver", 0, 1, 1, nil), jobs("workers", 1, 4, 3, onTemplate(1, "topology.kubernetes.io/rack"))}},
		{name: "JobSet exclusive topology not a label key", annotations: exclusive("a b"), spec: map[string]any{"replicatedJobs": driverAndWorkers},
			wantErr: `annotation alpha.jobset.sigs.k8s.io/exclusive-topology="a b" is not a node label key`},
		{name: "replicated Job exclusive topology not a string", spec: map[string]any{"replicatedJobs": []any{rj("driver", nil, nil, nil, nil),
			rj("w", nil, nil, nil, exclusive(false))}},
			wantErr: "spec.replicatedJobs[1].template annotation alpha.jobset.sigs.k8s.io/exclusive-topology is a boolean, not a string"},
		{name: "template metadata not an object", spec: map[string]any{"replicatedJobs": []any{
			map[string]any{"name": "w", "template": map[string]any{"metadata": "x", "spec": map[string]any{}}}}},
			wantErr: "spec.replicatedJobs[0].template.metadata is a string, not an object"},
		{name: "template annotations not an object", spec: map[string]any{"replicatedJobs": []any{
			map[string]any{"name": "w", "template": map[string]any{"metadata": map[string]any{"annotations": []any{}}}}}},
			wantErr: "spec.replicatedJobs[0].template.metadata.annotations is a list, not an object"},
		{name: "template not an object", spec: map[string]any{"replicatedJobs": []any{map[string]any{"name": "w", "template": "x"}}},
			wantErr: "spec.replicatedJobs[0].template is a string, not an object"},
		{name: "the same name twice", spec: map[string]any{"replicatedJobs": []any{rj("w", nil, nil, nil, nil), rj("w", nil, nil, nil, nil)}},
			wantErr: `spec.replicatedJobs[1].name "w" is also spec.replicatedJobs[0].name`},
		{name: "name not a label value", spec: map[string]any{"replicatedJobs": []any{rj("not a value", nil, nil, nil, nil)}},
			wantErr: `spec.replicatedJobs[0].name "not a value" is not a label value`},
		{name: "name not a string", spec: map[string]any{"replicatedJobs": []any{map[string]any{"name": int64(1)}}},
			wantErr: "spec.replicatedJobs[0].name is a number, not a string"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := annotatedObject("JobSet", tt.annotations, tt.spec, tt.status)
			p := jobSetPolicy(u)
			checkSlimRules(t, u, jobSetFields, jobSetPolicy)
			if tt.wantErr != "" {
				checkErr(t, p, jobSetSrc, tt.wantErr)
				return
			}
			if p.Err != nil || p.MinMember != tt.wantMin || p.Topology != nil {
				t.Fatalf("policy %+v, want minMember %d and no topology of the whole", p, tt.wantMin)
			}
			checkRules(t, p.SubGroups, tt.want)
		})
	}
	// A pod is in the sub-group of its Job, keyed by the replicated Job's
	// name and the Job's index.
	p := jobSetPolicy(object("JobSet", map[string]any{"replicatedJobs": driverAndWorkers}, nil))
	checkSubGroupOf(t, p.SubGroups, podWithLabels(framework.JobSetNameLabel, "o", JobSetReplicatedJobNameLabel, "workers", JobSetJobIndexLabel, "2"), 1, "workers/2")
	checkSubGroupOf(t, p.SubGroups, podWithLabels(framework.JobSetNameLabel, "o", JobSetReplicatedJobNameLabel, "driver", JobSetJobIndexLabel, "0"), 0, "driver/0")
	checkSubGroupOf(t, p.SubGroups, podWithLabels(framework.JobSetNameLabel, "o", JobSetReplicatedJobNameLabel, "other", JobSetJobIndexLabel, "0"), 0, "")
	checkSubGroupOf(t, p.SubGroups, podWithLabels(framework.JobSetNameLabel, "o", JobSetReplicatedJobNameLabel, "workers"), 0, "")
}

// The owner informers keep the fields of the sub-group rules, and only
// those of their annotations: the slim JobSet and LeaderWorkerSet have
// the same rules as the whole objects.
func TestOwnerWatchesKeepSubGroupFields(t *testing.T) {
	jobSet := annotatedObject("JobSet", map[string]any{JobSetExclusiveTopologyAnnotation: "topology.kubernetes.io/block", "big": "x"},
		map[string]any{"replicatedJobs": []any{
			map[string]any{"name": "driver", "template": map[string]any{"spec": map[string]any{"template": map[string]any{}}}},
			map[string]any{"name": "workers", "replicas": int64(2), "template": map[string]any{
				"metadata": map[string]any{"annotations": map[string]any{JobSetExclusiveTopologyAnnotation: "topology.kubernetes.io/rack", "big": "x"}},
				"spec":     map[string]any{"parallelism": int64(4), "template": map[string]any{"spec": map[string]any{"containers": []any{}}}}}},
		}}, nil)
	jobSet.SetAPIVersion("jobset.x-k8s.io/v1alpha2")
	lws := annotatedObject("LeaderWorkerSet", map[string]any{LeaderWorkerSetExclusiveTopologyAnnotation: "topology.kubernetes.io/rack", "big": "x"},
		map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(4), "workerTemplate": map[string]any{}}}, nil)
	lws.SetAPIVersion("leaderworkerset.x-k8s.io/v1")
	objects := map[framework.GroupKind]*unstructured.Unstructured{framework.GroupKindJobSet: jobSet, framework.GroupKindLeaderWorkerSet: lws}
	seen := 0
	for _, w := range Builtin().Watches(false, framework.AllOwnerKinds()) {
		u, ok := objects[w.Kind]
		if !ok {
			continue
		}
		seen++
		if w.Transform == nil {
			t.Fatalf("%s is not slimmed", w.Kind)
		}
		out, err := w.Transform(u.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		slim := out.(*unstructured.Unstructured)
		want, got := w.Policy(u), w.Policy(slim)
		if want.Err != nil || got.Err != nil || len(want.SubGroups) == 0 || want.SubGroups[len(want.SubGroups)-1].Topology == nil {
			t.Fatalf("%s: policies %+v and (slim) %+v, want rules with a topology and no error", w.Kind, want, got)
		}
		if !sameRules(want.SubGroups, got.SubGroups) || want.MinMember != got.MinMember {
			t.Errorf("%s: the slim object's rules %v differ from the object's %v", w.Kind, rulesOf(got.SubGroups), rulesOf(want.SubGroups))
		}
		if _, found := slim.GetAnnotations()["big"]; found {
			t.Errorf("%s: the slim object kept an annotation it does not read: %v", w.Kind, slim.GetAnnotations())
		}
		if w.Kind == framework.GroupKindJobSet {
			if _, found, _ := unstructured.NestedFieldNoCopy(slim.Object, "spec", "replicatedJobs"); !found {
				t.Errorf("slim JobSet lost its replicated Jobs: %v", slim.Object)
			}
			rjs := slim.Object["spec"].(map[string]any)["replicatedJobs"].([]any)
			if _, found, _ := unstructured.NestedFieldNoCopy(rjs[1].(map[string]any), "template", "spec", "template"); found {
				t.Errorf("slim JobSet kept a pod template: %v", rjs[1])
			}
		}
	}
	if seen != 2 {
		t.Fatalf("%d of the JobSet and LeaderWorkerSet watches found", seen)
	}
}
