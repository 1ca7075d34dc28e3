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

package dynamicresources

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
)

// env is the plugin over a fake cluster, with its nodes.
type env struct {
	t     *testing.T
	pl    *DynamicResources
	h     *testutil.Handle
	nodes []*framework.NodeInfo
}

func newEnv(t *testing.T, nodes []*v1.Node, objs ...runtime.Object) *env {
	t.Helper()
	for _, n := range nodes {
		objs = append(objs, n)
	}
	p, h := testutil.NewSyncedPlugin(t, New, objs...)
	e := &env{t: t, pl: p.(*DynamicResources), h: h}
	for _, n := range nodes {
		e.nodes = append(e.nodes, testutil.NodeInfo(t, n))
	}
	return e
}

// place runs PreFilterPod, Filter on every node and Reserve on the first
// node that passed, as the scheduler's cycle does for one pod. It returns
// the node, or "" and the status of the PreFilterPod rejection or of the
// last node's Filter.
func (e *env) place(state *framework.CycleState, pod *v1.Pod) (string, *framework.Status) {
	e.t.Helper()
	ctx := e.t.Context()
	if st := e.pl.PreFilterPod(ctx, state, pod, e.nodes); !st.IsSuccess() {
		if st.IsSkip() {
			return e.nodes[0].Name(), nil
		}
		return "", st
	}
	var last *framework.Status
	for _, n := range e.nodes {
		st := e.pl.Filter(ctx, state, pod, n)
		if st.IsSuccess() {
			if rs := e.pl.Reserve(ctx, state, pod, n.Name()); !rs.IsSuccess() {
				return "", rs
			}
			return n.Name(), nil
		}
		last = st
	}
	return "", last
}

// TestGangOfFourWholeOrNothing: four pods each claiming 8 GPUs on four
// nodes of 8 GPUs take one node each within one cycle; a fifth finds no
// devices; once the cycle is undone (Permit rejected), the devices are
// free again.
func TestGangOfFourWholeOrNothing(t *testing.T) {
	objs := []runtime.Object{gpuClass()}
	var nodes []*v1.Node
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		nodes = append(nodes, gpuNode(n))
		objs = append(objs, slice(n, 8))
	}
	var pods []*v1.Pod
	for _, name := range []string{"w0", "w1", "w2", "w3", "w4"} {
		objs = append(objs, claim(name+"-gpus", "gpu", 8))
		pods = append(pods, podWith(name, name+"-gpus"))
	}
	e := newEnv(t, nodes, objs...)
	state := framework.NewCycleState()
	used := map[string]bool{}
	for _, pod := range pods[:4] {
		node, st := e.place(state, pod)
		if node == "" {
			t.Fatalf("pod %s found no node: %v", pod.Name, st)
		}
		if used[node] {
			t.Fatalf("pod %s placed on %s, which an earlier pod of the gang holds", pod.Name, node)
		}
		used[node] = true
	}
	node, st := e.place(state, pods[4])
	if node != "" || st.Code() != framework.Unschedulable || !strings.Contains(st.Message(), ErrReasonCannotAllocate) {
		t.Fatalf("fifth pod = %q, %v; want no node, %q", node, st, ErrReasonCannotAllocate)
	}
	// Permit rejects the gang: every placement is undone.
	for _, pod := range pods[:4] {
		e.pl.Unreserve(t.Context(), state, pod, "")
	}
	if n := len(e.pl.inFlight.list()); n != 0 {
		t.Fatalf("%d allocations in flight after Unreserve, want 0", n)
	}
	if node, st := e.place(framework.NewCycleState(), pods[4]); node == "" {
		t.Fatalf("after the gang was undone, a pod finds no node: %v", st)
	}
}

// TestLaterCyclesSeeInFlight: an allocation reserved in one cycle keeps
// its devices from the next cycle until it is released.
func TestLaterCyclesSeeInFlight(t *testing.T) {
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, gpuClass(), slice("n1", 8), claim("a", "gpu", 8), claim("b", "gpu", 1))
	s1 := framework.NewCycleState()
	if node, st := e.place(s1, podWith("pa", "a")); node != "n1" {
		t.Fatalf("pa: %q %v", node, st)
	}
	if node, st := e.place(framework.NewCycleState(), podWith("pb", "b")); node != "" || st.Code() != framework.Unschedulable {
		t.Fatalf("pb while pa's allocation is in flight = %q, %v; want Unschedulable", node, st)
	}
	e.pl.Unreserve(t.Context(), s1, podWith("pa", "a"), "n1")
	if node, st := e.place(framework.NewCycleState(), podWith("pb", "b")); node != "n1" {
		t.Fatalf("pb after release = %q, %v", node, st)
	}
}

// TestSharedClaim: one claim referenced by every pod of a gang is
// allocated once, by the first pod; the others go where its allocation
// allows (the node of its devices) and reuse it.
func TestSharedClaim(t *testing.T) {
	e := newEnv(t, []*v1.Node{gpuNode("n1"), gpuNode("n2")}, gpuClass(), slice("n1", 0), slice("n2", 2), claim("shared", "gpu", 2))
	state := framework.NewCycleState()
	for _, name := range []string{"p0", "p1", "p2"} {
		node, st := e.place(state, podWith(name, "shared"))
		if node != "n2" {
			t.Fatalf("pod %s = %q, %v; want n2, where the shared claim's devices are", name, node, st)
		}
	}
	if got := e.pl.inFlight.list(); len(got) != 1 || len(got[0].allocation.Devices.Results) != 2 {
		t.Fatalf("in flight = %+v, want the one shared allocation of 2 devices", got)
	}
}

// TestAllocatedClaimNodeSelector: a pod whose claim is allocated already
// fits only where the allocation's node selector allows.
func TestAllocatedClaimNodeSelector(t *testing.T) {
	other := podWith("other", "c")
	c := allocated(claim("c", "gpu", 1), "n2", []string{"gpu-0"}, other)
	e := newEnv(t, []*v1.Node{gpuNode("n1"), gpuNode("n2")}, gpuClass(), slice("n1", 1), slice("n2", 1), c)
	state := framework.NewCycleState()
	pod := podWith("p", "c")
	if st := e.pl.PreFilterPod(t.Context(), state, pod, e.nodes); !st.IsSuccess() {
		t.Fatalf("PreFilterPod = %v", st)
	}
	if st := e.pl.Filter(t.Context(), state, pod, e.nodes[0]); st.Code() != framework.UnschedulableAndUnresolvable || st.Message() != ErrReasonNotAvailable {
		t.Errorf("Filter on n1 = %v, want %q", st, ErrReasonNotAvailable)
	}
	if st := e.pl.Filter(t.Context(), state, pod, e.nodes[1]); !st.IsSuccess() {
		t.Errorf("Filter on n2 = %v, want success", st)
	}
	// The allocated device is taken for other claims.
	if node, st := e.place(framework.NewCycleState(), podWith("q", "d")); node != "" {
		t.Errorf("claim d missing: got %q, %v", node, st)
	}
}

// TestBadInput: what cannot be allocated for a reason of the user's says
// so, naming the claim, without a crash.
func TestBadInput(t *testing.T) {
	tmpl := "gpu-template"
	waiting := podWith("tmpl")
	waiting.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &tmpl}}
	deleting := claim("deleting", "gpu", 1)
	deleting.DeletionTimestamp = &metav1.Time{}
	deleting.Finalizers = []string{"x"}
	tests := []struct {
		name     string
		pod      *v1.Pod
		code     framework.Code
		contains []string
	}{
		{name: "missing class", pod: podWith("p", "noclass"), code: framework.UnschedulableAndUnresolvable,
			contains: []string{`resourceclaim "noclass"`, `device class "missing" does not exist`}},
		{name: "CEL that does not compile", pod: podWith("p", "badcel"), code: framework.UnschedulableAndUnresolvable,
			contains: []string{`"badcel"`, "device.nosuchfield +"}},
		{name: "class with CEL that fails at runtime", pod: podWith("p", "badclass"), code: framework.UnschedulableAndUnresolvable,
			contains: []string{`"badclass"`}},
		{name: "missing claim", pod: podWith("p", "nosuchclaim"), code: framework.UnschedulableAndUnresolvable,
			contains: []string{`resourceclaim "nosuchclaim" of pod claim "c0" not found`}},
		{name: "template claim not created yet", pod: waiting, code: framework.UnschedulableAndUnresolvable,
			contains: []string{"waiting for the resource claim controller", `"gpu-template"`}},
		{name: "claim being deleted", pod: podWith("p", "deleting"), code: framework.UnschedulableAndUnresolvable,
			contains: []string{`resourceclaim "deleting" is being deleted`}},
	}
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, gpuClass(), classWithCEL("bad", `device.attributes["x"].y > 1`), slice("n1", 2),
		claim("noclass", "missing", 1), withSelector(claim("badcel", "gpu", 1), "device.nosuchfield + "),
		claim("badclass", "bad", 1), deleting)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, st := e.place(framework.NewCycleState(), tt.pod)
			if node != "" {
				t.Fatalf("placed on %q, want a rejection", node)
			}
			if st.Code() != tt.code {
				t.Errorf("code = %v (%v), want %v", st.Code(), st, tt.code)
			}
			for _, want := range tt.contains {
				if !strings.Contains(st.Message(), want) {
					t.Errorf("message %q does not contain %q", st.Message(), want)
				}
			}
		})
	}
}

// TestSkip: a pod without claims is not the plugin's business.
func TestSkip(t *testing.T) {
	e := newEnv(t, []*v1.Node{gpuNode("n1")})
	pod := podWith("plain")
	state := framework.NewCycleState()
	if st := e.pl.PreFilterPod(t.Context(), state, pod, e.nodes); !st.IsSkip() {
		t.Errorf("PreFilterPod = %v, want Skip", st)
	}
	if st := e.pl.Reserve(t.Context(), state, pod, "n1"); !st.IsSuccess() {
		t.Errorf("Reserve = %v", st)
	}
	if st := e.pl.Bind(t.Context(), state, pod, "n1"); !st.IsSkip() {
		t.Errorf("Bind = %v, want Skip", st)
	}
}

// TestEvictionSimulation: inside an eviction simulation a claim's devices
// are free once its only consumer, a running pod, is off the nodes; a
// claim shared with a pod that stays keeps them; outside a simulation
// nothing is freed.
func TestEvictionSimulation(t *testing.T) {
	victim := podWith("victim", "vc")
	victim.Spec.NodeName = "n1"
	stays := podWith("stays", "sc")
	stays.Spec.NodeName = "n1"
	victim2 := podWith("victim2", "sc")
	victim2.Spec.NodeName = "n1"
	vc := allocated(claim("vc", "gpu", 1), "n1", []string{"gpu-0"}, victim)
	sc := allocated(claim("sc", "gpu", 1), "n1", []string{"gpu-1"}, victim2, stays)
	objs := []runtime.Object{gpuClass(), slice("n1", 2), vc, sc, victim, stays, victim2, claim("want1", "gpu", 1), claim("want2", "gpu", 2)}
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, objs...)
	// The simulation took both victims off n1; stays remains.
	e.nodes = []*framework.NodeInfo{testutil.NodeInfo(t, gpuNode("n1"), stays)}

	if node, _ := e.place(framework.NewCycleState(), podWith("p", "want1")); node != "" {
		t.Fatalf("outside a simulation, a pod took %q although every device is allocated", node)
	}
	sim := framework.NewCycleState()
	framework.MarkEvictionSimulation(sim)
	if node, st := e.place(sim, podWith("p", "want1")); node != "n1" {
		t.Fatalf("in the simulation, the victim's device is not free: %q, %v", node, st)
	}
	e.pl.Unreserve(t.Context(), sim, podWith("p", "want1"), "n1")
	if node, _ := e.place(sim, podWith("q", "want2")); node != "" {
		t.Fatalf("in the simulation, a device shared with a pod that stays counted as free (placed on %q)", node)
	}
}

// TestClaimHint: jobs are retried for their own claims and for freed
// devices only.
func TestClaimHint(t *testing.T) {
	job := &framework.QueuedJob{Pods: []*v1.Pod{podWith("p", "mine")}}
	mine, theirs := claim("mine", "gpu", 1), claim("theirs", "gpu", 1)
	held := allocated(claim("theirs", "gpu", 1), "n1", []string{"gpu-0"})
	tests := []struct {
		name           string
		oldObj, newObj any
		want           framework.QueueingHint
	}{
		{"own claim added", nil, mine, framework.Queue},
		{"other claim added", nil, theirs, framework.QueueSkip},
		{"other claim deallocated", held, theirs, framework.Queue},
		{"allocated claim deleted", held, nil, framework.Queue},
		{"unallocated claim deleted", theirs, nil, framework.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claimHint(klog.Background(), job, tt.oldObj, tt.newObj)
			if err != nil || got != tt.want {
				t.Errorf("claimHint = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestArgs: kube-scheduler's args are accepted only at what the plugin
// does.
func TestArgs(t *testing.T) {
	for _, tt := range []struct {
		args string
		ok   bool
	}{
		{"", true},
		{"filterTimeout: 0s", true},
		{"filterTimeout: 10s", false},
		{"bogus: 1", false},
	} {
		_, err := New(t.Context(), configapi.NewRawArgs("", []byte(tt.args)), testutil.NewHandle())
		if (err == nil) != tt.ok {
			t.Errorf("args %q: err = %v, want ok %v", tt.args, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), Name) {
			t.Errorf("args %q: error %q does not name the plugin", tt.args, err)
		}
	}
}

// TestEvictionSimulationGang: the simulation places a preempting gang's
// pods without Reserve; a later pod does not count on the devices an
// earlier one was placed with.
func TestEvictionSimulationGang(t *testing.T) {
	victim := podWith("victim", "vc")
	victim.Spec.NodeName = "n1"
	vc := allocated(claim("vc", "gpu", 8), "n1", devices("gpu", 8), victim)
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, gpuClass(), slice("n1", 8), vc, victim, claim("a", "gpu", 8), claim("b", "gpu", 8))
	sim := framework.NewCycleState()
	framework.MarkEvictionSimulation(sim)
	// The victim is off n1: the first pod fits there.
	e.nodes = []*framework.NodeInfo{testutil.NodeInfo(t, gpuNode("n1"))}
	p1, p2 := podWith("p1", "a"), podWith("p2", "b")
	if st := e.pl.PreFilterPod(t.Context(), sim, p1, e.nodes); !st.IsSuccess() {
		t.Fatalf("PreFilterPod p1 = %v", st)
	}
	if st := e.pl.Filter(t.Context(), sim, p1, e.nodes[0]); !st.IsSuccess() {
		t.Fatalf("Filter p1 = %v, want success once the victim is off", st)
	}
	// The simulation placed p1 on n1.
	e.nodes = []*framework.NodeInfo{testutil.NodeInfo(t, gpuNode("n1"), p1)}
	if st := e.pl.PreFilterPod(t.Context(), sim, p2, e.nodes); !st.IsSuccess() {
		t.Fatalf("PreFilterPod p2 = %v", st)
	}
	if st := e.pl.Filter(t.Context(), sim, p2, e.nodes[0]); st.Code() != framework.Unschedulable {
		t.Errorf("Filter p2 = %v, want Unschedulable: p1 was placed with those devices", st)
	}
}

// TestNominatedPodsHoldTheirDevices: a pod of another job nominated to a
// node (by preemption or a reservation) holds the devices its claims will
// need there, as it holds the node's CPU; once its nomination is released
// (it is off the node), it holds nothing; the running pod a simulation
// takes off frees its device for the pod being placed, not the held one.
func TestNominatedPodsHoldTheirDevices(t *testing.T) {
	run := podWith("run", "rc")
	run.Spec.NodeName = "n1"
	rc := allocated(claim("rc", "gpu", 1), "n1", []string{"gpu-0"}, run)
	nom := podWith("nom", "nc")
	objs := []runtime.Object{gpuClass(), slice("n1", 2), rc, run, nom, claim("nc", "gpu", 1), claim("want", "gpu", 1)}
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, objs...)
	nomTask := framework.NewAssumedTaskInfo(nom, "n1", framework.JobID{Namespace: ns, Name: "nom"})
	withNominated := func(onNode bool, sim bool) *framework.CycleState {
		state := framework.NewCycleState()
		pods := []*v1.Pod{run}
		if sim {
			pods = nil // the simulation took run off n1
			framework.MarkEvictionSimulation(state)
		}
		if onNode {
			pods = append(pods, nomTask.PodObject())
		}
		e.nodes = []*framework.NodeInfo{testutil.NodeInfo(t, gpuNode("n1"), pods...)}
		framework.WriteNominated(state, []*framework.TaskInfo{nomTask})
		return state
	}

	// fits runs PreFilterPod and Filter on n1 for a pod that wants a
	// device, reserving nothing.
	fits := func(state *framework.CycleState) *framework.Status {
		p := podWith("p", "want")
		if st := e.pl.PreFilterPod(t.Context(), state, p, e.nodes); !st.IsSuccess() {
			return st
		}
		return e.pl.Filter(t.Context(), state, p, e.nodes[0])
	}
	e.nodes = []*framework.NodeInfo{testutil.NodeInfo(t, gpuNode("n1"), run)}
	if st := fits(framework.NewCycleState()); !st.IsSuccess() {
		t.Fatalf("without the nomination, p does not fit n1's free device: %v", st)
	}
	if st := fits(withNominated(true, false)); st.Code() != framework.Unschedulable {
		t.Fatalf("with nom nominated to n1, p: %v; want Unschedulable: nom holds n1's free device", st)
	}
	if st := fits(withNominated(false, false)); !st.IsSuccess() {
		t.Fatalf("with nom's nomination released, p does not fit n1: %v", st)
	}
	if st := fits(withNominated(true, true)); !st.IsSuccess() {
		t.Fatalf("in a simulation that took run off n1, p does not fit (run's device): %v", st)
	}
}
