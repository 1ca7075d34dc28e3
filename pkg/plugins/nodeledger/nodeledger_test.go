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

package nodeledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger/ledgertest"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type res = map[v1.ResourceName]string

const sharedLabel = "shared"

func node(name string, shared bool) *v1.Node {
	w := st.MakeNode().Name(name).Capacity(res{"cpu": "8", "memory": "32Gi", "pods": "110"})
	if shared {
		w = w.Label(sharedLabel, "vms")
	}
	return w.Obj()
}

func pod(name, scheduler, node, cpu string) *v1.Pod {
	return st.MakePod().Namespace("ns").Name(name).UID(name).Scheduler(scheduler).Node(node).Req(res{"cpu": cpu}).Obj()
}

// fixture is the plugin over a fake clientset and a fake ledger store,
// its informers synced; its release loop is not started (tests call
// tick).
type fixture struct {
	pl     *NodeLedger
	h      *testutil.Handle
	store  *ledgertest.Client
	ledger func(node string) *v1alpha1.NodeLedger
}

func newFixture(t *testing.T, objs ...*v1.Pod) *fixture {
	t.Helper()
	h := testutil.NewHandle(node("n1", true), node("n2", false))
	for _, p := range objs {
		if _, err := h.Client.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	store := ledgertest.NewClient()
	a := Args{NodeSelector: sharedLabel + "=vms", Placer: DefaultPlacer, ReleaseInterval: metav1.Duration{Duration: time.Hour}}
	sel, err := labels.Parse(a.NodeSelector)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := build(t.Context(), a, sel, h, func() (ledger.Client, error) { return store, nil }, false)
	if err != nil {
		t.Fatal(err)
	}
	h.SharedInformerFactory().Start(t.Context().Done())
	for typ, ok := range h.SharedInformerFactory().WaitForCacheSync(t.Context().Done()) {
		if !ok {
			t.Fatalf("informer of %v never synced", typ)
		}
	}
	return &fixture{pl: pl, h: h, store: store, ledger: func(name string) *v1alpha1.NodeLedger {
		l, err := store.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return l
	}}
}

// place runs Reserve and Bind for a pending copy of p on nodeName.
func (f *fixture) place(t *testing.T, p *v1.Pod, nodeName string) *framework.Status {
	t.Helper()
	pending := p.DeepCopy()
	pending.Spec.NodeName = ""
	if _, err := f.h.Client.CoreV1().Pods(p.Namespace).Create(t.Context(), pending, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	f.waitPod(t, p.Name, func(*v1.Pod) bool { return true })
	if st := f.pl.Reserve(t.Context(), nil, pending, nodeName); !st.IsSuccess() {
		t.Fatalf("Reserve: %v", st)
	}
	return f.pl.Bind(t.Context(), nil, pending, nodeName)
}

// waitPod waits until the plugin's informer has pod name in a state cond
// accepts (nil: deleted).
func (f *fixture) waitPod(t *testing.T, name string, cond func(*v1.Pod) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		obj, ok, _ := f.pl.p.pods.GetByKey("ns/" + name)
		if !ok {
			return cond == nil, nil
		}
		return cond != nil && cond(obj.(*v1.Pod)), nil
	})
	if err != nil {
		t.Fatalf("the informer never showed pod %s as wanted: %v", name, err)
	}
}

func entryNames(l *v1alpha1.NodeLedger) []string {
	var out []string
	if l == nil {
		return out
	}
	for _, e := range l.Spec.Entries {
		out = append(out, e.Placer+":"+e.Name)
	}
	return out
}

func TestBindCommitsOnSharedNodesOnly(t *testing.T) {
	f := newFixture(t,
		pod("running", "batch-scheduler", "n1", "2"),
		pod("foreign", "other", "n1", "1"))

	// A node the selector leaves out costs no API call.
	if st := f.place(t, pod("elsewhere", "batch-scheduler", "", "1"), "n2"); st.Code() != framework.Skip {
		t.Fatalf("Bind on a node that is not shared = %v, want Skip", st)
	}
	if w := f.store.Writes.Load(); w != 0 {
		t.Fatalf("%d ledger writes for a pod on a node that is not shared", w)
	}

	// The first bind on n1 joins its ledger, records this scheduler's
	// running pod, and commits the pod.
	if st := f.place(t, pod("p", "batch-scheduler", "", "3"), "n1"); st.Code() != framework.Skip {
		t.Fatalf("Bind on a shared node = %v, want Skip after the commit", st)
	}
	l := f.ledger("n1")
	if !ledger.Joined(l, DefaultPlacer) {
		t.Fatalf("ledger of n1 = %+v, want batch-scheduler joined", l)
	}
	if got := strings.Join(entryNames(l), " "); got != "batch-scheduler:running batch-scheduler:p" && got != "batch-scheduler:p batch-scheduler:running" {
		t.Errorf("entries = %q, want the running pod and p (not the other scheduler's pod)", got)
	}

	// Another placer takes 2 cpu: 3 + 2 recorded, 1 foreign, 2 of the VM
	// leave nothing for a pod of 1 cpu. The bind fails as a conflict.
	vm := l.DeepCopy()
	ledger.Put(vm, v1alpha1.LedgerEntry{Placer: "vm-manager", Kind: "vm", Name: "vm-1",
		Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}})
	f.store.Put(vm)
	st := f.place(t, pod("q", "batch-scheduler", "", "1"), "n1")
	if err := st.AsError(); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "cpu short") {
		t.Fatalf("Bind of a pod the ledger has no room for = %v, want a conflict saying cpu is short", st)
	}
	if e := ledger.Find(f.ledger("n1"), ledger.Key{Kind: v1alpha1.LedgerEntryKindPod, Namespace: "ns", Name: "q"}); e != nil {
		t.Errorf("the refused pod was recorded: %+v", e)
	}
	f.pl.Unreserve(t.Context(), nil, pod("q", "batch-scheduler", "", "1"), "n1")

	// The running pod finishes: its entry is released, and q fits.
	running := pod("running", "batch-scheduler", "n1", "2")
	running.Status.Phase = v1.PodSucceeded
	if _, err := f.h.Client.CoreV1().Pods("ns").UpdateStatus(t.Context(), running, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitPod(t, "running", framework.PodFinished)
	f.pl.p.tick(t.Context())
	if got := entryNames(f.ledger("n1")); len(got) != 2 {
		t.Errorf("entries after the running pod finished = %v, want p and vm-1", got)
	}
	if st := f.place(t, pod("q", "batch-scheduler", "", "1"), "n1"); st.Code() != framework.Skip {
		t.Fatalf("Bind of q once room freed = %v, want Skip", st)
	}
	// A failed bind (Unreserve) releases the entry at once.
	f.pl.Unreserve(t.Context(), nil, pod("q", "batch-scheduler", "", "1"), "n1")
	if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ledger.Find(f.ledger("n1"), ledger.Key{Kind: v1alpha1.LedgerEntryKindPod, Namespace: "ns", Name: "q"}) == nil, nil
	}); err != nil {
		t.Errorf("q's entry outlived its Unreserve: %v", entryNames(f.ledger("n1")))
	}
}

// A node that becomes shared while a bind to it is in flight: the bind
// skipped the ledger, and the join records the pod, so the VM manager
// (which waits for the join) counts it.
func TestJoinRecordsBindsInFlight(t *testing.T) {
	f := newFixture(t)
	p := pod("inflight", "batch-scheduler", "", "2")
	if st := f.place(t, p, "n2"); st.Code() != framework.Skip {
		t.Fatalf("Bind on n2 before it is shared = %v", st)
	}
	n2 := node("n2", true)
	if _, err := f.h.Client.CoreV1().Nodes().Update(t.Context(), n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return f.pl.p.shared("n2"), nil
	}); err != nil {
		t.Fatal("n2 never shared")
	}
	f.pl.p.tick(t.Context())
	l := f.ledger("n2")
	if !ledger.Joined(l, DefaultPlacer) || ledger.Find(l, ledger.Key{Kind: v1alpha1.LedgerEntryKindPod, Namespace: "ns", Name: "inflight"}) == nil {
		t.Fatalf("ledger of n2 after the join = %+v, want batch-scheduler joined and the pod in flight recorded", l)
	}
	// The bind lands: the pod stays recorded (it is bound there now).
	bound := p.DeepCopy()
	bound.Spec.NodeName = "n2"
	if _, err := f.h.Client.CoreV1().Pods("ns").Update(t.Context(), bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitPod(t, "inflight", func(p *v1.Pod) bool { return p.Spec.NodeName == "n2" })
	f.pl.p.tick(t.Context())
	if ledger.Find(f.ledger("n2"), ledger.Key{Kind: v1alpha1.LedgerEntryKindPod, Namespace: "ns", Name: "inflight"}) == nil {
		t.Errorf("the bound pod's entry was released: %v", entryNames(f.ledger("n2")))
	}
	// Deleted: released.
	if err := f.h.Client.CoreV1().Pods("ns").Delete(t.Context(), "inflight", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitPod(t, "inflight", nil)
	f.pl.p.tick(t.Context())
	if got := entryNames(f.ledger("n2")); len(got) != 0 {
		t.Errorf("entries after the pod was deleted = %v, want none", got)
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		args, want string
	}{
		{"", "nodeSelector: required"},
		{"nodeSelector: 'a in (b'", "nodeSelector"},
		{"nodeSelector: shared=vms\nplacer: Not_A_Name", "placer"},
		{"nodeSelector: shared=vms\nreleaseInterval: -1s", "releaseInterval"},
		{"nodeSelector: shared=vms\nbogus: 1", "bogus"},
		{"nodeSelector: shared=vms\nreleaseInterval: 2s", ""},
	}
	for _, tt := range tests {
		a, _, err := decodeArgs(configapi.NewRawArgs("", []byte(tt.args)))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("args %q: %v", tt.args, err)
		case tt.want == "" && (a.Placer != DefaultPlacer || a.ReleaseInterval.Duration != 2*time.Second):
			t.Errorf("args %q decoded to %+v", tt.args, a)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), Name+" args")):
			t.Errorf("args %q: error %v, want one naming %q", tt.args, err, tt.want)
		}
	}
	if _, err := New(t.Context(), configapi.NewRawArgs("", []byte("nodeSelector: shared=vms")), nil); err == nil || errors.Is(err, nil) {
		t.Errorf("New without a handle = %v, want an error", err)
	}
}
