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
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
)

// A revocation under a running gang hands the room to the other
// framework only once the gang is gone. batch runs a gang of four across
// two nodes; its grant on the first is revoked while a VM of the vms
// framework waits for that whole node. With evictOnRevoke the handler
// evicts the gang whole, members on the other node too (never one member
// below the quorum); evicted pods stay Terminating (no kubelet runs
// here), so they are still in use. Without it the gang runs on. Either
// way the VM must keep waiting; once the pods are gone (deleted, as a
// kubelet would confirm) the allocator grants vms the node, and the VM
// starts.
func TestRevocationHandsRoomOverOnlyOnceFree(t *testing.T) {
	for _, evict := range []bool{true, false} {
		t.Run(fmt.Sprintf("evictOnRevoke=%t", evict), func(t *testing.T) { testRevocationHandoff(t, evict) })
	}
}

func testRevocationHandoff(t *testing.T, evict bool) {
	ns := createNamespace(t)
	nodes := createNodes(t, "handoff", 2, "8")
	port := freePort(t)
	vmListen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	const name = "tl-handoff"
	var vm *vmManagerProc
	a, _ := startTwoLevelWith(t, allocatorOptions{idleTimeout: time.Second, frameworks: []framework{
		{Name: "batch", Weight: 1, DemandURL: "http://127.0.0.1:" + strconv.Itoa(port) + demand.Path},
		{Name: "vms", Weight: 1, DemandURL: "http://" + vmListen + demand.Path},
	}}, func(a *allocatorProc) { vm = startVMManager(t, vmListen, "vms", a.url) },
		schedulerSpec{name: name, framework: "batch", port: port, vmURL: "http://" + vmListen, evictOnRevoke: evict})
	a.waitGrants(t, "batch holds a grant on both nodes", 30*time.Second, func(gs []bsv1.Grant) bool {
		g := grantsOf(gs, "batch", nodes)
		return g[nodes[0]] >= 4000 && g[nodes[1]] >= 4000
	})

	// The gang: two members of 2 cpu on each node, quorum 4.
	for i := range 4 {
		n := nodes[i/2]
		mustCreate(t, pod(ns, fmt.Sprintf("g-%d", i), name, "2").Group("g").MinAvailable("4").NodeSelector(map[string]string{nodeLabel: n}))
	}
	waitPods(t, ns, "the gang bound", 60*time.Second, func(ps []v1.Pod) bool { return countBound(ps) == 4 })

	// A VM wants the first node whole; then batch's grant there goes.
	code, body, err := vm.createVM(t.Context(), "vm-big", "8", "1Gi", nodes[0])
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("asking for vm-big: %d %s %v; want 202 (pending)", code, body, err)
	}
	a.revoke(t, "batch."+nodes[0])

	if evict {
		// The whole gang is evicted: every member Terminating, on both
		// nodes.
		waitPods(t, ns, "every gang member evicted (Terminating)", 60*time.Second, func(ps []v1.Pod) bool {
			for _, p := range ps {
				if p.DeletionTimestamp == nil {
					return false
				}
			}
			return len(ps) == 4
		})
	}
	// Running or terminating, the gang's pods are in use: vm-big must not
	// start.
	stays(t, 5*time.Second, "vm-big waits while the gang's pods are there", func(ctx context.Context) (bool, string) {
		if !evict {
			for _, p := range listPods(t, ns) {
				if p.DeletionTimestamp != nil {
					return false, "pod " + p.Name + " was evicted with evictOnRevoke false"
				}
			}
		}
		vms, err := vm.vms(ctx)
		if err != nil {
			return true, err.Error()
		}
		for _, v := range vms {
			if v.Name == "vm-big" && v.Phase == "Running" {
				return false, fmt.Sprintf("vm-big runs on %s beside the gang's terminating pods %s", v.Host, placements(listPods(t, ns)))
			}
		}
		return true, ""
	})

	// The pods go (as a kubelet would confirm): the VM starts there.
	gone := time.Now()
	for i := range 4 {
		if err := cp.Client.CoreV1().Pods(ns).Delete(t.Context(), fmt.Sprintf("g-%d", i), deleteNow); err != nil {
			t.Fatal(err)
		}
	}
	var last []vmInfo
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if last, err = vm.vms(ctx); err != nil {
			return false, nil
		}
		for _, v := range last {
			if v.Name == "vm-big" && v.Phase == "Running" {
				return v.Host == nodes[0], nil
			}
		}
		return false, nil
	})
	if err != nil {
		gs, _ := a.grants(context.Background())
		t.Fatalf("vm-big never started on %s once the gang was gone: %v; VMs %+v; grants:\n%s", nodes[0], err, last, describeGrants(gs))
	}
	t.Logf("vm-big started %s after the gang's pods were deleted", time.Since(gone).Round(100*time.Millisecond))
	if l, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("pods left: %v %v", l, err)
	}
}
