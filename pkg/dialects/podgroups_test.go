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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func obj(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "g", "namespace": "ns"},
		"spec":     spec,
	}}
}

func TestDialectPolicies(t *testing.T) {
	optIn := map[string]any{"metadata": map[string]any{"annotations": map[string]any{framework.JobGangAnnotation: "true"}}}
	tests := []struct {
		name    string
		policy  func(*unstructured.Unstructured) *framework.GroupPolicy
		spec    map[string]any
		wantMin int32
		wantErr string // substring; "" none
		wantNil bool
		timeout int32
		// disruption is what the policy says of preemption.
		disruption framework.Disruption
	}{
		{name: "native gang", policy: nativePolicy, spec: map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(4)}}}, wantMin: 4},
		{name: "native basic", policy: nativePolicy, spec: map[string]any{"schedulingPolicy": map[string]any{"basic": map[string]any{}}}, wantMin: 1},
		{name: "native without policy", policy: nativePolicy, spec: map[string]any{}, wantErr: "neither spec.schedulingPolicy.gang.minCount"},
		{name: "native single disruption", policy: nativePolicy, spec: map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(4)}},
			"disruptionMode": map[string]any{"single": map[string]any{}}}, wantMin: 4, disruption: framework.DisruptSingly},
		{name: "native all disruption", policy: nativePolicy, spec: map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(4)}},
			"disruptionMode": map[string]any{"all": map[string]any{}}}, wantMin: 4},
		{name: "native both disruptions", policy: nativePolicy, spec: map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(4)}},
			"disruptionMode": map[string]any{"all": map[string]any{}, "single": map[string]any{}}}, wantErr: "PodGroup.scheduling.k8s.io ns/g sets both spec.disruptionMode.single and spec.disruptionMode.all"},
		{name: "native disruption not an object", policy: nativePolicy, spec: map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(4)}},
			"disruptionMode": "single"}, wantErr: "PodGroup.scheduling.k8s.io ns/g: spec.disruptionMode is a string, not an object"},
		{name: "native single not an object", policy: nativePolicy, spec: map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(4)}},
			"disruptionMode": map[string]any{"single": true}}, wantErr: "spec.disruptionMode.single is a boolean, not an object"},
		{name: "scheduler-plugins", policy: minMemberPolicy(framework.GroupKindCoscheduling), spec: map[string]any{"minMember": int64(3), "scheduleTimeoutSeconds": int64(30)}, wantMin: 3, timeout: 30},
		{name: "volcano", policy: minMemberPolicy(framework.GroupKindVolcano), spec: map[string]any{"minMember": int64(2)}, wantMin: 2},
		{name: "volcano minMember 0", policy: minMemberPolicy(framework.GroupKindVolcano), spec: map[string]any{"minMember": int64(0)}, wantErr: "PodGroup.scheduling.volcano.sh ns/g has no usable spec.minMember"},
		{name: "volcano minMember as string", policy: minMemberPolicy(framework.GroupKindVolcano), spec: map[string]any{"minMember": "2"}, wantErr: "no usable spec.minMember"},
		{name: "job parallelism", policy: jobPolicy(false), spec: map[string]any{"parallelism": int64(4), "completions": int64(10), "template": optIn}, wantMin: 4},
		{name: "job fewer completions", policy: jobPolicy(false), spec: map[string]any{"parallelism": int64(4), "completions": int64(2), "template": optIn}, wantMin: 2},
		{name: "job default parallelism", policy: jobPolicy(false), spec: map[string]any{"template": optIn}, wantMin: 1},
		{name: "job parallelism 0", policy: jobPolicy(false), spec: map[string]any{"parallelism": int64(0), "template": optIn}, wantErr: "runs no pods at once"},
		{name: "job not opted in", policy: jobPolicy(false), spec: map[string]any{"parallelism": int64(4)}, wantNil: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy(obj(tt.spec))
			if tt.wantNil {
				if p != nil {
					t.Fatalf("policy %+v, want none", p)
				}
				return
			}
			if p == nil {
				t.Fatal("no policy")
			}
			if tt.wantErr != "" {
				if p.Err == nil || !strings.Contains(p.Err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", p.Err, tt.wantErr)
				}
				return
			}
			if p.Err != nil || p.MinMember != tt.wantMin || p.ScheduleTimeoutSeconds != tt.timeout || p.Disruption != tt.disruption {
				t.Fatalf("policy %+v, want minMember %d timeout %d disruption %s", p, tt.wantMin, tt.timeout, tt.disruption)
			}
		})
	}
}

func TestSlimGroupObject(t *testing.T) {
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "train", "namespace": "ns", "labels": map[string]any{"a": "b"}},
		"spec": map[string]any{"parallelism": int64(3), "completions": int64(6), "template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{framework.JobGangAnnotation: "true", "other": "x"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "main"}}},
		}},
	}}
	slimmed, err := Slimmer(jobFields...)(job)
	if err != nil {
		t.Fatal(err)
	}
	u := slimmed.(*unstructured.Unstructured)
	if p := jobPolicy(false)(u); p == nil || p.MinMember != 3 {
		t.Fatalf("policy of the slimmed Job %+v, want minMember 3", p)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "template", "spec"); found || u.GetLabels() != nil {
		t.Errorf("slimmed Job kept more than it needs: %v", u.Object)
	}
	if u.GetName() != "train" || u.GetNamespace() != "ns" {
		t.Errorf("slimmed Job lost its name: %v", u.Object)
	}
}

func TestDialectTopology(t *testing.T) {
	gang := map[string]any{"gang": map[string]any{"minCount": int64(4)}}
	native := func(topology any) map[string]any {
		return map[string]any{"schedulingPolicy": gang, "schedulingConstraints": map[string]any{"topology": topology}}
	}
	volcano := func(nt any) map[string]any { return map[string]any{"minMember": int64(4), "networkTopology": nt} }
	volcanoPolicy := minMemberPolicy(framework.GroupKindVolcano)
	tests := []struct {
		name    string
		policy  func(*unstructured.Unstructured) *framework.GroupPolicy
		spec    map[string]any
		want    *framework.TopologyConstraint
		wantErr string
	}{
		{name: "native rack", policy: nativePolicy, spec: native([]any{map[string]any{"key": "topology.kubernetes.io/rack"}}),
			want: &framework.TopologyConstraint{Key: "topology.kubernetes.io/rack", Required: true, Source: "PodGroup.scheduling.k8s.io ns/g spec.schedulingConstraints.topology"}},
		{name: "native none", policy: nativePolicy, spec: map[string]any{"schedulingPolicy": gang}},
		{name: "native two keys", policy: nativePolicy, spec: native([]any{map[string]any{"key": "a"}, map[string]any{"key": "b"}}), wantErr: "has 2 entries; one is supported"},
		{name: "native no key", policy: nativePolicy, spec: native([]any{map[string]any{}}), wantErr: "topology[0].key is missing"},
		{name: "native bad key", policy: nativePolicy, spec: native([]any{map[string]any{"key": "no spaces please"}}), wantErr: `key "no spaces please" is not a label key`},
		{name: "native not a list", policy: nativePolicy, spec: native("rack"), wantErr: "spec.schedulingConstraints.topology is not a list"},
		{name: "volcano hard default tier", policy: volcanoPolicy, spec: volcano(map[string]any{"mode": "hard"}),
			want: &framework.TopologyConstraint{Tier: 1, Required: true, Source: "PodGroup.scheduling.volcano.sh ns/g spec.networkTopology"}},
		{name: "volcano soft tier 2", policy: volcanoPolicy, spec: volcano(map[string]any{"mode": "soft", "highestTierAllowed": int64(2)}),
			want: &framework.TopologyConstraint{Tier: 2, Source: "PodGroup.scheduling.volcano.sh ns/g spec.networkTopology"}},
		{name: "volcano bad mode", policy: volcanoPolicy, spec: volcano(map[string]any{"mode": "strict"}), wantErr: "spec.networkTopology.mode strict is neither hard nor soft"},
		{name: "volcano bad tier", policy: volcanoPolicy, spec: volcano(map[string]any{"highestTierAllowed": int64(0)}), wantErr: "highestTierAllowed 0 is not an integer >= 1"},
		{name: "volcano tier as string", policy: volcanoPolicy, spec: volcano(map[string]any{"highestTierAllowed": "2"}), wantErr: "highestTierAllowed 2 is not an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy(obj(tt.spec))
			if tt.wantErr != "" {
				if p.Err == nil || !strings.Contains(p.Err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", p.Err, tt.wantErr)
				}
				return
			}
			if p.Err != nil {
				t.Fatalf("err %v", p.Err)
			}
			if (p.Topology == nil) != (tt.want == nil) || (p.Topology != nil && *p.Topology != *tt.want) {
				t.Fatalf("topology %+v, want %+v", p.Topology, tt.want)
			}
			if p.MinMember != 4 {
				t.Errorf("minMember %d, want 4 beside the topology", p.MinMember)
			}
		})
	}
}

// A Volcano PodGroup names its job's queue in spec.queue; no other
// dialect's group object names one.
func TestPodGroupQueue(t *testing.T) {
	tests := []struct {
		name   string
		policy func(*unstructured.Unstructured) *framework.GroupPolicy
		spec   map[string]any
		want   string
	}{
		{name: "volcano", policy: minMemberPolicy(framework.GroupKindVolcano),
			spec: map[string]any{"minMember": int64(2), "queue": "team-a"}, want: "team-a"},
		{name: "volcano without a queue", policy: minMemberPolicy(framework.GroupKindVolcano),
			spec: map[string]any{"minMember": int64(2)}},
		{name: "volcano with a queue that is not a string", policy: minMemberPolicy(framework.GroupKindVolcano),
			spec: map[string]any{"minMember": int64(2), "queue": int64(7)}},
		{name: "scheduler-plugins", policy: minMemberPolicy(framework.GroupKindCoscheduling),
			spec: map[string]any{"minMember": int64(2), "queue": "team-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy(obj(tt.spec))
			if p == nil || p.Err != nil || p.MinMember != 2 {
				t.Fatalf("policy %+v, want minMember 2", p)
			}
			if p.Queue != tt.want {
				t.Errorf("queue %q, want %q", p.Queue, tt.want)
			}
		})
	}
}

// A CompositePodGroup's policy: a gang is one rule keying the pods by
// their PodGroup, with minGroupCount; basic leaves the children
// independent; bad fields name the object and the field. A native
// PodGroup names its parent.
func TestCompositePolicy(t *testing.T) {
	gang := func(n any) map[string]any {
		return map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minGroupCount": n}}}
	}
	p := compositePolicy(obj(gang(int64(2))))
	if p.Err != nil || p.Independent || len(p.SubGroups) != 1 || !p.SubGroups[0].KeyPodGroup || p.SubGroups[0].MinSubGroups != 2 {
		t.Fatalf("gang: %+v", p)
	}
	spec := gang(int64(1))
	spec["schedulingConstraints"] = map[string]any{"topology": []any{map[string]any{"key": "rack"}}}
	spec["parentCompositePodGroupName"] = "top"
	if p := compositePolicy(obj(spec)); p.Err != nil || p.Topology == nil || p.Topology.Key != "rack" || p.Parent != "top" {
		t.Fatalf("topology and parent: %+v", p)
	}
	if p := compositePolicy(obj(map[string]any{"schedulingPolicy": map[string]any{"basic": map[string]any{}}})); p.Err != nil || !p.Independent || len(p.SubGroups) != 0 {
		t.Fatalf("basic: %+v", p)
	}
	bad := []struct {
		name, want string
		spec       map[string]any
	}{
		{"no policy", "CompositePodGroup.scheduling.k8s.io ns/g has neither spec.schedulingPolicy.gang nor a basic policy", map[string]any{}},
		{"minGroupCount 0", "ns/g has no usable spec.schedulingPolicy.gang.minGroupCount", gang(int64(0))},
		{"minGroupCount a string", "spec.schedulingPolicy.gang.minGroupCount", gang("2")},
		{"both", "sets both spec.schedulingPolicy.basic and spec.schedulingPolicy.gang",
			map[string]any{"schedulingPolicy": map[string]any{"basic": map[string]any{}, "gang": map[string]any{"minGroupCount": int64(1)}}}},
		{"gang not an object", "spec.schedulingPolicy.gang is a string, not an object", map[string]any{"schedulingPolicy": map[string]any{"gang": "x"}}},
		{"parent not a name", "spec.parentCompositePodGroupName \"A_B\" is not a valid name", map[string]any{"parentCompositePodGroupName": "A_B"}},
		{"two topologies", "spec.schedulingConstraints.topology has 2 entries",
			map[string]any{"schedulingConstraints": map[string]any{"topology": []any{map[string]any{"key": "a"}, map[string]any{"key": "b"}}}}},
	}
	for _, tt := range bad {
		if p := compositePolicy(obj(tt.spec)); p.Err == nil || !strings.Contains(p.Err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.name, p.Err, tt.want)
		}
	}
	child := nativePolicy(obj(map[string]any{"parentCompositePodGroupName": "c",
		"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(2)}}}))
	if child.Err != nil || child.Parent != "c" || child.MinMember != 2 {
		t.Fatalf("child: %+v", child)
	}
	// A child without a usable policy still names its parent.
	if child := nativePolicy(obj(map[string]any{"parentCompositePodGroupName": "c"})); child.Err == nil || child.Parent != "c" {
		t.Fatalf("child without a policy: %+v", child)
	}
	if child := nativePolicy(obj(map[string]any{"parentCompositePodGroupName": int64(1)})); child.Err == nil ||
		!strings.Contains(child.Err.Error(), "spec.parentCompositePodGroupName is") {
		t.Fatalf("parent not a string: %+v", child)
	}
}
