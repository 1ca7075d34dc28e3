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

package plugins_test

import (
	"context"
	"reflect"
	"testing"

	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type res = map[v1.ResourceName]string

// TestDefaultFramework builds the default profile from the in-tree registry
// with the real framework runtime and runs a job through it.
func TestDefaultFramework(t *testing.T) {
	ctx := context.Background()
	fw, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), plugins.DefaultProfile("batch-scheduler"), testutil.NewHandle())
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	// Every in-tree plugin registers its events, so the scheduler needs
	// only the pod and node informers, and the storage ones the volume
	// plugins read, and the DRA ones DynamicResources reads (ExternalWorkload events come from custom informers, if
	// any are configured, and so do Grants; gang group events come from
	// the event handler's dialect informers, and queue events from the cache).
	if got, want := fw.ResourcesNeeded(), []framework.EventResource{framework.CSIDriver, framework.CSINode, framework.CSIStorageCapacity, framework.DeviceClass, framework.ExternalWorkload, framework.GangGroup, framework.Grant,
		framework.Node, framework.PersistentVolume, framework.PersistentVolumeClaim, framework.Pod, framework.QueueResource,
		framework.ResourceClaim, framework.ResourceSlice, framework.StorageClass}; !reflect.DeepEqual(got, want) {
		t.Errorf("ResourcesNeeded = %v, want %v", got, want)
	}

	// A gang of three 2-cpu pods of which only two exist yet waits.
	mk := func(name string) *v1.Pod {
		return st.MakePod().Namespace("ns").Name(name).Group("g").MinAvailable("3").Req(res{"cpu": "2"}).Obj()
	}
	a, b, c := mk("a"), mk("b"), mk("c")
	id := framework.JobID{Namespace: "ns", Name: "g", Gang: true}
	waiting := &framework.Job{ID: id, MinAvailable: 3, Pending: []*v1.Pod{a, b}}
	s := fw.RunPreFilterPlugins(ctx, framework.NewCycleState(), waiting)
	if s.Code() != framework.Unschedulable || s.Plugin() != "Gang" || s.Message() != "waiting for tasks: 2 of min-available 3 exist" {
		t.Errorf("PreFilter of a waiting gang = %v (plugin %q)", s, s.Plugin())
	}

	// With all three, the filters find the one node that fits.
	job := &framework.Job{ID: id, MinAvailable: 3, Pending: []*v1.Pod{a, b, c}}
	state := framework.NewCycleState()
	if s := fw.RunPreFilterPlugins(ctx, state, job); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v", s)
	}
	big := res{"cpu": "8", "memory": "8Gi", "pods": "10"}
	nodes := []*framework.NodeInfo{
		testutil.NodeInfo(t, st.MakeNode().Name("cordoned").Capacity(big).Unschedulable(true).Obj()),
		testutil.NodeInfo(t, st.MakeNode().Name("tainted").Capacity(big).Taint("dedicated", "infra", v1.TaintEffectNoSchedule).Obj()),
		testutil.NodeInfo(t, st.MakeNode().Name("small").Capacity(res{"cpu": "1", "memory": "8Gi", "pods": "10"}).Obj()),
		testutil.NodeInfo(t, st.MakeNode().Name("busy").Capacity(big).Obj(), st.MakePod().Name("x").Req(res{"cpu": "7"}).Obj()),
		testutil.NodeInfo(t, st.MakeNode().Name("free").Capacity(big).Obj()),
	}
	feasible, diag, err := fw.FindFeasibleNodes(ctx, state, a, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(feasible) != 1 || feasible[0].Name() != "free" {
		t.Fatalf("feasible = %v", feasible)
	}
	wantCounts := map[string]int{
		"node(s) were unschedulable":       1,
		"node(s) had untolerated taint(s)": 1,
		"Insufficient cpu":                 2,
	}
	if !reflect.DeepEqual(diag.ReasonCounts(), wantCounts) {
		t.Errorf("ReasonCounts = %v, want %v", diag.ReasonCounts(), wantCounts)
	}
	if got, want := diag.RejectingPlugins(), []string{"NodeResourcesFit", "NodeUnschedulable", "TaintToleration"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RejectingPlugins = %v, want %v", got, want)
	}
	scores, s := fw.RunScorePlugins(ctx, state, a, nodes[3:])
	if !s.IsSuccess() || len(scores) != 2 || scores[1].Score <= scores[0].Score {
		t.Errorf("scores = %v, %v; want the free node ahead of the busy one", scores, s)
	}

	// Only two of the three placed: Permit refuses the gang.
	placed := map[string]string{string(a.UID): "free", string(b.UID): "free"}
	s = fw.RunPermitPlugins(ctx, state, job, placed)
	if s.Code() != framework.Unschedulable || s.Plugin() != "Gang" || s.Message() != "gang ns/g: 2 of 3 tasks could be placed, min-available 3" {
		t.Errorf("Permit = %v (plugin %q)", s, s.Plugin())
	}
	placed[string(c.UID)] = "free"
	if s := fw.RunPermitPlugins(ctx, state, job, placed); !s.IsSuccess() {
		t.Errorf("Permit of the whole gang = %v", s)
	}
}

// hostPortPod returns a pod of gang ns/g (min-available 2) whose container
// asks for TCP host port 80 on every address.
func hostPortPod(name string) *v1.Pod {
	pod := st.MakePod().Namespace("ns").Name(name).Group("g").MinAvailable("2").Obj()
	pod.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080, HostPort: 80}}
	return pod
}

// Two tasks of a gang asking for the same host port never share a node in
// the default profile: the second sees the first on the cycle's copy of
// the node, and NodePorts rejects it there with kube-scheduler's reason.
func TestDefaultFrameworkHostPorts(t *testing.T) {
	ctx := context.Background()
	fw, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), plugins.DefaultProfile("batch-scheduler"), testutil.NewHandle())
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	a, b := hostPortPod("a"), hostPortPod("b")
	job := &framework.Job{ID: framework.JobID{Namespace: "ns", Name: "g", Gang: true}, MinAvailable: 2, Pending: []*v1.Pod{a, b}}
	state := framework.NewCycleState()
	if s := fw.RunPreFilterPlugins(ctx, state, job); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v", s)
	}
	big := res{"cpu": "8", "memory": "8Gi", "pods": "10"}
	snapshot := []*framework.NodeInfo{testutil.NodeInfo(t, st.MakeNode().Name("n1").Capacity(big).Obj()).Clone()}
	feasible, _, err := fw.FindFeasibleNodes(ctx, state, a, snapshot)
	if err != nil || len(feasible) != 1 {
		t.Fatalf("first task: feasible = %v, %v", feasible, err)
	}
	snapshot[0].AddPod(a)
	feasible, diag, err := fw.FindFeasibleNodes(ctx, state, b, snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if len(feasible) != 0 {
		t.Errorf("second task: feasible = %v, want none: the port is taken by the first", feasible)
	}
	if want := map[string]int{"node(s) didn't have free ports for the requested pod ports": 1}; !reflect.DeepEqual(diag.ReasonCounts(), want) {
		t.Errorf("ReasonCounts = %v, want %v", diag.ReasonCounts(), want)
	}
	if got, want := diag.RejectingPlugins(), []string{"NodePorts"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RejectingPlugins = %v, want %v", got, want)
	}
	// A second node takes the second task.
	snapshot = append(snapshot, testutil.NodeInfo(t, st.MakeNode().Name("n2").Capacity(big).Obj()).Clone())
	feasible, _, err = fw.FindFeasibleNodes(ctx, state, b, snapshot)
	if err != nil || len(feasible) != 1 || feasible[0].Name() != "n2" {
		t.Errorf("with a second node: feasible = %v, %v; want n2", feasible, err)
	}
}

// Every in-tree plugin of the default profile's PreFilterPod and Filter
// points says which pods it judges by spec alone, so the scheduling cycle
// may give a gang's alike pods one verdict; not for pods with claims of
// their own.
func TestDefaultProfileJudgesAlikePods(t *testing.T) {
	fw, err := frameworkruntime.NewFramework(context.Background(), plugins.NewInTreeRegistry(), plugins.DefaultProfile("batch-scheduler"), testutil.NewHandle())
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	mk := func(name string) *st.PodWrapper {
		return st.MakePod().Namespace("ns").Name(name).Group("g").MinAvailable("2").Req(res{"cpu": "2"})
	}
	if !fw.Alike(mk("a").Obj(), mk("b").Obj()) {
		t.Errorf("two pods alike but for their names are not Alike in the default profile: a plugin there is no framework.SpecJudge")
	}
	claims := func(p *v1.Pod) *v1.Pod {
		tmpl := "gpu"
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
		return p
	}
	if fw.Alike(claims(mk("a").Obj()), claims(mk("b").Obj())) {
		t.Errorf("pods with ResourceClaims of their own are Alike")
	}
	ephemeral := func(p *v1.Pod) *v1.Pod {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}})
		return p
	}
	if fw.Alike(ephemeral(mk("a").Obj()), ephemeral(mk("b").Obj())) {
		t.Errorf("pods with generic ephemeral volumes are Alike")
	}
}
