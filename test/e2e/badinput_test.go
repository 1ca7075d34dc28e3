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

package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	schedpkg "github.com/batch-scheduler/batch-scheduler/pkg/scheduler"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// TestBadClusterObjects is the sweep of malformed cluster objects
// (docs/bad-input.md), created on the real control plane alongside valid
// pods: each gets its documented safe behaviour, and the valid pods
// still bind.
func TestBadClusterObjects(t *testing.T) {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, dyn)
	workloads := dyn.Resource(bsv1.SchemeGroupVersion.WithResource(bsv1.ExternalWorkloadsResource))
	ns := createNamespace(t)
	p := pool(t)
	normal := res{"cpu": "4", "memory": "8Gi", "pods": "2000"}

	// Nodes: two normal ones, two with absurd allocatable, one without.
	mustNode(t, poolNode(t, "bad-normal-a", normal).Obj())
	mustNode(t, poolNode(t, "bad-normal-b", normal).Obj())
	mustNode(t, poolNode(t, "bad-maxint", res{"cpu": "9223372036854775807", "memory": "8Gi", "pods": "10"}).Label("kind", "huge").Obj())
	mustNode(t, poolNode(t, "bad-1e30", res{"cpu": "1e30", "memory": "1e30", "pods": "10"}).Label("kind", "huge").Obj())
	mustNode(t, poolNode(t, "bad-no-allocatable", nil).Label("kind", "empty").Obj())

	// ExternalWorkloads with wrong fields, read through a custom informer.
	// The CRD's schema refuses some (no nodeName); those it lets through
	// must not disturb the nodes that exist.
	unknownNode := vm("bad-vm-unknown-node-"+p, "no-such-node-"+p, "1e30")
	t.Cleanup(func() { _ = workloads.Delete(context.Background(), unknownNode.Name, metav1.DeleteOptions{}) })
	if _, err := createWhenServed(t, workloads, toUnstructured(t, unknownNode)); err != nil {
		t.Fatalf("creating ExternalWorkload %s: %v", unknownNode.Name, err)
	}
	if _, err := workloads.Create(t.Context(), toUnstructured(t, vm("bad-vm-no-node-"+p, "", "1")), metav1.CreateOptions{}); err == nil {
		t.Errorf("an ExternalWorkload without nodeName was accepted; the CRD schema should refuse it")
	}
	cfg := writeSchedulerConfig(t, fmt.Sprintf("customInformers:\n- name: vms\n  resource: ExternalWorkload\n  source:\n    kubeconfig:\n      kubeconfig: %s\n", cp.KubeconfigPath))
	s := startPoolScheduler(t, "--config-path", cfg, "--kube-api-qps=500", "--kube-api-burst=1000")

	hugeName := strings.Repeat("g", 10000)
	pods := []*v1.Pod{
		// Valid pods, which must bind meanwhile.
		st.MakePod().Namespace(ns).Name("valid-0").Req(res{"cpu": "1"}).NodeSelector(map[string]string{poolLabel: p}).Obj(),
		st.MakePod().Namespace(ns).Name("valid-1").Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Namespace(ns).Name("valid-gang-0").Group("ok").MinAvailable("2").Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Namespace(ns).Name("valid-gang-1").Group("ok").MinAvailable("2").Req(res{"cpu": "1"}).Obj(),
		// A 1-cpu pod only the huge nodes can take.
		st.MakePod().Namespace(ns).Name("on-huge").Req(res{"cpu": "1"}).NodeSelector(map[string]string{"kind": "huge"}).Obj(),
		// Only the node without allocatable matches: never placed.
		st.MakePod().Namespace(ns).Name("on-empty").NodeSelector(map[string]string{"kind": "empty"}).Obj(),
		// Requests beyond any node.
		st.MakePod().Namespace(ns).Name("wants-1e30").Req(res{"cpu": "1e30"}).NodeSelector(map[string]string{"kind": "empty"}).Obj(),
		// Ignored annotations: scheduled alone, told with an event.
		st.MakePod().Namespace(ns).Name("empty-group").Group("").Req(res{"cpu": "100m"}).Obj(),
		st.MakePod().Namespace(ns).Name("quorum-no-group").MinAvailable("abc").Req(res{"cpu": "100m"}).Obj(),
		st.MakePod().Namespace(ns).Name("job-gang-yes").Annotation(framework.JobGangAnnotation, "yes").Req(res{"cpu": "100m"}).Obj(),
		st.MakePod().Namespace(ns).Name("job-gang-no-job").Annotation(framework.JobGangAnnotation, "true").Req(res{"cpu": "100m"}).Obj(),
		st.MakePod().Namespace(ns).Name("empty-volcano-group").Annotation(framework.VolcanoGroupNameAnnotation, "").Req(res{"cpu": "100m"}).Obj(),
		// Invalid gangs: not scheduled, told why in a bounded message.
		st.MakePod().Namespace(ns).Name("huge-group").Group(hugeName).MinAvailable("1").Obj(),
		st.MakePod().Namespace(ns).Name("quorum-abc").Group("abc").MinAvailable("abc").Obj(),
		st.MakePod().Namespace(ns).Name("quorum-zero").Group("zero").MinAvailable("0").Obj(),
		st.MakePod().Namespace(ns).Name("quorum-overflow").Group("overflow").MinAvailable("99999999999").Obj(),
		st.MakePod().Namespace(ns).Name("no-quorum").Group("none").Obj(),
		// The pod asking for 2 comes first: it waits for a second pod, so
		// the two are never placed before they disagree (the other, asking
		// for 1, would fit alone if it came first).
		st.MakePod().Namespace(ns).Name("disagree-1").Group("disagree").MinAvailable("2").Obj(),
		st.MakePod().Namespace(ns).Name("disagree-0").Group("disagree").MinAvailable("1").Obj(),
		st.MakePod().Namespace(ns).Name("invalid-group-name").Group("Not_A_Name").MinAvailable("1").Obj(),
	}
	for _, pod := range pods {
		mustPod(t, pod)
	}
	// Thousands of tiny gangs: one pod each, no requests.
	const tinyGangs = 2000
	createTinyGangs(t, ns, tinyGangs)

	bound := []string{"valid-0", "valid-1", "valid-gang-0", "valid-gang-1", "on-huge",
		"empty-group", "quorum-no-group", "job-gang-yes", "job-gang-no-job", "empty-volcano-group"}
	got := waitForPodsTimeout(t, ns, "the valid pods and the tiny gangs bound", 4*time.Minute, func(n map[string]string) bool {
		for _, name := range bound {
			if n[name] == "" {
				return false
			}
		}
		for i := range tinyGangs {
			if n[fmt.Sprintf("tiny-%d", i)] == "" {
				return false
			}
		}
		return true
	})
	if n := got["on-huge"]; n != "bad-maxint" && n != "bad-1e30" {
		t.Errorf("on-huge bound to %q, want a huge node", n)
	}
	for _, name := range []string{"on-empty", "wants-1e30", "huge-group", "quorum-abc", "quorum-zero", "quorum-overflow", "no-quorum", "disagree-0", "invalid-group-name"} {
		if got[name] != "" {
			t.Errorf("%s bound to %q, want it pending", name, got[name])
		}
	}

	// Reasons, each in a bounded condition message and an accepted event.
	waitUnschedulable(t, ns, "on-empty", "Too many pods")
	waitUnschedulable(t, ns, "wants-1e30", "Insufficient cpu")
	msg := waitUnschedulable(t, ns, "huge-group", "is not a valid name", "(10000 bytes)")
	if len(msg) > framework.MaxConditionMessage {
		t.Errorf("huge-group condition message has %d bytes, want at most %d", len(msg), framework.MaxConditionMessage)
	}
	waitEvent(t, ns, "huge-group", "FailedScheduling", "(10000 bytes)")
	waitUnschedulable(t, ns, "quorum-abc", framework.MinAvailableAnnotation, `"abc"`)
	waitUnschedulable(t, ns, "quorum-zero", framework.MinAvailableAnnotation, `"0"`)
	waitUnschedulable(t, ns, "quorum-overflow", framework.MinAvailableAnnotation, `"99999999999"`)
	waitUnschedulable(t, ns, "no-quorum", "declares no quorum")
	waitUnschedulable(t, ns, "disagree-0", "disagree")
	waitUnschedulable(t, ns, "invalid-group-name", "is not a valid name")
	for pod, want := range map[string]string{
		"empty-group":         framework.GroupNameAnnotation + " is empty",
		"quorum-no-group":     "the pod names no gang",
		"job-gang-yes":        `only "true"`,
		"job-gang-no-job":     "no batch/v1 Job controls the pod",
		"empty-volcano-group": framework.VolcanoGroupNameAnnotation + " is empty",
	} {
		waitEvent(t, ns, pod, schedpkg.ReasonIgnoredAnnotation, want)
	}

	// The cache: huge nodes have huge idle, not a negative one; the
	// node without allocatable has nothing; the bad ExternalWorkloads
	// are on no node of ours.
	d := s.dump(t)
	for _, name := range []string{"bad-maxint", "bad-1e30"} {
		n := node(d, name)
		if n == nil {
			t.Fatalf("node %s not in /debug/cache", name)
		}
		if n.Idle.MilliCPU < math.MaxInt64/2 {
			t.Errorf("%s idle cpu = %dm, want about 2^63 (saturated), not wrapped", name, n.Idle.MilliCPU)
		}
	}
	if n := node(d, "bad-1e30"); n != nil && n.Idle.Memory < math.MaxInt64/2 {
		t.Errorf("bad-1e30 idle memory = %d, want saturated", n.Idle.Memory)
	}
	if n := node(d, "bad-no-allocatable"); n == nil || n.Idle.Pods != 0 || n.Idle.MilliCPU != 0 {
		t.Errorf("bad-no-allocatable = %+v, want an empty node", n)
	}
	for _, name := range []string{"bad-normal-a", "bad-normal-b"} {
		if n := node(d, name); n == nil || len(n.ExternalKeys) != 0 {
			t.Errorf("%s external keys = %v, want none (the bad ExternalWorkloads are elsewhere)", name, n.ExternalKeys)
		}
	}
	// Still ready, and a new valid pod still binds.
	s.waitReady(t)
	mustPod(t, st.MakePod().Namespace(ns).Name("valid-late").Req(res{"cpu": "1"}).Obj())
	waitForPods(t, ns, "valid-late bound", func(n map[string]string) bool { return n["valid-late"] != "" })
}

// createTinyGangs creates n one-pod gangs in ns, concurrently.
func createTinyGangs(t *testing.T, ns string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := fmt.Sprintf("tiny-%d", i)
				pod := st.MakePod().Namespace(ns).Name(name).Group(name).MinAvailable("1").Obj()
				if _, err := controlplane.CreatePod(context.Background(), cp.Client, pod); err != nil {
					errs <- fmt.Errorf("creating %s: %w", name, err)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitForPodsTimeout is waitForPods with a longer timeout, for many pods.
func waitForPodsTimeout(t *testing.T, ns, what string, timeout time.Duration, cond func(nodes map[string]string) bool) map[string]string {
	t.Helper()
	var last map[string]string
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, timeout, true, func(context.Context) (bool, error) {
		last = podNodes(t, ns)
		return cond(last), nil
	})
	if err != nil {
		pending := 0
		for _, n := range last {
			if n == "" {
				pending++
			}
		}
		t.Fatalf("waiting for %s: %v; %d of %d pods pending", what, err, pending, len(last))
	}
	return last
}
