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
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// gpuNodeLabel pins the filler pods of TestDRAGangReservationHoldsDevices
// to their nodes.
const gpuNodeLabel = "e2e.batch-scheduler.io/gpu-node"

// A gang of two pods claiming a GPU each, on two nodes whose two GPUs
// each are taken by running pods, reserves the node whose pods say they
// end first. When one of them ends, the GPU it frees is held for the gang:
// a pod that asks for a GPU and says nothing of its runtime does not take
// it, although the node has CPU to spare. When the second ends, the gang
// lands there with its claims allocated on that node.
func TestDRAGangReservationHoldsDevices(t *testing.T) {
	ns := createNamespace(t)
	class := mustDeviceClass(t, ns)
	big := res{"cpu": "16", "memory": "64Gi", "pods": "110"}
	nodes := map[string]string{"a": ns + "-a", "b": ns + "-b"}
	for key, node := range nodes {
		mustNode(t, poolNode(t, node, big).Label(gpuNodeLabel, key).Obj())
		publishGPUs(t, node, 2)
	}
	startPoolScheduler(t)

	// a's pods say they run a minute; b's say nothing.
	var fillers []string
	for _, key := range []string{"a", "b"} {
		for i := range 2 {
			name := fmt.Sprintf("%s-%d", key, i)
			w := st.MakePod().Namespace(ns).Name(name).Req(res{"cpu": "1"}).NodeSelector(map[string]string{gpuNodeLabel: key})
			if key == "a" {
				w = w.Annotation(framework.ExpectedRuntimeAnnotation, "1m")
			}
			mustGPUClaim(t, ns, name+"-gpu", class, 1)
			mustPod(t, withResourceClaim(w, name+"-gpu"))
			fillers = append(fillers, name)
		}
	}
	waitForPods(t, ns, "the fillers bound", func(n map[string]string) bool {
		for _, f := range fillers {
			if n[f] == "" {
				return false
			}
		}
		return true
	})

	for i := range 2 {
		claim := fmt.Sprintf("g-%d-gpu", i)
		mustGPUClaim(t, ns, claim, class, 1)
		mustPod(t, withResourceClaim(gpuMember(ns, "g", i, 2), claim))
	}
	waitUnschedulable(t, ns, "g-0", "reservation: room held on "+nodes["a"]+" until 2 running pods end")

	mustGPUClaim(t, ns, "s-gpu", class, 1)
	mustPod(t, withResourceClaim(st.MakePod().Namespace(ns).Name("s").Req(res{"cpu": "1"}), "s-gpu"))
	waitUnschedulable(t, ns, "s")

	endGPUPod(t, ns, "a-0", "a-0-gpu")
	assertNoneBoundFor(t, ns, 3*time.Second, "s", "g-0", "g-1")

	endGPUPod(t, ns, "a-1", "a-1-gpu")
	placed := waitForPods(t, ns, "the gang bound on its reserved node", func(n map[string]string) bool {
		return n["g-0"] != "" && n["g-1"] != ""
	})
	for i := range 2 {
		pod := fmt.Sprintf("g-%d", i)
		if placed[pod] != nodes["a"] {
			t.Errorf("%s bound to %s, want %s, the node it reserved", pod, placed[pod], nodes["a"])
		}
		checkAllocatedOn(t, ns, pod+"-gpu", nodes["a"], 1, pod)
	}
	if n := podNodes(t, ns)["s"]; n != "" {
		t.Errorf("s bound to %s: every GPU is taken", n)
	}
}

// endGPUPod ends a running pod that holds claim as the kubelet and the
// resource claim controller would: the pod is deleted and the claim's
// devices are given back.
func endGPUPod(t *testing.T, ns, pod, claim string) {
	t.Helper()
	if err := cp.Client.CoreV1().Pods(ns).Delete(t.Context(), pod, now); err != nil {
		t.Fatalf("deleting pod %s/%s: %v", ns, pod, err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := getClaim(t, ns, claim)
		c.Status.ReservedFor, c.Status.Allocation = nil, nil
		_, err := cp.Client.ResourceV1().ResourceClaims(ns).UpdateStatus(t.Context(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("deallocating claim %s/%s: %v", ns, claim, err)
	}
}
