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
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const (
	zoneKey = v1.LabelTopologyZone
	hostKey = v1.LabelHostname
)

// affTerm is a required term for withTerms: pods with label app=app,
// within topologyKey; namespaces and nsSelector as in the API.
type affTerm struct {
	app        string
	key        string
	namespaces []string
	nsSelector *metav1.LabelSelector
}

func (t affTerm) api() v1.PodAffinityTerm {
	return v1.PodAffinityTerm{
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": t.app}},
		TopologyKey:       t.key,
		Namespaces:        t.namespaces,
		NamespaceSelector: t.nsSelector,
	}
}

// withTerms adds required affinity and anti-affinity terms to pod.
func withTerms(pod *v1.Pod, affinity, anti []affTerm) *v1.Pod {
	if len(affinity) == 0 && len(anti) == 0 {
		return pod
	}
	pod.Spec.Affinity = &v1.Affinity{}
	if len(affinity) > 0 {
		pod.Spec.Affinity.PodAffinity = &v1.PodAffinity{}
		for _, t := range affinity {
			pod.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(pod.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t.api())
		}
	}
	if len(anti) > 0 {
		pod.Spec.Affinity.PodAntiAffinity = &v1.PodAntiAffinity{}
		for _, t := range anti {
			pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t.api())
		}
	}
	return pod
}

// pod returns a pod named name in namespace default labelled app=app
// (unless app is empty).
func pod(name, app string) *st.PodWrapper {
	w := st.MakePod().Name(name)
	if app != "" {
		w = w.Label("app", app)
	}
	return w
}

// The test topology: n1 and n2 in zone a, n3 in zone b, n4 without a zone.
var nodeNames = []string{"n1", "n2", "n3", "n4"}

func testNodes() []*v1.Node {
	return []*v1.Node{
		st.MakeNode().Name("n1").Label(hostKey, "n1").Label(zoneKey, "a").Obj(),
		st.MakeNode().Name("n2").Label(hostKey, "n2").Label(zoneKey, "a").Obj(),
		st.MakeNode().Name("n3").Label(hostKey, "n3").Label(zoneKey, "b").Obj(),
		st.MakeNode().Name("n4").Label(hostKey, "n4").Obj(),
	}
}

// Verdicts, short: pass, affinity not met, own anti-affinity violated,
// existing pods' anti-affinity violated.
const (
	ok    = ""
	aff   = "aff"
	anti  = "anti"
	exist = "exist"
)

func verdict(s *framework.Status) string {
	switch {
	case s.IsSuccess():
		return ok
	case s.Code() == framework.UnschedulableAndUnresolvable && s.Message() == ErrReasonAffinityRulesNotMatch:
		return aff
	case s.Code() == framework.Unschedulable && s.Message() == ErrReasonAntiAffinityRulesNotMatch:
		return anti
	case s.Code() == framework.Unschedulable && s.Message() == ErrReasonExistingAntiAffinityRulesNotMatch:
		return exist
	}
	return s.String()
}

// newPlugin returns the plugin over a fake API holding objs, with its
// namespace informer synced.
func newPlugin(t *testing.T, objs ...runtime.Object) *InterPodAffinity {
	t.Helper()
	p, _ := testutil.NewSyncedPlugin(t, New, objs...)
	return p.(*InterPodAffinity)
}

// run runs PreFilterPod and then Filter on every node, as the framework
// does (Filter is not called after Skip), and returns the verdicts.
func run(t *testing.T, pl *InterPodAffinity, incoming *v1.Pod, nodes []*framework.NodeInfo) (verdicts []string, skipped bool) {
	t.Helper()
	state := framework.NewCycleState()
	s := pl.PreFilterPod(t.Context(), state, incoming, nodes)
	if s.IsSkip() {
		return make([]string, len(nodes)), true
	}
	if !s.IsSuccess() {
		t.Fatalf("PreFilterPod = %v", s)
	}
	for _, n := range nodes {
		verdicts = append(verdicts, verdict(pl.Filter(t.Context(), state, incoming, n)))
	}
	return verdicts, false
}

func TestFilter(t *testing.T) {
	prodSel := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	prodNS := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod-ns", Labels: map[string]string{"env": "prod"}}}
	devNS := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev-ns", Labels: map[string]string{"env": "dev"}}}
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing map[string][]*v1.Pod // by node name
		want     []string             // for n1..n4
		wantSkip bool
	}{
		{
			name:     "plain pod, no anti-affinity anywhere: skipped",
			pod:      pod("p", "web").Obj(),
			existing: map[string][]*v1.Pod{"n1": {pod("x", "web").Obj()}},
			wantSkip: true,
		},
		{
			name:     "affinity to a zone with a matching pod",
			pod:      withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey}}, nil),
			existing: map[string][]*v1.Pod{"n1": {pod("db", "db").Obj()}},
			want:     []string{ok, ok, aff, aff},
		},
		{
			name:     "affinity by hostname",
			pod:      withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: hostKey}}, nil),
			existing: map[string][]*v1.Pod{"n3": {pod("db", "db").Obj()}},
			want:     []string{aff, aff, ok, aff},
		},
		{
			name: "first pod of a self-affine group: anywhere with the topology label",
			pod:  withTerms(pod("p", "db").Obj(), []affTerm{{app: "db", key: zoneKey}}, nil),
			want: []string{ok, ok, ok, aff},
		},
		{
			name: "no match and not self-affine",
			pod:  withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey}}, nil),
			want: []string{aff, aff, aff, aff},
		},
		{
			name:     "self-affine, but a matching pod exists elsewhere: only its zone",
			pod:      withTerms(pod("p", "db").Obj(), []affTerm{{app: "db", key: zoneKey}}, nil),
			existing: map[string][]*v1.Pod{"n3": {pod("db", "db").Obj()}},
			want:     []string{aff, aff, ok, aff},
		},
		{
			name:     "two terms must be matched by one pod",
			pod:      withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey}, {app: "db", key: hostKey}}, nil),
			existing: map[string][]*v1.Pod{"n2": {pod("db", "db").Obj()}},
			want:     []string{aff, ok, aff, aff},
		},
		{
			name:     "matching pod in another namespace does not count",
			pod:      withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey}}, nil),
			existing: map[string][]*v1.Pod{"n1": {pod("db", "db").Namespace("other").Obj()}},
			want:     []string{aff, aff, aff, aff},
		},
		{
			name:     "namespaces list names the other namespace",
			pod:      withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey, namespaces: []string{"other"}}}, nil),
			existing: map[string][]*v1.Pod{"n1": {pod("db", "db").Namespace("other").Obj()}},
			want:     []string{ok, ok, aff, aff},
		},
		{
			name:     "empty namespace selector selects every namespace",
			pod:      withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey, nsSelector: &metav1.LabelSelector{}}}, nil),
			existing: map[string][]*v1.Pod{"n3": {pod("db", "db").Namespace("other").Obj()}},
			want:     []string{aff, aff, ok, aff},
		},
		{
			name: "namespace selector by labels",
			pod:  withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey, nsSelector: prodSel}}, nil),
			existing: map[string][]*v1.Pod{
				"n1": {pod("db1", "db").Namespace("dev-ns").Obj()},
				"n3": {pod("db2", "db").Namespace("prod-ns").Obj()},
			},
			want: []string{aff, aff, ok, aff},
		},
		{
			name:     "anti-affinity by hostname",
			pod:      withTerms(pod("p", "web").Obj(), nil, []affTerm{{app: "web", key: hostKey}}),
			existing: map[string][]*v1.Pod{"n1": {pod("w", "web").Obj()}},
			want:     []string{anti, ok, ok, ok},
		},
		{
			name:     "anti-affinity by zone; a node without the zone label passes",
			pod:      withTerms(pod("p", "web").Obj(), nil, []affTerm{{app: "web", key: zoneKey}}),
			existing: map[string][]*v1.Pod{"n1": {pod("w", "web").Obj()}},
			want:     []string{anti, anti, ok, ok},
		},
		{
			name:     "a terminating pod still counts",
			pod:      withTerms(pod("p", "web").Obj(), nil, []affTerm{{app: "web", key: hostKey}}),
			existing: map[string][]*v1.Pod{"n1": {pod("w", "web").Terminating().Obj()}},
			want:     []string{anti, ok, ok, ok},
		},
		{
			name:     "a finished pod does not count",
			pod:      withTerms(pod("p", "web").Obj(), nil, []affTerm{{app: "web", key: hostKey}}),
			existing: map[string][]*v1.Pod{"n1": {pod("w", "web").Phase(v1.PodSucceeded).Obj()}},
			want:     []string{ok, ok, ok, ok},
		},
		{
			name:     "existing pod's anti-affinity by zone rejects its zone",
			pod:      pod("p", "batch").Obj(),
			existing: map[string][]*v1.Pod{"n2": {withTerms(pod("x", "").Obj(), nil, []affTerm{{app: "batch", key: zoneKey}})}},
			want:     []string{exist, exist, ok, ok},
		},
		{
			name:     "existing pod's anti-affinity that does not match: skipped",
			pod:      pod("p", "web").Obj(),
			existing: map[string][]*v1.Pod{"n2": {withTerms(pod("x", "").Obj(), nil, []affTerm{{app: "batch", key: zoneKey}})}},
			wantSkip: true,
		},
		{
			name: "existing pod's anti-affinity with a namespace selector matching the pod's namespace",
			pod:  pod("p", "batch").Namespace("prod-ns").Obj(),
			existing: map[string][]*v1.Pod{"n3": {withTerms(pod("x", "").Obj(), nil,
				[]affTerm{{app: "batch", key: hostKey, nsSelector: prodSel}})}},
			want: []string{ok, ok, exist, ok},
		},
		{
			name: "existing pod's anti-affinity with a namespace selector not matching",
			pod:  pod("p", "batch").Namespace("dev-ns").Obj(),
			existing: map[string][]*v1.Pod{"n3": {withTerms(pod("x", "").Obj(), nil,
				[]affTerm{{app: "batch", key: hostKey, nsSelector: prodSel}})}},
			wantSkip: true,
		},
		{
			name:     "affinity met, but own anti-affinity violated, reported as anti",
			pod:      withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey}}, []affTerm{{app: "web", key: hostKey}}),
			existing: map[string][]*v1.Pod{"n1": {pod("db", "db").Obj(), pod("w", "web").Obj()}},
			want:     []string{anti, ok, aff, aff},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t, prodNS, devNS)
			var nodes []*framework.NodeInfo
			for _, n := range testNodes() {
				nodes = append(nodes, testutil.NodeInfo(t, n, tt.existing[n.Name]...))
			}
			got, skipped := run(t, pl, tt.pod, nodes)
			if skipped != tt.wantSkip {
				t.Fatalf("skipped = %v, want %v (verdicts %q)", skipped, tt.wantSkip, got)
			}
			if tt.wantSkip {
				return
			}
			for i := range nodeNames {
				if got[i] != tt.want[i] {
					t.Errorf("node %s: got %q, want %q (all: %q)", nodeNames[i], got[i], tt.want[i], got)
				}
			}
		})
	}
}

// TestGang places the members of a gang one after the other on the
// NodeInfos, as the scheduler does within one cycle, and checks that each
// sees those placed before it.
func TestGang(t *testing.T) {
	pl := newPlugin(t)
	var nodes []*framework.NodeInfo
	for _, n := range testNodes() {
		nodes = append(nodes, framework.NewNodeInfo(n))
	}
	member := func(i int) *v1.Pod {
		return withTerms(pod("m"+string(rune('0'+i)), "gang").Obj(), nil, []affTerm{{app: "gang", key: hostKey}})
	}
	// Member 0 goes to n1: afterwards, n1 is excluded for member 1 by
	// both its own anti-affinity and member 0's.
	nodes[0].AddPod(member(0))
	got, _ := run(t, pl, member(1), nodes)
	if want := []string{anti, ok, ok, ok}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("member 1: got %q, want %q", got, want)
	}
	nodes[2].AddPod(member(1))
	got, _ = run(t, pl, member(2), nodes)
	if want := []string{anti, ok, anti, ok}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("member 2: got %q, want %q", got, want)
	}
	// A plain pod labelled like the gang is kept off by the members'
	// anti-affinity, although it has none itself.
	got, _ = run(t, pl, pod("plain", "gang").Obj(), nodes)
	if want := []string{exist, ok, exist, ok}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("plain pod: got %q, want %q", got, want)
	}

	// A self-affine gang: the first member may go to any zone, the second
	// only where the first went.
	var zoned []*framework.NodeInfo
	for _, n := range testNodes() {
		zoned = append(zoned, framework.NewNodeInfo(n))
	}
	affine := func(name string) *v1.Pod {
		return withTerms(pod(name, "team").Obj(), []affTerm{{app: "team", key: zoneKey}}, nil)
	}
	got, _ = run(t, pl, affine("a0"), zoned)
	if want := []string{ok, ok, ok, aff}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("first affine member: got %q, want %q", got, want)
	}
	zoned[2].AddPod(affine("a0"))
	got, _ = run(t, pl, affine("a1"), zoned)
	if want := []string{aff, aff, ok, aff}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("second affine member: got %q, want %q", got, want)
	}
}

func TestPreFilterPodErrors(t *testing.T) {
	bad := pod("p", "web").Obj()
	bad.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}},
		TopologyKey:   zoneKey,
	}}}}
	pl := newPlugin(t)
	nodes := []*framework.NodeInfo{framework.NewNodeInfo(testNodes()[0])}
	s := pl.PreFilterPod(t.Context(), framework.NewCycleState(), bad, nodes)
	if s.Code() != framework.UnschedulableAndUnresolvable || !strings.HasPrefix(s.Message(), "parsing pod: ") {
		t.Errorf("bad selector: PreFilterPod = %v, want UnschedulableAndUnresolvable \"parsing pod: ...\"", s)
	}

	// A namespace selector needs the namespace informer: before it has
	// synced, the pod fails with an error instead of a wrong verdict.
	h := testutil.NewHandle()
	p, err := New(context.Background(), nil, h)
	if err != nil {
		t.Fatal(err)
	}
	sel := withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey, nsSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}, nil)
	s = p.(*InterPodAffinity).PreFilterPod(t.Context(), framework.NewCycleState(), sel, nodes)
	if s.Code() != framework.Error || !strings.Contains(s.Message(), "not synced") {
		t.Errorf("unsynced namespaces: PreFilterPod = %v, want an error saying so", s)
	}
	// Without a namespace selector the informer is not needed.
	plain := withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey}}, nil)
	if s := p.(*InterPodAffinity).PreFilterPod(t.Context(), framework.NewCycleState(), plain, nodes); !s.IsSuccess() {
		t.Errorf("no namespace selector, unsynced namespaces: PreFilterPod = %v, want success", s)
	}

	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("foo: 1")), h); err == nil {
		t.Error("New accepted args")
	}
}

func TestHints(t *testing.T) {
	logger := klog.Background()
	withAnti := withTerms(pod("p", "web").Obj(), nil, []affTerm{{app: "web", key: hostKey}})
	withAff := withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey}}, nil)
	plainBatch := pod("p", "batch").Obj()
	repelsBatch := withTerms(pod("x", "").Node("n1").Obj(), nil, []affTerm{{app: "batch", key: zoneKey}})
	zoned := st.MakeNode().Name("n").Label(zoneKey, "a").Obj()
	rezoned := st.MakeNode().Name("n").Label(zoneKey, "b").Obj()
	bare := st.MakeNode().Name("n").Obj()
	elsewhere := func(w *st.PodWrapper) *v1.Pod { return w.Namespace("other").Obj() }
	withAffAnyNS := withTerms(pod("p", "web").Obj(), []affTerm{{app: "db", key: zoneKey, nsSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}}}, nil)
	tests := []struct {
		name     string
		pending  *v1.Pod
		fn       framework.QueueingHintFn
		old, new any
		want     framework.QueueingHint
	}{
		{"deleted pod matched the anti-affinity", withAnti, podDeletedHint, pod("w", "web").Node("n1").Obj(), nil, framework.Queue},
		{"deleted pod unrelated", withAnti, podDeletedHint, pod("w", "db").Node("n1").Obj(), nil, framework.QueueSkip},
		{"deleted pod's anti-affinity matched the pending pod", plainBatch, podDeletedHint, repelsBatch, nil, framework.Queue},
		{"deleted pod's anti-affinity did not match", withAff, podDeletedHint, repelsBatch, nil, framework.QueueSkip},
		{"added pod matched the affinity", withAff, podAddedHint, nil, pod("d", "db").Node("n1").Obj(), framework.Queue},
		{"added pod unrelated to the affinity", withAff, podAddedHint, nil, pod("d", "web").Node("n1").Obj(), framework.QueueSkip},
		{"added pod matched the affinity's selector in another namespace", withAff, podAddedHint, nil, elsewhere(pod("d", "db").Node("n1")), framework.QueueSkip},
		{"added pod in a namespace a namespace selector may select", withAffAnyNS, podAddedHint, nil, elsewhere(pod("d", "db").Node("n1")), framework.Queue},
		{"added pod matched the anti-affinity: cannot help", withAnti, podAddedHint, nil, pod("w", "web").Node("n1").Obj(), framework.QueueSkip},
		{"added pod's own anti-affinity cannot help", plainBatch, podAddedHint, nil, repelsBatch, framework.QueueSkip},
		{"pod added without a pod", withAff, podAddedHint, nil, nil, framework.Queue},
		{"relabelled pod now matches the affinity", withAff, podLabelsChangedHint, pod("d", "web").Node("n1").Obj(), pod("d", "db").Node("n1").Obj(), framework.Queue},
		{"relabelled pod matched the affinity before", withAff, podLabelsChangedHint, pod("d", "db").Node("n1").Obj(), pod("d", "db").Label("x", "y").Node("n1").Obj(), framework.QueueSkip},
		{"relabelled pod no longer matches the affinity", withAff, podLabelsChangedHint, pod("d", "db").Node("n1").Obj(), pod("d", "web").Node("n1").Obj(), framework.QueueSkip},
		{"relabelled pod in another namespace", withAff, podLabelsChangedHint, elsewhere(pod("d", "web").Node("n1")), elsewhere(pod("d", "db").Node("n1")), framework.QueueSkip},
		{"relabelled pod no longer matches the anti-affinity", withAnti, podLabelsChangedHint, pod("w", "web").Node("n1").Obj(), pod("w", "db").Node("n1").Obj(), framework.Queue},
		{"relabelled pod now matches the anti-affinity", withAnti, podLabelsChangedHint, pod("w", "db").Node("n1").Obj(), pod("w", "web").Node("n1").Obj(), framework.QueueSkip},
		{"relabelled pod without the old pod", withAff, podLabelsChangedHint, nil, pod("d", "db").Node("n1").Obj(), framework.Queue},
		{"relabelled pod without the new pod", withAff, podLabelsChangedHint, pod("d", "db").Node("n1").Obj(), "pod", framework.Queue},
		{"node added with the affinity key", withAff, nodeHint, nil, zoned, framework.Queue},
		{"node changed zone", withAff, nodeHint, zoned, rezoned, framework.Queue},
		{"node lost the zone: may leave an existing pod's anti-affinity domain", withAff, nodeHint, zoned, bare, framework.Queue},
		{"node lost the anti-affinity key", withAnti, nodeHint, st.MakeNode().Name("n").Label(hostKey, "n").Obj(), bare, framework.Queue},
		{"node gained an unrelated label: no help", withAff, nodeHint, zoned, st.MakeNode().Name("n").Label(zoneKey, "a").Label("x", "y").Obj(), framework.QueueSkip},
		{"wrong object", withAff, nodeHint, nil, "node", framework.Queue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := tt.fn(logger, &framework.QueuedJob{Pods: []*v1.Pod{tt.pending}}, tt.old, tt.new)
			if got != tt.want {
				t.Errorf("hint = %v, want %v", got, tt.want)
			}
		})
	}
}
