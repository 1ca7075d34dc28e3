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

package debugger

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// vendorPolicy keeps a reserve of 1 cpu on every node, leaves the
// namespace "hidden" out, and accounts only the external workloads of
// kind vm.
var vendorPolicy = defaulthandler.Policy{
	Node: func(n *v1.Node) *v1.Node {
		n = n.DeepCopy()
		cpu := n.Status.Allocatable[v1.ResourceCPU]
		cpu.Sub(resource.MustParse("1"))
		n.Status.Allocatable[v1.ResourceCPU] = cpu
		return n
	},
	Pod: func(p *v1.Pod) *v1.Pod {
		if p.Namespace == "hidden" {
			return nil
		}
		return p
	},
	ExternalWorkload: func(w *v1alpha1.ExternalWorkload) *v1alpha1.ExternalWorkload {
		if w.Spec.WorkloadKind != "vm" {
			return nil
		}
		return w
	},
}

// withoutRules is a handler that delivers every event as the default
// handler does but does not tell the checker its rules.
type withoutRules struct {
	eventhandlers.Interface
	eventhandlers.ExternalWorkloadEventHandler
}

// verifyUnderPolicy runs the default handler with vendorPolicy (hiding its
// rules from the checker when hide is set) over one cluster state and
// returns what the checker finds once the cache has synced.
func verifyUnderPolicy(t *testing.T, hide bool) *VerifyResult {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := fake.NewClientset()
	c, err := cache.New(cache.Options{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{}, defaulthandler.WithPolicy(vendorPolicy))
	if err != nil {
		t.Fatal(err)
	}
	var handler eventhandlers.Interface = h
	if hide {
		handler = withoutRules{h, h}
	}
	workloads := fcache.NewFakeControllerSource()
	defer workloads.Shutdown()
	for _, w := range []struct{ name, kind string }{{"vm-1", "vm"}, {"ct-1", "container"}} {
		workloads.Add(&v1alpha1.ExternalWorkload{
			ObjectMeta: metav1.ObjectMeta{Name: w.name},
			Spec:       v1alpha1.ExternalWorkloadSpec{NodeName: "n1", WorkloadKind: w.kind, Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}},
		})
	}
	inf := custominformer.New(workloads, &v1alpha1.ExternalWorkload{}, custominformer.Options{Name: "workloads"})
	if err := c.AddCustomInformer(cache.CustomInformer{Name: "workloads", Resource: framework.ExternalWorkload, Informer: inf, ListerWatcher: workloads}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, st.MakeNode().Name("n1").Capacity(res{"cpu": "8", "pods": "110"}).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*v1.Pod{
		st.MakePod().Name("bound").Node("n1").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Namespace("hidden").Name("hidden-bound").Node("n1").Phase(v1.PodRunning).Req(res{"cpu": "2"}).Obj(),
		st.MakePod().Namespace("hidden").Name("hidden-pending").Req(res{"cpu": "1"}).Obj(),
	} {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Run(ctx, handler); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForHandlersSync(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := Verify(ctx, c, VerifyOptions{Rechecks: 1, Grace: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The checker reads the truth through the handler's own rules
// (eventhandlers.StateRules), so a vendor Policy that reshapes nodes and
// hides pods and workloads is no difference; a handler that keeps its
// rules to itself is checked against the objects as they are, and the
// same state then differs in each of those places.
func TestVerifyFollowsTheHandlersStateRules(t *testing.T) {
	if res := verifyUnderPolicy(t, false); !res.Consistent {
		t.Errorf("with the handler's rules: differences %+v", res.Differences)
	}

	res := verifyUnderPolicy(t, true)
	if res.Consistent {
		t.Fatal("without the handler's rules the checker found the cache consistent; it should see the policy's work as differences")
	}
	found := map[string]bool{}
	for _, d := range res.Differences {
		found[d.Kind+"/"+d.Field] = true
	}
	for _, want := range []string{DiffNode + "/allocatable", DiffExternalWorkload + "/presence"} {
		if !found[want] {
			t.Errorf("without the handler's rules: no %s difference among %+v", want, res.Differences)
		}
	}
	hiddenPods := 0
	for _, d := range res.Differences {
		if d.Kind == DiffPod && (d.Name == "hidden/hidden-bound" || d.Name == "hidden/hidden-pending") {
			hiddenPods++
		}
	}
	if hiddenPods == 0 {
		t.Errorf("without the handler's rules: no difference about the hidden pods among %+v", res.Differences)
	}
}
