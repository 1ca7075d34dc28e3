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

package twolevel

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
)

// vmRefusal is the error body of a refused VM.
type vmRefusal struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

// The VM manager alone (hybrid, no allocator) beside batch-scheduler with
// the default handler: VMs shrink their hosts' capacity and pods avoid
// them, a deleted VM lets a waiting pod land, and a VM on a host full of
// pods is refused.
func TestHybridVMManagerAlone(t *testing.T) {
	ns := createNamespace(t)
	nodes := createNodes(t, "hybrid", 2, "4")
	const name = "tl-hybrid"
	m := startVMManager(t, "", "", "")
	s := startScheduler(t, name, poolName(t), freePort(t), "--config-path", writeConfig(t, fmt.Sprintf(`customInformers:
- name: vm-manager
  resource: ExternalWorkload
  source: {http: {url: %q}}
`, m.url)))

	code, body, err := m.createVM(t.Context(), "vm-a", "3", "1Gi", nodes[0])
	if err != nil || code != http.StatusCreated {
		t.Fatalf("creating vm-a (3 cpu) on %s: %d %s %v", nodes[0], code, body, err)
	}
	waitCap(t, s, nodes[0], "vm-a's 3 cpu counted against "+nodes[0], func(n *cache.NodeDump) bool { return n.External.MilliCPU == 3000 })

	// Three pods of 2 cpu: two fit on nodes[1]; nodes[0] has 1 cpu left.
	for i := range 3 {
		mustCreate(t, pod(ns, fmt.Sprintf("p-%d", i), name, "2"))
	}
	pods := waitPods(t, ns, "two pods bound", 60*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 2 })
	var waiting string
	for _, p := range pods {
		switch p.Spec.NodeName {
		case nodes[0]:
			t.Fatalf("pod %s landed on %s, where vm-a leaves 1 cpu; pods: %s", p.Name, nodes[0], placements(pods))
		case "":
			waiting = p.Name
		}
	}
	msg := waitUnschedulable(t, ns, waiting, "Insufficient cpu")
	t.Logf("%s waits: %s", waiting, msg)

	// nodes[1] is full of pods: a VM there is refused, not over-committed.
	m.waitHostPods(t, nodes[1], "4")
	code, body, err = m.createVM(t.Context(), "vm-b", "1", "1Gi", nodes[1])
	if err != nil {
		t.Fatal(err)
	}
	var refusal vmRefusal
	if code != http.StatusConflict || json.Unmarshal([]byte(body), &refusal) != nil || refusal.Reason != "InsufficientCapacity" {
		t.Fatalf("creating vm-b (1 cpu) on %s, full of pods: got %d %s, want 409 with reason InsufficientCapacity", nodes[1], code, body)
	}
	t.Logf("vm-b refused: %s", refusal.Error)

	// Deleting vm-a lets the waiting pod land on nodes[0].
	mustCall(t, http.MethodDelete, m.url+"/vms/vm-a", "", http.StatusOK)
	pods = waitPods(t, ns, "the waiting pod bound once vm-a is gone", 60*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 3 })
	for _, p := range pods {
		if p.Name == waiting && p.Spec.NodeName != nodes[0] {
			t.Fatalf("pod %s bound to %s, want %s", p.Name, p.Spec.NodeName, nodes[0])
		}
	}
	// nodes[0] has 2 cpu left, nodes[1] none: a VM of 3 cpu without a host
	// fits nowhere.
	m.waitHostPods(t, nodes[0], "2")
	code, body, err = m.createVM(t.Context(), "vm-c", "3", "1Gi", "")
	if err != nil {
		t.Fatal(err)
	}
	refusal = vmRefusal{}
	if code != http.StatusConflict || json.Unmarshal([]byte(body), &refusal) != nil || refusal.Reason != "NoHostFits" {
		t.Fatalf("creating vm-c (3 cpu, any host) with 2 cpu left on %s and none on %s: got %d %s, want 409 with reason NoHostFits", nodes[0], nodes[1], code, body)
	}
	t.Logf("vm-c refused: %s", refusal.Error)
	vms, err := m.vms(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(vms) != 0 {
		t.Fatalf("the VM manager holds %v after the refusals and the deletion, want none", vms)
	}
}
