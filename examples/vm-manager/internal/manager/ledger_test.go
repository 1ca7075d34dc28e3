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

package manager

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
)

// ledgerEdit is a change another placer (batch-scheduler) made to a
// node's ledger before the test.
type ledgerEdit struct {
	node string
	// hidden edits have not reached the manager's informer yet.
	hidden bool
	change func(*v1alpha1.NodeLedger)
}

func TestLedgerPlacement(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*v1.Node
		pods  []*v1.Pod
		edits []ledgerEdit
		req   CreateRequest
		// wantHost is where the VM must land; empty means refused with
		// wantReason and a message containing wantMessage.
		wantHost    string
		wantReason  string
		wantMessage string
		// wantEntries are the entries of the ledger of node wantLedger
		// afterwards.
		wantLedger  string
		wantEntries []string
	}{
		{
			name:        "refused while batch-scheduler has not joined",
			nodes:       []*v1.Node{makeNode("node-1", "8", "16Gi")},
			edits:       []ledgerEdit{{node: "node-1", change: joined("someone-else")}},
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi", Host: "node-1"},
			wantReason:  ReasonLedgerNotJoined,
			wantMessage: "node-1: batch-scheduler has not joined its ledger",
			wantLedger:  "node-1",
		},
		{
			name:        "refused where no ledger exists",
			nodes:       []*v1.Node{makeNode("node-1", "8", "16Gi")},
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi"},
			wantReason:  ReasonNoHostFits,
			wantMessage: "node-1: batch-scheduler has not joined its ledger",
		},
		{
			name:        "fits: committed, and the manager joins too",
			nodes:       []*v1.Node{makeNode("node-1", "8", "16Gi")},
			edits:       []ledgerEdit{{node: "node-1", change: joined("batch-scheduler")}},
			req:         CreateRequest{Name: "vm", CPU: "2", Memory: "4Gi"},
			wantHost:    "node-1",
			wantLedger:  "node-1",
			wantEntries: []string{"vm /vm"},
		},
		{
			name:  "pod entries take room",
			nodes: []*v1.Node{makeNode("node-1", "8", "16Gi")},
			edits: []ledgerEdit{{node: "node-1", change: func(l *v1alpha1.NodeLedger) {
				joined("batch-scheduler")(l)
				withEntries(podEntry("p", "u-p", "7", "1Gi"))(l)
			}}},
			req:         CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi", Host: "node-1"},
			wantReason:  ReasonInsufficientCapacity,
			wantMessage: "node-1: cpu 2 requested, 1 free (ledger entries use 7: pods 7, VMs 0; pods not in the ledger 0; of 8)",
			wantLedger:  "node-1",
			wantEntries: []string{"Pod default/p"},
		},
		{
			name:  "bound pods outside the ledger count, and those it records count once",
			nodes: []*v1.Node{makeNode("node-1", "8", "16Gi")},
			pods: []*v1.Pod{withUID(makePod("p1", "node-1", "3", "1Gi", v1.PodRunning), "u1"),
				withUID(makePod("p2", "node-1", "2", "1Gi", v1.PodRunning), "u2")},
			edits: []ledgerEdit{{node: "node-1", change: func(l *v1alpha1.NodeLedger) {
				joined("batch-scheduler")(l)
				withEntries(podEntry("p1", "u1", "3", "1Gi"))(l)
			}}},
			req:         CreateRequest{Name: "vm", CPU: "4", Memory: "1Gi", Host: "node-1"},
			wantReason:  ReasonInsufficientCapacity,
			wantMessage: "node-1: cpu 4 requested, 3 free (ledger entries use 3: pods 3, VMs 0; pods not in the ledger 2; of 8)",
		},
		{
			name:  "a VM that fits exactly next to pods in and out of the ledger",
			nodes: []*v1.Node{makeNode("node-1", "8", "16Gi")},
			pods: []*v1.Pod{withUID(makePod("p1", "node-1", "3", "1Gi", v1.PodRunning), "u1"),
				withUID(makePod("p2", "node-1", "2", "1Gi", v1.PodRunning), "u2")},
			edits: []ledgerEdit{{node: "node-1", change: func(l *v1alpha1.NodeLedger) {
				joined("batch-scheduler")(l)
				withEntries(podEntry("p1", "u1", "3", "1Gi"))(l)
			}}},
			req:         CreateRequest{Name: "vm", CPU: "3", Memory: "1Gi", Host: "node-1"},
			wantHost:    "node-1",
			wantLedger:  "node-1",
			wantEntries: []string{"Pod default/p1", "vm /vm"},
		},
		{
			name:  "a stale view: the first host's ledger refuses, the next one takes the VM",
			nodes: []*v1.Node{makeNode("node-a", "4", "16Gi"), makeNode("node-b", "4", "16Gi")},
			edits: []ledgerEdit{
				{node: "node-a", change: joined("batch-scheduler")},
				{node: "node-b", change: joined("batch-scheduler")},
				{node: "node-a", hidden: true, change: withEntries(podEntry("p", "u-p", "3", "1Gi"))},
			},
			req:         CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi"},
			wantHost:    "node-b",
			wantLedger:  "node-a",
			wantEntries: []string{"Pod default/p"},
		},
		{
			name:        "a stale view of the requested host: batch-scheduler joined, unseen by the informer",
			nodes:       []*v1.Node{makeNode("node-1", "4", "16Gi")},
			edits:       []ledgerEdit{{node: "node-1", hidden: true, change: joined("batch-scheduler")}},
			req:         CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi", Host: "node-1"},
			wantHost:    "node-1",
			wantLedger:  "node-1",
			wantEntries: []string{"vm /vm"},
		},
		{
			name:  "a stale view of the requested host: a pod's entry left, unseen by the informer",
			nodes: []*v1.Node{makeNode("node-1", "4", "16Gi")},
			edits: []ledgerEdit{
				{node: "node-1", change: func(l *v1alpha1.NodeLedger) {
					joined("batch-scheduler")(l)
					withEntries(podEntry("p", "u-p", "3", "1Gi"))(l)
				}},
				{node: "node-1", hidden: true, change: func(l *v1alpha1.NodeLedger) {
					ledger.RemoveIf(l, func(*v1alpha1.LedgerEntry) bool { return true })
				}},
			},
			req:         CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi", Host: "node-1"},
			wantHost:    "node-1",
			wantLedger:  "node-1",
			wantEntries: []string{"vm /vm"},
		},
		{
			name:  "a stale view, every host refuses: each host's reason is listed",
			nodes: []*v1.Node{makeNode("node-a", "4", "16Gi"), makeNode("node-b", "4", "16Gi")},
			edits: []ledgerEdit{
				{node: "node-a", change: joined("batch-scheduler")},
				{node: "node-b", change: joined("batch-scheduler")},
				{node: "node-a", hidden: true, change: withEntries(podEntry("p", "u-p", "3", "1Gi"))},
				{node: "node-b", hidden: true, change: withEntries(podEntry("q", "u-q", "3", "1Gi"))},
			},
			req:        CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi"},
			wantReason: ReasonNoHostFits,
			wantMessage: "no host fits cpu 2, memory 1Gi: node-a: cpu 2 requested, 1 free (ledger entries use 3: pods 3, VMs 0; pods not in the ledger 0; of 4); " +
				"node-b: cpu 2 requested, 1 free",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLedgerFixture(t)
			f.addNodes(t, tc.nodes...)
			f.addPods(t, tc.pods...)
			for _, e := range tc.edits {
				if e.hidden {
					f.api.editHidden(e.node, e.change)
				} else {
					f.api.edit(e.node, e.change)
				}
			}
			// The VM's ExternalWorkload must not be published before its
			// entry is written.
			var publishedEarly atomic.Bool
			f.api.beforeWrite = func(*v1alpha1.NodeLedger) {
				if _, ok := f.store.Get("", tc.req.Name); ok {
					publishedEarly.Store(true)
				}
			}
			vm, err := f.m.Create(tc.req)
			if publishedEarly.Load() {
				t.Error("the VM was published before its ledger entry was written")
			}
			if tc.wantHost != "" {
				if err != nil {
					t.Fatalf("Create: %v; want placed on %s", err, tc.wantHost)
				}
				if vm.Host != tc.wantHost || vm.Phase != PhaseRunning {
					t.Errorf("placed on %q, phase %s; want Running on %s", vm.Host, vm.Phase, tc.wantHost)
				}
				if host, ok := f.published(t, tc.req.Name); !ok || host != tc.wantHost {
					t.Errorf("ExternalWorkload on %q (published %v); want on %s", host, ok, tc.wantHost)
				}
				l := f.api.ledger(tc.wantHost)
				if e := ledger.Find(l, ledger.Key{Kind: WorkloadKind, Name: tc.req.Name}); e == nil || e.Placer != DefaultLedgerPlacer ||
					e.Resources.Cpu().Cmp(vm.CPU) != 0 || e.Resources.Memory().Cmp(vm.Memory) != 0 {
					t.Errorf("the VM's entry on %s: %+v; want vm-manager's, with the VM's cpu and memory", tc.wantHost, e)
				}
				if !ledger.Joined(l, DefaultLedgerPlacer) || !ledger.Joined(l, DefaultLedgerRequire) {
					t.Errorf("placers of %s's ledger: %+v; want batch-scheduler and vm-manager", tc.wantHost, l.Spec.Placers)
				}
			} else {
				var refused *RefusedError
				if !errors.As(err, &refused) {
					t.Fatalf("Create: %v (VM %+v); want refused", err, vm)
				}
				if refused.Reason != tc.wantReason || !strings.Contains(refused.Message, tc.wantMessage) {
					t.Errorf("refused with %s %q;\nwant %s containing %q", refused.Reason, refused.Message, tc.wantReason, tc.wantMessage)
				}
				if _, ok := f.m.Get(tc.req.Name); ok {
					t.Error("the refused VM is kept")
				}
				if _, ok := f.store.Get("", tc.req.Name); ok {
					t.Error("the refused VM is published")
				}
			}
			if tc.wantLedger != "" {
				if got := entryNames(f.api.ledger(tc.wantLedger)); !slices.Equal(got, tc.wantEntries) {
					t.Errorf("entries of %s: %q; want %q", tc.wantLedger, got, tc.wantEntries)
				}
			}
		})
	}
}

// A placement racing with batch-scheduler's: between the manager's read
// of the ledger and its write, a pod entry is committed. The write
// conflicts, the VM is checked again against the ledger with the pod, and
// it no longer fits there.
func TestLedgerRacingCommit(t *testing.T) {
	tests := []struct {
		name     string
		host     string
		wantHost string
	}{
		{name: "requested host: refused", host: "node-1"},
		{name: "first fit: the next host", wantHost: "node-2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLedgerFixture(t)
			f.addNodes(t, makeNode("node-1", "4", "16Gi"), makeNode("node-2", "4", "16Gi"))
			f.api.edit("node-1", joined("batch-scheduler"))
			f.api.edit("node-2", joined("batch-scheduler"))
			var raced atomic.Bool
			f.api.beforeWrite = func(l *v1alpha1.NodeLedger) {
				if l.Name == "node-1" && raced.CompareAndSwap(false, true) {
					f.api.edit("node-1", withEntries(podEntry("racer", "u-racer", "3", "1Gi")))
				}
			}
			vm, err := f.m.Create(CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi", Host: tc.host})
			if !raced.Load() {
				t.Fatal("the racing write was not injected")
			}
			if got, want := entryNames(f.api.ledger("node-1")), []string{"Pod default/racer"}; !slices.Equal(got, want) {
				t.Errorf("entries of node-1: %q; want %q: the VM must not be committed next to the racing pod", got, want)
			}
			if tc.wantHost == "" {
				var refused *RefusedError
				if !errors.As(err, &refused) || refused.Reason != ReasonInsufficientCapacity ||
					!strings.Contains(refused.Message, "node-1: cpu 2 requested, 1 free (ledger entries use 3: pods 3") {
					t.Fatalf("Create: %+v, %v; want refused for insufficient capacity, naming the racing pod's 3 cpu", vm, err)
				}
				if _, ok := f.store.Get("", "vm"); ok {
					t.Error("the refused VM is published")
				}
				return
			}
			if err != nil || vm.Host != tc.wantHost {
				t.Fatalf("Create: %+v, %v; want placed on %s", vm, err, tc.wantHost)
			}
			if got := entryNames(f.api.ledger(tc.wantHost)); !slices.Equal(got, []string{"vm /vm"}) {
				t.Errorf("entries of %s: %q; want the VM's", tc.wantHost, got)
			}
		})
	}
}

// Concurrent Creates on one small host: the ledger lets exactly as many
// VMs in as fit, whatever the interleaving.
func TestLedgerConcurrentCreates(t *testing.T) {
	f := newLedgerFixture(t)
	f.addNodes(t, makeNode("node-1", "4", "16Gi"))
	f.api.edit("node-1", joined("batch-scheduler"))
	names := []string{"vm-a", "vm-b", "vm-c", "vm-d", "vm-e", "vm-f"}
	errs := make(chan error, len(names))
	for _, name := range names {
		go func() {
			_, err := f.m.Create(CreateRequest{Name: name, CPU: "1", Memory: "1Gi", Host: "node-1"})
			errs <- err
		}()
	}
	placed := 0
	for range names {
		err := <-errs
		var refused *RefusedError
		switch {
		case err == nil:
			placed++
		case errors.As(err, &refused) && refused.Reason == ReasonInsufficientCapacity:
		default:
			t.Errorf("Create: %v; want placed or refused for capacity", err)
		}
	}
	l := f.api.ledger("node-1")
	if placed != 4 || len(l.Spec.Entries) != 4 {
		t.Errorf("%d VMs placed, %d entries (%q); want 4 of each on a 4-cpu host", placed, len(l.Spec.Entries), entryNames(l))
	}
}

// When the ledger cannot be written, the VM is refused with 503 and
// nothing is kept.
func TestLedgerUnavailable(t *testing.T) {
	f := newLedgerFixture(t)
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	f.api.edit("node-1", joined("batch-scheduler"))
	f.api.setErr(apierrors.NewServiceUnavailable("etcd is down"))
	srv := newServer(t, f.fixture)
	code, body := call(t, srv, "POST", "/vms", `{"name":"vm-a","cpu":"1","memory":"1Gi"}`)
	var eb ErrorBody
	if code != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &eb) != nil || eb.Reason != ReasonLedgerUnavailable ||
		!strings.Contains(eb.Error, "VM vm-a not placed: node-1: the placement could not be committed to the node's ledger") ||
		!strings.Contains(eb.Error, "etcd is down") {
		t.Errorf("POST /vms with the ledger unavailable: %d %s; want 503 %s naming the node and the cause", code, body, ReasonLedgerUnavailable)
	}
	if _, ok := f.m.Get("vm-a"); ok {
		t.Error("the VM is kept")
	}
	if _, ok := f.store.Get("", "vm-a"); ok {
		t.Error("the VM is published")
	}
	if n := testutil.ToFloat64(f.m.cfg.Metrics.LedgerCommits.WithLabelValues(CommitFailed)); n != 1 {
		t.Errorf("ledger_commits_total{result=failed} = %v, want 1", n)
	}
}

func TestLedgerDeleteRemovesEntry(t *testing.T) {
	f := newLedgerFixture(t)
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	f.api.edit("node-1", joined("batch-scheduler"))
	for _, name := range []string{"vm-a", "vm-b"} {
		if _, err := f.m.Create(CreateRequest{Name: name, CPU: "1", Memory: "1Gi"}); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	if _, err := f.m.Delete("vm-a"); err != nil {
		t.Fatal(err)
	}
	if got := entryNames(f.api.ledger("node-1")); !slices.Equal(got, []string{"vm /vm-b"}) {
		t.Errorf("entries after deleting vm-a: %q; want vm-b's only", got)
	}
	if _, ok := f.store.Get("", "vm-a"); ok {
		t.Error("vm-a is still published")
	}

	// The API server is down while vm-b is deleted: the VM is gone, its
	// entry stays, and a reconcile once the API server is back removes it.
	f.api.setErr(apierrors.NewServiceUnavailable("down"))
	if _, err := f.m.Delete("vm-b"); err != nil {
		t.Fatalf("deleting vm-b with the ledger unreachable: %v; want it deleted, its entry left for later", err)
	}
	if got := entryNames(f.api.ledger("node-1")); !slices.Equal(got, []string{"vm /vm-b"}) {
		t.Fatalf("entries: %q; want vm-b's still there", got)
	}
	f.api.setErr(nil)
	f.m.Reconcile(context.Background())
	if got := entryNames(f.api.ledger("node-1")); len(got) != 0 {
		t.Errorf("entries after the reconcile: %q; want none", got)
	}
	if n := testutil.ToFloat64(f.m.cfg.Metrics.LedgerEntriesRemoved.WithLabelValues(WorkloadKind)); n != 2 {
		t.Errorf("ledger_entries_removed_total{kind=vm} = %v, want 2", n)
	}
}

// After a restart, the sweep releases the entry of a placement that was
// committed but never saved, and records a Running VM the ledger lacks.
func TestLedgerSweepOwnEntries(t *testing.T) {
	state := &memState{vms: []VM{runningVM("vm-a", "node-1", "1", "1Gi")}}
	f := newLedgerFixture(t, withState(state))
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	f.api.edit("node-1", func(l *v1alpha1.NodeLedger) {
		joined("batch-scheduler", DefaultLedgerPlacer)(l)
		withEntries(vmEntry("vm-crashed", "2", "2Gi"), podEntry("p", "u-p", "1", "1Gi"))(l)
	})
	f.addPods(t, withUID(makePod("p", "node-1", "1", "1Gi", v1.PodRunning), "u-p"))
	f.m.Reconcile(context.Background())
	if got, want := entryNames(f.api.ledger("node-1")), []string{"Pod default/p", "vm /vm-a"}; !slices.Equal(got, want) {
		t.Errorf("entries after the sweep: %q; want %q", got, want)
	}
	if n := f.podGets(); n != 0 {
		t.Errorf("%d GETs of pods; want none for a pod the informer shows bound to its node", n)
	}
}

func TestLedgerPrunesGonePods(t *testing.T) {
	f := newLedgerFixture(t)
	f.addNodes(t, makeNode("node-1", "16", "32Gi"))
	// What the informer shows: one pod bound here.
	f.addPods(t, withUID(makePod("bound", "node-1", "1", "1Gi", v1.PodRunning), "u-bound"))
	// What the API server has.
	for _, p := range []*v1.Pod{
		withUID(makePod("bound", "node-1", "1", "1Gi", v1.PodRunning), "u-bound"),
		withUID(makePod("pending", "", "1", "1Gi", v1.PodPending), "u-pending"),
		withUID(makePod("lagging", "node-1", "1", "1Gi", v1.PodRunning), "u-lagging"),
		withUID(makePod("replaced", "node-1", "1", "1Gi", v1.PodRunning), "u-new"),
		withUID(makePod("finished", "node-1", "1", "1Gi", v1.PodSucceeded), "u-finished"),
		withUID(makePod("elsewhere", "node-2", "1", "1Gi", v1.PodRunning), "u-elsewhere"),
		withUID(makePod("unreadable", "", "1", "1Gi", v1.PodPending), "u-unreadable"),
	} {
		if err := f.podAPI.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	f.failPodGets("unreadable", apierrors.NewTooManyRequests("slow down", 1))
	f.api.edit("node-1", func(l *v1alpha1.NodeLedger) {
		joined("batch-scheduler", DefaultLedgerPlacer)(l)
		withEntries(
			podEntry("bound", "u-bound", "1", "1Gi"),
			podEntry("pending", "u-pending", "1", "1Gi"),
			podEntry("lagging", "u-lagging", "1", "1Gi"),
			podEntry("replaced", "u-old", "1", "1Gi"),
			podEntry("finished", "u-finished", "1", "1Gi"),
			podEntry("elsewhere", "u-elsewhere", "1", "1Gi"),
			podEntry("deleted", "u-deleted", "1", "1Gi"),
			podEntry("unreadable", "u-unreadable", "1", "1Gi"),
		)(l)
	})
	kept := []string{"Pod default/bound", "Pod default/pending", "Pod default/lagging", "Pod default/unreadable"}

	f.m.Reconcile(context.Background())
	if got := entryNames(f.api.ledger("node-1")); !slices.Equal(got, kept) {
		t.Errorf("entries after the sweep: %q;\nwant %q", got, kept)
	}
	// Every entry but the bound pod's was read once.
	if n := f.podGets(); n != 7 {
		t.Errorf("%d GETs of pods; want 7 (none for the pod the informer shows bound)", n)
	}
	if n := testutil.ToFloat64(f.m.cfg.Metrics.LedgerEntriesRemoved.WithLabelValues(v1alpha1.LedgerEntryKindPod)); n != 4 {
		t.Errorf("ledger_entries_removed_total{kind=Pod} = %v, want 4", n)
	}

	// At once again: no pod is read again.
	f.m.Reconcile(context.Background())
	if n := f.podGets(); n != 7 {
		t.Errorf("%d GETs of pods after a second sweep at once; want still 7", n)
	}
	// Later, the kept ones are read again; the pending pod is deleted
	// meanwhile, and its entry goes.
	if err := f.podAPI.Tracker().Delete(v1.SchemeGroupVersion.WithResource("pods"), "default", "pending"); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(DefaultPodRecheck)
	f.m.Reconcile(context.Background())
	if n := f.podGets(); n != 10 {
		t.Errorf("%d GETs of pods after PodRecheck; want 10 (the 3 kept entries the informer does not show)", n)
	}
	want := []string{"Pod default/bound", "Pod default/lagging", "Pod default/unreadable"}
	if got := entryNames(f.api.ledger("node-1")); !slices.Equal(got, want) {
		t.Errorf("entries after the pending pod was deleted: %q; want %q", got, want)
	}
}

// Pod entries of ledgers this manager has not joined are none of its
// business.
func TestLedgerSweepLeavesOtherLedgers(t *testing.T) {
	f := newLedgerFixture(t, func(_ *fixture, cfg *Config) {
		cfg.HostSelector = labels.SelectorFromSet(labels.Set{"vms": "true"})
	})
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	f.api.edit("node-1", func(l *v1alpha1.NodeLedger) {
		joined("batch-scheduler")(l)
		withEntries(podEntry("deleted", "u-deleted", "1", "1Gi"))(l)
	})
	f.m.Reconcile(context.Background())
	if got := entryNames(f.api.ledger("node-1")); len(got) != 1 || f.podGets() != 0 {
		t.Errorf("entries %q after %d GETs; want the pod entry untouched, unread", got, f.podGets())
	}
}

// Run joins the ledgers of the selected nodes in the background, retrying
// while the API server fails, and those of nodes that appear later.
func TestLedgerJoins(t *testing.T) {
	f := newLedgerFixture(t, func(_ *fixture, cfg *Config) {
		cfg.HostSelector = labels.SelectorFromSet(labels.Set{"vms": "true"})
	})
	f.addNodes(t, makeNode("node-1", "8", "16Gi", labeled("vms", "true")), makeNode("node-2", "8", "16Gi"),
		makeNode("node-3", "8", "16Gi", labeled("vms", "true")))
	f.api.edit("node-3", joined("batch-scheduler"))
	f.api.setErr(apierrors.NewServiceUnavailable("not yet"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	joinedBy := func(node string, placers ...string) bool {
		l := f.api.ledger(node)
		for _, p := range placers {
			if !ledger.Joined(l, p) {
				return false
			}
		}
		return l != nil
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return cond(), nil
		})
		if err != nil {
			t.Fatalf("waiting until %s: %v", what, err)
		}
	}
	// The joins fail, and are retried; serving is not blocked meanwhile.
	waitFor("a join was tried", func() bool { reads, _ := f.api.counts(); return reads > 0 })
	if _, err := f.m.Create(CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi", Host: "node-2"}); err == nil {
		t.Error("a VM on node-2, which the host selector does not select, was placed")
	}
	f.api.setErr(nil)
	waitFor("node-1's and node-3's ledgers list vm-manager", func() bool {
		return joinedBy("node-1", DefaultLedgerPlacer) && joinedBy("node-3", DefaultLedgerPlacer, "batch-scheduler")
	})
	if l := f.api.ledger("node-2"); l != nil {
		t.Errorf("node-2, not selected, has a ledger: %+v", l)
	}
	f.addNodes(t, makeNode("node-4", "8", "16Gi", labeled("vms", "true")))
	f.m.Kick()
	waitFor("node-4's ledger lists vm-manager", func() bool { return joinedBy("node-4", DefaultLedgerPlacer) })
}

// GET /hosts shows, in ledger mode, what each ledger records and the free
// capacity by the ledger rule.
func TestLedgerHosts(t *testing.T) {
	f := newLedgerFixture(t)
	f.addNodes(t, makeNode("node-1", "8", "16Gi"), makeNode("node-2", "8", "16Gi"))
	f.addPods(t, withUID(makePod("outside", "node-1", "1", "1Gi", v1.PodRunning), "u-outside"))
	f.api.edit("node-1", func(l *v1alpha1.NodeLedger) {
		joined("batch-scheduler")(l)
		withEntries(podEntry("p", "u-p", "3", "2Gi"))(l)
	})
	if _, err := f.m.Create(CreateRequest{Name: "vm-a", CPU: "2", Memory: "4Gi", Host: "node-1"}); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, f.fixture)
	code, body := call(t, srv, "GET", "/hosts", "")
	var hosts HostList
	if code != http.StatusOK || json.Unmarshal([]byte(body), &hosts) != nil || len(hosts.Items) != 2 {
		t.Fatalf("GET /hosts: %d %s", code, body)
	}
	h := hosts.Items[0]
	if h.Ledger == nil || !h.Ledger.Exists || h.Ledger.Entries != 2 || h.Ledger.PodEntries.Cpu().String() != "3" ||
		h.Ledger.VMEntries.Cpu().String() != "2" || h.Ledger.PodsOutside.Cpu().String() != "1" || h.Free.Cpu().String() != "2" ||
		!slices.Equal(h.Ledger.Placers, []string{"batch-scheduler", DefaultLedgerPlacer}) || len(h.Ledger.Missing) != 0 {
		t.Errorf("node-1: %s; want a ledger of 2 entries (pods 3 cpu, VMs 2), 1 cpu of pods outside it, 2 cpu free", body)
	}
	if h := hosts.Items[1]; h.Ledger == nil || h.Ledger.Exists || !slices.Equal(h.Ledger.Missing, []string{DefaultLedgerRequire}) {
		t.Errorf("node-2: %+v; want no ledger, batch-scheduler missing", h.Ledger)
	}
}

// The over-commit check counts what the ledger records: a pod committed
// but not yet bound (so not in the pod informer) counts.
func TestLedgerOvercommitReported(t *testing.T) {
	f := newLedgerFixture(t)
	f.addNodes(t, makeNode("node-1", "4", "16Gi"))
	f.api.edit("node-1", joined("batch-scheduler"))
	if _, err := f.m.Create(CreateRequest{Name: "vm-1", CPU: "2", Memory: "2Gi"}); err != nil {
		t.Fatal(err)
	}
	// A pod entry written past the check (another placer's bug, say).
	f.api.edit("node-1", withEntries(podEntry("late", "u-late", "3", "1Gi")))
	if err := f.podAPI.Tracker().Add(withUID(makePod("late", "", "3", "1Gi", v1.PodPending), "u-late")); err != nil {
		t.Fatal(err)
	}
	f.m.Reconcile(context.Background())
	if n := testutil.ToFloat64(f.m.cfg.Metrics.Overcommitted.WithLabelValues(LimitAllocatable)); n != 1 {
		t.Errorf("overcommitted_hosts{limit=allocatable} = %v, want 1", n)
	}
}

// Pending VMs (loaded from a state file) are placed through the ledgers
// too, and stay pending, saying why, while a ledger refuses them.
func TestLedgerPlacesPendingVMs(t *testing.T) {
	pending := func(name, cpu string) VM {
		return VM{Name: name, CPU: resource.MustParse(cpu), Memory: resource.MustParse("1Gi"), RequestedHost: "node-1",
			Phase: PhasePending, Created: metav1.NewTime(t0)}
	}
	state := &memState{vms: []VM{pending("vm-a", "2"), pending("vm-b", "2")}}
	f := newLedgerFixture(t, withState(state))
	f.addNodes(t, makeNode("node-1", "4", "16Gi"))
	f.api.edit("node-1", joined("batch-scheduler"))
	// The informer has not seen batch-scheduler's last commit.
	f.api.editHidden("node-1", withEntries(podEntry("p", "u-p", "1", "1Gi")))
	if err := f.podAPI.Tracker().Add(withUID(makePod("p", "", "1", "1Gi", v1.PodPending), "u-p")); err != nil {
		t.Fatal(err)
	}
	f.m.Reconcile(context.Background())
	a, b := mustGet(t, f.m, "vm-a"), mustGet(t, f.m, "vm-b")
	if a.Phase != PhaseRunning || a.Host != "node-1" {
		t.Errorf("vm-a: %+v; want Running on node-1", a)
	}
	if want := "node-1: cpu 2 requested, 1 free (ledger entries use 3: pods 1, VMs 2"; b.Phase != PhasePending || !strings.Contains(b.Message, want) {
		t.Errorf("vm-b: %+v; want Pending, saying %q", b, want)
	}
	if got, want := entryNames(f.api.ledger("node-1")), []string{"Pod default/p", "vm /vm-a"}; !slices.Equal(got, want) {
		t.Errorf("entries: %q; want %q", got, want)
	}
	if d := vmDiff(withoutMessages(f.m.List()), state.vms); d != "" {
		t.Errorf("saved VMs (-listed +saved):\n%s", d)
	}
}
