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
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const (
	zoneKey = v1.LabelTopologyZone
	hostKey = v1.LabelHostname
)

// Verdicts, short.
const (
	ok    = ""
	skew  = "skew"
	label = "label"
)

func verdict(s *framework.Status) string {
	switch {
	case s.IsSuccess():
		return ok
	case s.Code() == framework.Unschedulable && s.Message() == ErrReasonConstraintsNotMatch:
		return skew
	case s.Code() == framework.UnschedulableAndUnresolvable && s.Message() == ErrReasonNodeLabelNotMatch:
		return label
	}
	return s.String()
}

// spread returns a DoNotSchedule constraint over key selecting app=app.
func spread(key string, maxSkew int32, app string) v1.TopologySpreadConstraint {
	return v1.TopologySpreadConstraint{
		MaxSkew:           maxSkew,
		TopologyKey:       key,
		WhenUnsatisfiable: v1.DoNotSchedule,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
	}
}

// podWith returns pod name labelled app=app (unless empty) with cs.
func podWith(name, app string, cs ...v1.TopologySpreadConstraint) *v1.Pod {
	w := st.MakePod().Name(name)
	if app != "" {
		w = w.Label("app", app)
	}
	p := w.Obj()
	p.Spec.TopologySpreadConstraints = cs
	return p
}

// many returns n pods labelled app=app named prefix-i.
func many(prefix, app string, n int) []*v1.Pod {
	var out []*v1.Pod
	for i := range n {
		out = append(out, podWith(prefix+string(rune('a'+i)), app))
	}
	return out
}

// n1 and n2 in zone a, n3 in zone b, n4 without a zone.
var nodeNames = []string{"n1", "n2", "n3", "n4"}

func testNodes(taintN3 bool) []*v1.Node {
	n3 := st.MakeNode().Name("n3").Label(hostKey, "n3").Label(zoneKey, "b")
	if taintN3 {
		n3 = n3.Taint("dedicated", "infra", v1.TaintEffectNoSchedule)
	}
	return []*v1.Node{
		st.MakeNode().Name("n1").Label(hostKey, "n1").Label(zoneKey, "a").Obj(),
		st.MakeNode().Name("n2").Label(hostKey, "n2").Label(zoneKey, "a").Obj(),
		n3.Obj(),
		st.MakeNode().Name("n4").Label(hostKey, "n4").Obj(),
	}
}

// run runs PreFilterPod and then Filter on every node, as the framework
// does.
func run(t *testing.T, pod *v1.Pod, nodes []*framework.NodeInfo) (verdicts []string, skipped bool) {
	t.Helper()
	pl := &PodTopologySpread{}
	state := framework.NewCycleState()
	s := pl.PreFilterPod(t.Context(), state, pod, nodes)
	if s.IsSkip() {
		return nil, true
	}
	if !s.IsSuccess() {
		t.Fatalf("PreFilterPod = %v", s)
	}
	for _, n := range nodes {
		verdicts = append(verdicts, verdict(pl.Filter(t.Context(), state, pod, n)))
	}
	return verdicts, false
}

func TestFilter(t *testing.T) {
	anyway := spread(zoneKey, 1, "x")
	anyway.WhenUnsatisfiable = v1.ScheduleAnyway
	withMinDomains := spread(zoneKey, 1, "x")
	withMinDomains.MinDomains = ptr.To[int32](3)
	ignoreAffinity := spread(zoneKey, 1, "x")
	ignoreAffinity.NodeAffinityPolicy = ptr.To(v1.NodeInclusionPolicyIgnore)
	honorTaints := spread(zoneKey, 1, "x")
	honorTaints.NodeTaintsPolicy = ptr.To(v1.NodeInclusionPolicyHonor)
	byRevision := spread(zoneKey, 1, "x")
	byRevision.MatchLabelKeys = []string{"rev"}
	everything := spread(zoneKey, 1, "x")
	everything.LabelSelector = &metav1.LabelSelector{}
	inZoneA := func(p *v1.Pod) *v1.Pod { p.Spec.NodeSelector = map[string]string{zoneKey: "a"}; return p }
	withRev := func(p *v1.Pod, rev string) *v1.Pod { p.Labels["rev"] = rev; return p }

	tests := []struct {
		name     string
		pod      *v1.Pod
		existing map[string][]*v1.Pod
		taintN3  bool
		want     []string // n1..n4
		wantSkip bool
	}{
		{name: "no constraints: system defaults are ScheduleAnyway", pod: podWith("p", "x"), wantSkip: true},
		{name: "ScheduleAnyway only", pod: podWith("p", "x", anyway), wantSkip: true},
		{
			// a=1, b=0, min 0: zone a would reach skew 2.
			name:     "zone maxSkew 1",
			pod:      podWith("p", "x", spread(zoneKey, 1, "x")),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 1)},
			want:     []string{skew, skew, ok, label},
		},
		{
			name:     "the pod does not match its own selector",
			pod:      podWith("p", "y", spread(zoneKey, 1, "x")),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 1)},
			want:     []string{ok, ok, ok, label},
		},
		{
			// a=1, b=1, min 1: 1+1-1 = 1 everywhere.
			name:     "balanced zones",
			pod:      podWith("p", "x", spread(zoneKey, 1, "x")),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 1), "n3": many("f", "x", 1)},
			want:     []string{ok, ok, ok, label},
		},
		{
			// Two domains, fewer than minDomains 3: the minimum is 0.
			name:     "minDomains above the domain count",
			pod:      podWith("p", "x", withMinDomains),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 1), "n3": many("f", "x", 1)},
			want:     []string{skew, skew, skew, label},
		},
		{
			// n1: 1, others 0: only n1 is too full.
			name:     "hostname maxSkew 1",
			pod:      podWith("p", "x", spread(hostKey, 1, "x")),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 1)},
			want:     []string{skew, ok, ok, ok},
		},
		{
			// Honor: only zone a counts, a=2, min 2.
			name:     "nodeAffinityPolicy Honor (default) leaves other zones out",
			pod:      inZoneA(podWith("p", "x", spread(zoneKey, 1, "x"))),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 2)},
			want:     []string{ok, ok, ok, label},
		},
		{
			// Ignore: a=2, b=0, min 0.
			name:     "nodeAffinityPolicy Ignore counts them",
			pod:      inZoneA(podWith("p", "x", ignoreAffinity)),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 2)},
			want:     []string{skew, skew, ok, label},
		},
		{
			name:     "nodeTaintsPolicy Ignore (default) counts a tainted zone",
			pod:      podWith("p", "x", spread(zoneKey, 1, "x")),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 2)},
			taintN3:  true,
			want:     []string{skew, skew, ok, label},
		},
		{
			// Honor: n3 is untolerated, zone b is not a domain; a=2, min 2.
			name:     "nodeTaintsPolicy Honor leaves it out",
			pod:      podWith("p", "x", honorTaints),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 2)},
			taintN3:  true,
			want:     []string{ok, ok, ok, label},
		},
		{
			// Only rev=2 pods count: a=0, b=1.
			name: "matchLabelKeys narrows the selector to the pod's revision",
			pod:  withRev(podWith("p", "x", byRevision), "2"),
			existing: map[string][]*v1.Pod{
				"n1": {withRev(podWith("e1", "x"), "1"), withRev(podWith("e2", "x"), "1")},
				"n3": {withRev(podWith("f1", "x"), "2")},
			},
			want: []string{ok, ok, skew, label},
		},
		{
			name: "terminating, finished and other-namespace pods do not count",
			pod:  podWith("p", "x", spread(zoneKey, 1, "x")),
			existing: map[string][]*v1.Pod{"n1": {
				func() *v1.Pod { p := podWith("t", "x"); p.DeletionTimestamp = &metav1.Time{}; return p }(),
				func() *v1.Pod { p := podWith("d", "x"); p.Status.Phase = v1.PodSucceeded; return p }(),
				func() *v1.Pod { p := podWith("o", "x"); p.Namespace = "other"; return p }(),
			}},
			want: []string{ok, ok, ok, label},
		},
		{
			name:     "an empty selector counts no pod but matches the pod itself",
			pod:      podWith("p", "x", everything),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 3)},
			want:     []string{ok, ok, ok, label},
		},
		{
			// n4 lacks the zone and is not a hostname domain either:
			// hostnames n1 (1), n2, n3 (0), min 0.
			name:     "two constraints",
			pod:      podWith("p", "x", spread(zoneKey, 2, "x"), spread(hostKey, 1, "x")),
			existing: map[string][]*v1.Pod{"n1": many("e", "x", 1), "n4": many("f", "x", 5)},
			want:     []string{skew, ok, ok, label},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []*framework.NodeInfo
			for _, n := range testNodes(tt.taintN3) {
				nodes = append(nodes, testutil.NodeInfo(t, n, tt.existing[n.Name]...))
			}
			got, skipped := run(t, tt.pod, nodes)
			if skipped != tt.wantSkip {
				t.Fatalf("skipped = %v, want %v (verdicts %q)", skipped, tt.wantSkip, got)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("node %s: got %q, want %q (all: %q)", nodeNames[i], got[i], tt.want[i], got)
				}
			}
		})
	}
}

// TestGang places a gang of 4 with maxSkew 1 over two zones of two nodes
// each, one pod after the other on the first feasible node, as the
// scheduler does within one cycle: it lands 2+2.
func TestGang(t *testing.T) {
	var nodes []*framework.NodeInfo
	for _, n := range []*v1.Node{
		st.MakeNode().Name("a1").Label(zoneKey, "a").Obj(),
		st.MakeNode().Name("a2").Label(zoneKey, "a").Obj(),
		st.MakeNode().Name("b1").Label(zoneKey, "b").Obj(),
		st.MakeNode().Name("b2").Label(zoneKey, "b").Obj(),
	} {
		nodes = append(nodes, framework.NewNodeInfo(n))
	}
	zones := map[string]int{}
	for i := range 4 {
		pod := podWith("m"+string(rune('0'+i)), "g", spread(zoneKey, 1, "g"))
		got, _ := run(t, pod, nodes)
		placed := false
		for j, v := range got {
			if v == ok {
				nodes[j].AddPod(pod)
				zones[nodes[j].Node.Labels[zoneKey]]++
				placed = true
				break
			}
		}
		if !placed {
			t.Fatalf("member %d fits nowhere: %q", i, got)
		}
	}
	if zones["a"] != 2 || zones["b"] != 2 {
		t.Errorf("zones = %v, want 2+2", zones)
	}
}

func TestErrors(t *testing.T) {
	bad := spread(zoneKey, 1, "x")
	bad.LabelSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	nodes := []*framework.NodeInfo{framework.NewNodeInfo(testNodes(false)[0])}
	s := (&PodTopologySpread{}).PreFilterPod(t.Context(), framework.NewCycleState(), podWith("p", "x", bad), nodes)
	if s.Code() != framework.Error || !strings.Contains(s.Message(), "labelSelector") {
		t.Errorf("bad selector: PreFilterPod = %v, want an error naming the selector", s)
	}
	// Filter without PreFilterPod: fine for a pod without hard
	// constraints, an error otherwise.
	pl := &PodTopologySpread{}
	if s := pl.Filter(t.Context(), framework.NewCycleState(), podWith("p", "x", spread(zoneKey, 1, "x")), nodes[0]); s.Code() != framework.Error {
		t.Errorf("Filter without state = %v, want an error", s)
	}
	if s := pl.Filter(t.Context(), framework.NewCycleState(), podWith("p", "x"), nodes[0]); !s.IsSuccess() {
		t.Errorf("Filter without state of a plain pod = %v, want success", s)
	}
	if _, err := New(t.Context(), configapi.NewRawArgs("", []byte("defaultingType: System\ndefaultConstraints: []")), nil); err != nil {
		t.Errorf("kube-scheduler's default args refused: %v", err)
	}
	// List with no default constraints is what this plugin does with
	// either: the system defaults are never scored here.
	if _, err := New(t.Context(), configapi.NewRawArgs("", []byte("defaultingType: List\ndefaultConstraints: []")), nil); err != nil {
		t.Errorf("defaultingType List without constraints refused: %v", err)
	}
	if _, err := New(t.Context(), configapi.NewRawArgs("", []byte("defaultingType: Custom")), nil); err == nil || !strings.Contains(err.Error(), `defaultingType "Custom" is not supported`) {
		t.Errorf("New accepted an unknown defaultingType: %v", err)
	}
	list := "defaultingType: List\ndefaultConstraints:\n- maxSkew: 1\n  topologyKey: zone\n  whenUnsatisfiable: ScheduleAnyway\n"
	if _, err := New(t.Context(), configapi.NewRawArgs("", []byte(list)), nil); err == nil || !strings.Contains(err.Error(), "defaultConstraints") {
		t.Errorf("New accepted default constraints it would not apply: %v", err)
	}
}

// inNode binds pod to node n1.
func inNode(pod *v1.Pod) *v1.Pod {
	pod.Spec.NodeName = "n1"
	return pod
}

// inNamespace moves pod to namespace ns.
func inNamespace(ns string, pod *v1.Pod) *v1.Pod {
	pod.Namespace = ns
	return pod
}

func TestHints(t *testing.T) {
	logger := klog.Background()
	pending := podWith("p", "x", spread(zoneKey, 1, "x"))
	zoned := st.MakeNode().Name("n").Label(zoneKey, "a").Obj()
	tests := []struct {
		name     string
		fn       framework.QueueingHintFn
		old, new any
		want     framework.QueueingHint
	}{
		{"matching pod deleted", podDeletedHint, podWith("e", "x"), nil, framework.Queue},
		{"other pod deleted", podDeletedHint, podWith("e", "y"), nil, framework.QueueSkip},
		{"matching pod in another namespace deleted", podDeletedHint, func() *v1.Pod { p := podWith("e", "x"); p.Namespace = "o"; return p }(), nil, framework.QueueSkip},
		{"matching pod added", podAddedHint, nil, inNode(podWith("e", "x")), framework.Queue},
		{"other pod added", podAddedHint, nil, inNode(podWith("e", "y")), framework.QueueSkip},
		{"matching pod added in another namespace", podAddedHint, nil, inNamespace("o", inNode(podWith("e", "x"))), framework.QueueSkip},
		{"pod added without a pod", podAddedHint, nil, nil, framework.Queue},
		{"pod relabelled to match", podLabelsChangedHint, inNode(podWith("e", "y")), inNode(podWith("e", "x")), framework.Queue},
		{"pod relabelled to no longer match", podLabelsChangedHint, inNode(podWith("e", "x")), inNode(podWith("e", "y")), framework.Queue},
		{"matching pod relabelled, still matching", podLabelsChangedHint, inNode(podWith("e", "x")), func() *v1.Pod { p := inNode(podWith("e", "x")); p.Labels["extra"] = "1"; return p }(), framework.QueueSkip},
		{"other pod relabelled, still not matching", podLabelsChangedHint, inNode(podWith("e", "y")), inNode(podWith("e", "z")), framework.QueueSkip},
		{"pod in another namespace relabelled to match", podLabelsChangedHint, inNamespace("o", inNode(podWith("e", "y"))), inNamespace("o", inNode(podWith("e", "x"))), framework.QueueSkip},
		{"pod relabelled without the old pod", podLabelsChangedHint, "pod", inNode(podWith("e", "x")), framework.Queue},
		{"pod relabelled without the new pod", podLabelsChangedHint, inNode(podWith("e", "y")), nil, framework.Queue},
		{"node with the key added", nodeHint, nil, zoned, framework.Queue},
		{"node without the key added", nodeHint, nil, st.MakeNode().Name("n").Obj(), framework.QueueSkip},
		{"node changed zone", nodeHint, zoned, st.MakeNode().Name("n").Label(zoneKey, "b").Obj(), framework.Queue},
		{"node got a taint", nodeHint, zoned, st.MakeNode().Name("n").Label(zoneKey, "a").Taint("k", "v", v1.TaintEffectNoSchedule).Obj(), framework.Queue},
		{"keyless node changed", nodeHint, st.MakeNode().Name("n").Obj(), st.MakeNode().Name("n").Label("x", "y").Obj(), framework.QueueSkip},
		{"wrong object", nodeHint, nil, "node", framework.Queue},
		// A deleted node may take the domain holding the global minimum
		// with it; one without the key was in no domain.
		{"node with the key deleted", nodeDeletedHint, zoned, nil, framework.Queue},
		{"node without the key deleted", nodeDeletedHint, st.MakeNode().Name("n").Label("x", "y").Obj(), nil, framework.QueueSkip},
		{"node deleted without the node", nodeDeletedHint, "node", nil, framework.Queue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := tt.fn(logger, &framework.QueuedJob{Pods: []*v1.Pod{pending}}, tt.old, tt.new)
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNodeDeleteHints: the plugin registers the node deletions the event
// handler raises, and retries a job when the deleted node had every
// topology key of one of its pods' constraints (it was in their domains).
func TestNodeDeleteHints(t *testing.T) {
	twoKeys := podWith("p2", "x", spread(zoneKey, 1, "x"), spread(hostKey, 1, "x"))
	for _, tt := range []struct {
		name string
		pods []*v1.Pod
		gone *v1.Node
		want framework.QueueingHint
	}{
		{"node in the pod's zone domain", []*v1.Pod{podWith("p", "x", spread(zoneKey, 1, "x"))},
			st.MakeNode().Name("n").Label(zoneKey, "a").Obj(), framework.Queue},
		{"node without the pod's key", []*v1.Pod{podWith("p", "x", spread(zoneKey, 1, "x"))},
			st.MakeNode().Name("n").Label(hostKey, "n").Obj(), framework.QueueSkip},
		{"pod without constraints", []*v1.Pod{podWith("p", "x")},
			st.MakeNode().Name("n").Label(zoneKey, "a").Obj(), framework.QueueSkip},
		{"node with both keys of two constraints", []*v1.Pod{twoKeys},
			st.MakeNode().Name("n").Label(zoneKey, "a").Label(hostKey, "n").Obj(), framework.Queue},
		{"node with one key of two constraints counted in no domain", []*v1.Pod{twoKeys},
			st.MakeNode().Name("n").Label(zoneKey, "a").Obj(), framework.QueueSkip},
		{"second pod of the job concerned", []*v1.Pod{podWith("p", "x"), podWith("q", "x", spread(zoneKey, 1, "x"))},
			st.MakeNode().Name("n").Label(zoneKey, "a").Obj(), framework.Queue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			job := &framework.QueuedJob{Pods: tt.pods}
			matched, got := false, framework.QueueSkip
			for _, e := range (&PodTopologySpread{}).EventsToRegister() {
				h, ok, err := framework.PluginEvent{Plugin: Name, ClusterEventWithHint: e}.Hint(klog.Background(), framework.EventNodeDelete, job, tt.gone, nil)
				if !ok {
					continue
				}
				if err != nil {
					t.Error(err)
				}
				matched = true
				if h == framework.Queue {
					got = h
				}
			}
			if !matched {
				t.Fatalf("%v is not registered", framework.EventNodeDelete)
			}
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
