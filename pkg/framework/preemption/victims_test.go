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

package preemption

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// t0 is the creation time of the oldest pods of the tests.
var t0 = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// running returns a pod bound to node with priority, requesting cpu,
// created minutes after t0.
func running(name, node string, priority int32, cpu string, minutes int) *st.PodWrapper {
	return st.MakePod().Name(name).Node(node).Phase(v1.PodRunning).Priority(priority).
		Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Created(metav1.NewTime(t0.Add(time.Duration(minutes) * time.Minute)))
}

func pdb(name string, allowed int32, matchLabels map[string]string) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: matchLabels}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

// tasks returns bound tasks of pods with the given priorities, created the
// given minutes after t0 (the same index).
func tasks(priorities []int32, minutes ...int) []*framework.TaskInfo {
	var out []*framework.TaskInfo
	for i, p := range priorities {
		m := 0
		if i < len(minutes) {
			m = minutes[i]
		}
		out = append(out, framework.NewTaskInfo(running("p", "n", p, "1", m).Obj(), dialects.Resolver()))
	}
	return out
}

// better follows kube-scheduler's order of criteria.
func TestBetter(t *testing.T) {
	cand := func(violations int, ts []*framework.TaskInfo) *candidate {
		return &candidate{violations: violations, victims: ts}
	}
	tests := []struct {
		name string
		a, b *candidate
		want bool
	}{
		{"anything beats nothing", cand(3, tasks([]int32{100, 100})), nil, true},
		{"fewer PDB violations first", cand(0, tasks([]int32{100, 100, 100})), cand(1, tasks([]int32{1})), true},
		{"more PDB violations lose", cand(1, tasks([]int32{1})), cand(0, tasks([]int32{100})), false},
		{"then the lower highest priority", cand(0, tasks([]int32{10, 10, 10})), cand(0, tasks([]int32{50})), true},
		{"then the lower sum of priorities", cand(0, tasks([]int32{10, 1})), cand(0, tasks([]int32{10, 5})), true},
		{"negative priorities do not reward more victims", cand(0, tasks([]int32{-10})), cand(0, tasks([]int32{-10, -10})), true},
		{"then fewer victims (the lowest priority adds nothing to the sum)", cand(0, tasks([]int32{10})), cand(0, tasks([]int32{10, -2147483648})), true},
		{"more victims lose", cand(0, tasks([]int32{10, -2147483648})), cand(0, tasks([]int32{10})), false},
		{"then the latest start of the highest-priority victims", cand(0, tasks([]int32{10}, 30)), cand(0, tasks([]int32{10}, 20)), true},
		{"an earlier start loses", cand(0, tasks([]int32{10}, 10)), cand(0, tasks([]int32{10}, 20)), false},
		{"a full tie keeps the first", cand(0, tasks([]int32{10}, 5)), cand(0, tasks([]int32{10}, 5)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := better(tt.a, tt.b); got != tt.want {
				t.Errorf("better = %v, want %v", got, tt.want)
			}
		})
	}
}

// A start time, when a kubelet reported one, comes before the creation
// time.
func TestStartTime(t *testing.T) {
	p := running("p", "n", 0, "1", 10).Obj()
	if got := startTime(&framework.TaskInfo{Pod: p}); !got.Equal(t0.Add(10 * time.Minute)) {
		t.Errorf("startTime without status.startTime = %v, want the creation time", got)
	}
	started := metav1.NewTime(t0.Add(time.Hour))
	p.Status.StartTime = &started
	if got := startTime(&framework.TaskInfo{Pod: p}); !got.Equal(started.Time) {
		t.Errorf("startTime = %v, want status.startTime %v", got, started)
	}
}

func TestBudgetMatches(t *testing.T) {
	withStatus := func(b *policyv1.PodDisruptionBudget, disrupted ...string) *policyv1.PodDisruptionBudget {
		b.Status.DisruptedPods = map[string]metav1.Time{}
		for _, n := range disrupted {
			b.Status.DisruptedPods[n] = t0
		}
		return b
	}
	emptySelector := pdb("empty", 0, nil)
	emptySelector.Spec.Selector = &metav1.LabelSelector{}
	noSelector := pdb("none", 0, nil)
	noSelector.Spec.Selector = nil
	invalid := pdb("invalid", 0, nil)
	invalid.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	db := st.MakePod().Name("db").Label("app", "db").Obj()
	tests := []struct {
		name string
		pdb  *policyv1.PodDisruptionBudget
		want bool
	}{
		{"matching labels", pdb("m", 0, map[string]string{"app": "db"}), true},
		{"other labels", pdb("o", 0, map[string]string{"app": "web"}), false},
		{"other namespace", func() *policyv1.PodDisruptionBudget {
			b := pdb("ns", 0, map[string]string{"app": "db"})
			b.Namespace = "other"
			return b
		}(), false},
		{"already disrupted", withStatus(pdb("d", 0, map[string]string{"app": "db"}), "db"), false},
		{"an empty selector matches nothing", emptySelector, false},
		{"no selector matches nothing", noSelector, false},
		{"an invalid selector matches nothing", invalid, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBudgets([]*policyv1.PodDisruptionBudget{tt.pdb})[0]
			if got := b.matches(db); got != tt.want {
				t.Errorf("matches = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSortedVictimsGangByGang: a plan lists victims node by node; they
// are evicted with a PDB's protected ones first, then one job's pods
// together, so that a gang spread over many nodes does not lose its pods
// over the whole preemption.
func TestSortedVictimsGangByGang(t *testing.T) {
	victim := func(name, gang, node string, pdb bool) *Victim {
		pod := running(name, node, 1, "1", 0).Group(gang).Obj()
		return &Victim{Task: framework.NewTaskInfo(pod, dialects.Resolver()), ViolatesPDB: pdb}
	}
	var plan []*Victim
	for _, node := range []string{"n1", "n2", "n3"} {
		plan = append(plan,
			victim("b-"+node, "b", node, false),
			victim("a-"+node, "a", node, false),
		)
	}
	plan = append(plan, victim("guarded", "c", "n2", true))
	var got []string
	for _, v := range sortedVictims(plan) {
		got = append(got, v.Task.GetName())
	}
	want := []string{"guarded", "a-n1", "a-n2", "a-n3", "b-n1", "b-n2", "b-n3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("eviction order %v, want %v", got, want)
	}
	if plan[0].Task.GetName() != "b-n1" {
		t.Errorf("sortedVictims reordered the plan itself: it starts with %s", plan[0].Task.GetName())
	}
}
