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

package plugindiff

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	kframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	kipa "k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	kpts "k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	kruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	kmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/interpodaffinity"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/podtopologyspread"
)

// pick returns one of xs at random.
func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }

// term returns a random required pod (anti-)affinity term.
func term(r *rand.Rand) v1.PodAffinityTerm {
	t := v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick(r, "x", "y")}},
		TopologyKey:   pick(r, v1.LabelHostname, v1.LabelTopologyZone, "rack"),
	}
	switch r.Intn(6) {
	case 0:
		t.Namespaces = []string{pick(r, "default", "other")}
	case 1:
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": pick(r, "prod", "dev")}}
	case 2:
		t.NamespaceSelector = &metav1.LabelSelector{}
	}
	return t
}

// affinity returns random required pod affinity and anti-affinity, each
// present with probability p; nil when neither is.
func affinity(r *rand.Rand, p float64) *v1.Affinity {
	a := &v1.Affinity{}
	any := false
	if r.Float64() < p {
		a.PodAffinity = &v1.PodAffinity{}
		for range 1 + r.Intn(2) {
			a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(r))
		}
		any = true
	}
	if r.Float64() < p {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
		for range 1 + r.Intn(2) {
			a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(r))
		}
		any = true
	}
	if r.Float64() < p {
		if a.PodAffinity == nil {
			a.PodAffinity = &v1.PodAffinity{}
		}
		a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			v1.WeightedPodAffinityTerm{Weight: int32(1 + r.Intn(100)), PodAffinityTerm: term(r)})
		any = true
	}
	if r.Float64() < p {
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &v1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			v1.WeightedPodAffinityTerm{Weight: int32(1 + r.Intn(100)), PodAffinityTerm: term(r)})
		any = true
	}
	if !any {
		return nil
	}
	return a
}

// spread returns up to two random topology spread constraints.
func spread(r *rand.Rand) []v1.TopologySpreadConstraint {
	var out []v1.TopologySpreadConstraint
	for range r.Intn(3) {
		c := v1.TopologySpreadConstraint{
			MaxSkew:           int32(1 + r.Intn(2)),
			TopologyKey:       pick(r, v1.LabelHostname, v1.LabelTopologyZone, "rack"),
			WhenUnsatisfiable: pick(r, v1.DoNotSchedule, v1.DoNotSchedule, v1.ScheduleAnyway),
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick(r, "x", "y")}},
		}
		if r.Intn(5) == 0 {
			c.LabelSelector = &metav1.LabelSelector{}
		}
		if r.Intn(4) == 0 && c.WhenUnsatisfiable == v1.DoNotSchedule {
			c.MinDomains = ptr.To(int32(1 + r.Intn(4)))
		}
		if r.Intn(3) == 0 {
			c.NodeAffinityPolicy = ptr.To(pick(r, v1.NodeInclusionPolicyHonor, v1.NodeInclusionPolicyIgnore))
		}
		if r.Intn(3) == 0 {
			c.NodeTaintsPolicy = ptr.To(pick(r, v1.NodeInclusionPolicyHonor, v1.NodeInclusionPolicyIgnore))
		}
		if r.Intn(3) == 0 {
			c.MatchLabelKeys = []string{"rev"}
		}
		out = append(out, c)
	}
	return out
}

// scenario is one input: nodes, the pods on them and the incoming pod.
type scenario struct {
	nodes    []*v1.Node
	existing []*v1.Pod
	pod      *v1.Pod
}

// gen returns random scenario number i.
func gen(r *rand.Rand, i int) scenario {
	var s scenario
	nn := 2 + r.Intn(5)
	for n := range nn {
		name := fmt.Sprintf("n%d", n)
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if r.Intn(8) != 0 {
			node.Labels[v1.LabelHostname] = name
		}
		if r.Intn(5) != 0 {
			node.Labels[v1.LabelTopologyZone] = pick(r, "a", "b", "c")
		}
		if r.Intn(2) == 0 {
			node.Labels["rack"] = pick(r, "r1", "r2")
		}
		if r.Intn(5) == 0 {
			node.Spec.Taints = []v1.Taint{{Key: "t", Value: "v", Effect: pick(r, v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute)}}
		}
		s.nodes = append(s.nodes, node)
	}
	for e := range r.Intn(14) {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("e%d", e), Namespace: pick(r, "default", "default", "other"), UID: types.UID(fmt.Sprintf("u-%d-e%d", i, e)),
			Labels: map[string]string{"app": pick(r, "x", "y", "z"), "rev": pick(r, "1", "2")},
		}}
		p.Spec.NodeName = s.nodes[r.Intn(nn)].Name
		p.Spec.Affinity = affinity(r, 0.2)
		p.Status.Phase = pick(r, v1.PodRunning, v1.PodRunning, v1.PodRunning, v1.PodSucceeded)
		if r.Intn(8) == 0 {
			p.DeletionTimestamp = &metav1.Time{}
		}
		s.existing = append(s.existing, p)
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: types.UID(fmt.Sprintf("u-%d-p", i)),
		Labels: map[string]string{"app": pick(r, "x", "y"), "rev": pick(r, "1", "2")}}}
	p.Spec.Affinity = affinity(r, 0.4)
	p.Spec.TopologySpreadConstraints = spread(r)
	if r.Intn(4) == 0 {
		p.Spec.NodeSelector = map[string]string{v1.LabelTopologyZone: pick(r, "a", "b")}
	}
	if r.Intn(3) == 0 {
		p.Spec.Tolerations = []v1.Toleration{{Key: "t", Operator: v1.TolerationOpExists}}
	}
	s.pod = p
	return s
}

// verdict is a plugin's answer for one node: empty for a pass, else the
// status code (prefixed "pre:" for a PreFilter rejection) and message.
type verdict struct {
	code string
	msg  string
}

// kubeVerdicts runs kube-scheduler's plugin (ipa or pts) on s, per node.
// Finished pods are left out, as kube-scheduler's informer leaves them out.
func kubeVerdicts(t *testing.T, ctx context.Context, plugin string, s scenario, nsObjs []*v1.Namespace) ([]verdict, []int64) {
	var running []*v1.Pod
	for _, p := range s.existing {
		if p.Status.Phase != v1.PodSucceeded {
			running = append(running, p)
		}
	}
	snapshot := cache.NewSnapshot(running, s.nodes)
	client := fake.NewClientset()
	for _, ns := range nsObjs {
		if err := client.Tracker().Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	fh, err := kruntime.NewFramework(ctx, nil, nil, kruntime.WithSnapshotSharedLister(snapshot), kruntime.WithInformerFactory(factory))
	if err != nil {
		t.Fatal(err)
	}
	var pre fwk.PreFilterPlugin
	var filter fwk.FilterPlugin
	var score fwk.ScorePlugin
	fts := feature.Features{EnableNodeInclusionPolicyInPodTopologySpread: true, EnableMatchLabelKeysInPodTopologySpread: true}
	switch plugin {
	case "ipa":
		p, err := kipa.New(ctx, &config.InterPodAffinityArgs{HardPodAffinityWeight: 1}, fh, fts)
		if err != nil {
			t.Fatal(err)
		}
		pre, filter, score = p.(fwk.PreFilterPlugin), p.(fwk.FilterPlugin), p.(fwk.ScorePlugin)
	case "pts":
		p, err := kpts.New(ctx, &config.PodTopologySpreadArgs{DefaultingType: config.SystemDefaulting}, fh, fts)
		if err != nil {
			t.Fatal(err)
		}
		pre, filter, score = p.(fwk.PreFilterPlugin), p.(fwk.FilterPlugin), p.(fwk.ScorePlugin)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	nodeInfos, _ := snapshot.NodeInfos().List()
	state := kframework.NewCycleState()
	_, st := pre.PreFilter(ctx, state, s.pod, nodeInfos)
	byName := map[string]int{}
	for i, n := range s.nodes {
		byName[n.Name] = i
	}
	res := make([]verdict, len(s.nodes))
	switch {
	case st.IsSkip():
	case !st.IsSuccess():
		for i := range res {
			res[i] = verdict{"pre:" + st.Code().String(), st.Message()}
		}
	default:
		for _, ni := range nodeInfos {
			if fs := filter.Filter(ctx, state, s.pod, ni); !fs.IsSuccess() {
				res[byName[ni.Node().Name]] = verdict{fs.Code().String(), fs.Message()}
			}
		}
	}
	// Scores, with every node feasible.
	scores := make([]int64, len(s.nodes))
	if ps := score.(fwk.PreScorePlugin).PreScore(ctx, state, s.pod, nodeInfos); ps.IsSkip() {
		return res, scores
	} else if !ps.IsSuccess() {
		t.Fatalf("kube PreScore: %v", ps)
	}
	list := make([]fwk.NodeScore, len(nodeInfos))
	for i, ni := range nodeInfos {
		v, ss := score.Score(ctx, state, s.pod, ni)
		if !ss.IsSuccess() {
			t.Fatalf("kube Score: %v", ss)
		}
		list[i] = fwk.NodeScore{Name: ni.Node().Name, Score: v}
	}
	if ns := score.ScoreExtensions().NormalizeScore(ctx, state, s.pod, list); !ns.IsSuccess() {
		t.Fatalf("kube NormalizeScore: %v", ns)
	}
	for _, l := range list {
		scores[byName[l.Name]] = l.Score
	}
	return res, scores
}

// ourVerdicts runs this project's plugin (ipa or pts) on s, per node.
func ourVerdicts(t *testing.T, ctx context.Context, plugin string, s scenario, nsObjs []*v1.Namespace) ([]verdict, []int64) {
	client := fake.NewClientset()
	for _, ns := range nsObjs {
		if err := client.Tracker().Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	h := &handle{client: client, factory: informers.NewSharedInformerFactory(client, 0)}
	var pre framework.PodPreFilterPlugin
	var filter framework.FilterPlugin
	var score framework.ScorePlugin
	switch plugin {
	case "ipa":
		p, err := interpodaffinity.New(ctx, nil, h)
		if err != nil {
			t.Fatal(err)
		}
		pre, filter, score = p.(framework.PodPreFilterPlugin), p.(framework.FilterPlugin), p.(framework.ScorePlugin)
	case "pts":
		p, err := podtopologyspread.New(ctx, nil, h)
		if err != nil {
			t.Fatal(err)
		}
		pre, filter, score = p.(framework.PodPreFilterPlugin), p.(framework.FilterPlugin), p.(framework.ScorePlugin)
	}
	h.SharedInformerFactory().Start(ctx.Done())
	h.SharedInformerFactory().WaitForCacheSync(ctx.Done())
	var nodes []*framework.NodeInfo
	for _, n := range s.nodes {
		var pods []*v1.Pod
		for _, p := range s.existing {
			if p.Spec.NodeName == n.Name {
				pods = append(pods, p)
			}
		}
		nodes = append(nodes, framework.NewNodeInfo(n, pods...))
	}
	state := framework.NewCycleState()
	st := pre.PreFilterPod(ctx, state, s.pod, nodes)
	res := make([]verdict, len(nodes))
	switch {
	case st.IsSkip():
	case !st.IsSuccess():
		for i := range res {
			res[i] = verdict{"pre:" + st.Code().String(), st.Message()}
		}
	default:
		for i, n := range nodes {
			if fs := filter.Filter(ctx, state, s.pod, n); !fs.IsSuccess() {
				res[i] = verdict{fs.Code().String(), fs.Message()}
			}
		}
	}
	scores := make([]int64, len(nodes))
	if ps := score.(framework.PreScorePlugin).PreScore(ctx, state, s.pod, nodes); ps.IsSkip() {
		return res, scores
	} else if !ps.IsSuccess() {
		t.Fatalf("PreScore: %v", ps)
	}
	list := make([]framework.NodeScore, len(nodes))
	for i, n := range nodes {
		v, ss := score.Score(ctx, state, s.pod, n)
		if !ss.IsSuccess() {
			t.Fatalf("Score: %v", ss)
		}
		list[i] = framework.NodeScore{Name: n.Name(), Score: v}
	}
	if ns := score.ScoreExtensions().NormalizeScore(ctx, state, s.pod, list); !ns.IsSuccess() {
		t.Fatalf("NormalizeScore: %v", ns)
	}
	for i, l := range list {
		scores[i] = l.Score
	}
	return res, scores
}

func TestDifferential(t *testing.T) {
	kmetrics.Register()
	ctx := context.Background()
	nsObjs := []*v1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "prod"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"env": "dev"}}},
	}
	r := rand.New(rand.NewSource(7))
	rejected := map[string]int{}
	fails, scoreFails := 0, 0
	scored := map[string]int{} // scenarios with scores other than 0 and 100
	for i := range 3000 {
		s := gen(r, i)
		for _, plugin := range []string{"ipa", "pts"} {
			k, kScores := kubeVerdicts(t, ctx, plugin, s, nsObjs)
			o, oScores := ourVerdicts(t, ctx, plugin, s, nsObjs)
			if !slices.Equal(kScores, oScores) {
				scoreFails++
				if scoreFails < 10 {
					t.Errorf("scenario %d %s: normalized scores: kube %v, ours %v\nnodes %v\npod %+v %+v", i, plugin, kScores, oScores, labelsOf(s.nodes), s.pod.Spec.Affinity, s.pod.Spec.TopologySpreadConstraints)
				}
			}
			if slices.ContainsFunc(kScores, func(v int64) bool { return v != 0 && v != 100 }) {
				scored[plugin]++
			}
			for n := range k {
				if k[n].code != "" {
					rejected[plugin+" "+k[n].code+" "+k[n].msg]++
				}
				if k[n] != o[n] {
					fails++
					if fails < 15 {
						t.Errorf("scenario %d %s node %s: kube %+v, ours %+v\nnodes %v\npod aff %+v spread %+v sel %v\nexisting %d",
							i, plugin, s.nodes[n].Name, k[n], o[n], labelsOf(s.nodes), s.pod.Spec.Affinity, s.pod.Spec.TopologySpreadConstraints, s.pod.Spec.NodeSelector, len(s.existing))
					}
				}
			}
		}
	}
	t.Logf("mismatches: %d verdicts, %d score lists; kube-scheduler's rejections: %v; scenarios with graded scores: %v", fails, scoreFails, rejected, scored)
	if scored["ipa"] == 0 || scored["pts"] == 0 {
		t.Errorf("scores were not exercised: %v", scored)
	}
	if len(rejected) < 5 {
		t.Errorf("only %d of the 5 rejection reasons were exercised: %v", len(rejected), rejected)
	}
}

func labelsOf(ns []*v1.Node) []map[string]string {
	var out []map[string]string
	for _, n := range ns {
		out = append(out, n.Labels)
	}
	return out
}

// handle is a framework.Handle over a fake clientset.
type handle struct {
	client  *fake.Clientset
	factory informers.SharedInformerFactory
}

func (h *handle) ClientSet() kubernetes.Interface                        { return h.client }
func (h *handle) EventRecorder() events.EventRecorder                    { return nil }
func (h *handle) SharedInformerFactory() informers.SharedInformerFactory { return h.factory }
