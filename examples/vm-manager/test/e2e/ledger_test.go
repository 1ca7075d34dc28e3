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
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/batch-scheduler/batch-scheduler/examples/vm-manager/internal/app"
	"github.com/batch-scheduler/batch-scheduler/examples/vm-manager/internal/manager"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// ledgerCRD is the NodeLedger CRD, from this package's directory.
var ledgerCRD = filepath.Join("..", "..", "..", "..", "deploy", "crds", "batch-scheduler.io_nodeledgers.yaml")

// poll waits up to 30s for cond, failing the test with what otherwise.
func poll(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond()
	})
	if err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

// The VM manager in ledger mode against the real API server, the test
// playing batch-scheduler: it joins the ledger of the node it selects,
// waits for batch-scheduler to join, counts batch-scheduler's committed
// pods, prunes the entry of a pod that is deleted, survives a restart from
// its state file, and removes its entries with its VMs.
func TestLedgerAgainstAPIServer(t *testing.T) {
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.InstallCRDFile(ctx, dyn, ledgerCRD); err != nil {
		t.Fatal(err)
	}
	bs, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ledgers := bs.BatchSchedulerV1alpha1().NodeLedgers()
	scheduler := ledger.New(ledgers)
	createLabeledNode(t, "ledger-1", "4", map[string]string{"e2e-ledger": "true"})
	createNode(t, "ledger-unselected", "4")

	stateFile := filepath.Join(t.TempDir(), "vms.json")
	options := func() *app.Options {
		o := app.NewOptions()
		o.Ledger, o.HostSelector, o.StateFile = true, "e2e-ledger=true", stateFile
		return o
	}
	m := start(t, options())

	getLedger := func(name string) *v1alpha1.NodeLedger {
		t.Helper()
		l, err := ledgers.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	poll(t, "the manager joins the ledger of ledger-1", func() (bool, error) {
		return ledger.Joined(getLedger("ledger-1"), manager.DefaultLedgerPlacer), nil
	})
	if l := getLedger("ledger-unselected"); l != nil {
		t.Errorf("the node the host selector leaves out has a ledger: %+v", l.Spec)
	}

	code, body := m.do(t, "POST", "/vms", `{"name":"vm-early","cpu":"1","memory":"1Gi","host":"ledger-1"}`)
	if code != http.StatusConflict || !strings.Contains(body, manager.ReasonLedgerNotJoined) ||
		!strings.Contains(body, "batch-scheduler has not joined its ledger") {
		t.Errorf("a VM before batch-scheduler joined: %d %s; want 409 %s", code, body, manager.ReasonLedgerNotJoined)
	}

	// batch-scheduler joins, and commits a pod it is about to bind: 3 of
	// the 4 cpu.
	pod, err := controlplane.CreatePod(ctx, cp.Client, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ledger-pending"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = scheduler.Commit(ctx, "ledger-1", ledger.Existing, func(l *v1alpha1.NodeLedger) error {
		ledger.Join(l, "batch-scheduler", time.Now())
		ledger.Put(l, ledger.PodEntry("batch-scheduler", pod, resources.PodRequests(pod)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Whatever the manager's informer has seen, its commit sees the pod.
	code, body = m.do(t, "POST", "/vms", `{"name":"vm-big","cpu":"2","memory":"1Gi","host":"ledger-1"}`)
	if code != http.StatusConflict || !strings.Contains(body, "ledger-1: cpu 2 requested, 1 free (ledger entries use 3: pods 3") {
		t.Errorf("a 2-cpu VM beside a committed 3-cpu pod on 4 cpu: %d %s; want 409 naming the ledger's pods", code, body)
	}
	code, body = m.do(t, "POST", "/vms", `{"name":"vm-a","cpu":"1","memory":"1Gi","host":"ledger-1"}`)
	if code != http.StatusCreated {
		t.Fatalf("a 1-cpu VM: %d %s; want 201", code, body)
	}
	if e := ledger.Find(getLedger("ledger-1"), ledger.Key{Kind: manager.WorkloadKind, Name: "vm-a"}); e == nil || e.Placer != manager.DefaultLedgerPlacer {
		t.Errorf("vm-a's ledger entry: %+v; want one of vm-manager", e)
	}

	// The pod is deleted before it is bound: the manager finds it gone
	// and removes its entry, and the room comes back.
	if err := cp.Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the deleted pod's entry is removed", func() (bool, error) {
		return ledger.Find(getLedger("ledger-1"), ledger.KeyOf(&v1alpha1.LedgerEntry{Kind: v1alpha1.LedgerEntryKindPod,
			Namespace: "default", Name: pod.Name})) == nil, nil
	})
	if code, body := m.do(t, "POST", "/vms", `{"name":"vm-b","cpu":"2","memory":"1Gi","host":"ledger-1"}`); code != http.StatusCreated {
		t.Fatalf("a 2-cpu VM once the pod is gone: %d %s; want 201", code, body)
	}

	// The manager dies and starts again from its state file: same VMs,
	// published again.
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	m = start(t, options())
	code, body = m.do(t, "GET", "/vms", "")
	var list manager.VMList
	if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Items) != 2 ||
		list.Items[0].Name != "vm-a" || list.Items[1].Name != "vm-b" || list.Items[0].Placed == nil {
		t.Fatalf("GET /vms after the restart: %d %s; want vm-a and vm-b, Running", code, body)
	}
	if ws := m.externalWorkloads(t); len(ws) != 2 || ws["vm-a"].Spec.NodeName != "ledger-1" || ws["vm-b"].Spec.NodeName != "ledger-1" {
		t.Errorf("ExternalWorkloads after the restart: %v; want vm-a and vm-b on ledger-1", ws)
	}

	for _, name := range []string{"vm-a", "vm-b"} {
		if code, body := m.do(t, "DELETE", "/vms/"+name, ""); code != http.StatusOK {
			t.Fatalf("deleting %s: %d %s", name, code, body)
		}
	}
	if l := getLedger("ledger-1"); len(l.Spec.Entries) != 0 {
		t.Errorf("entries of ledger-1 after deleting the VMs: %+v; want none", l.Spec.Entries)
	}
}
