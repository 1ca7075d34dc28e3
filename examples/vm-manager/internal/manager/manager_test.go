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
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

func TestHybridPlacement(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*v1.Node
		pods  []*v1.Pod
		// before are VMs created first, all of which must be placed.
		before []CreateRequest
		req    CreateRequest
		// wantHost is where the VM must land; empty means refused with
		// wantReason and wantMessage.
		wantHost    string
		wantReason  string
		wantMessage string
	}{
		{
			name:     "first fit in name order",
			nodes:    []*v1.Node{makeNode("node-b", "8", "16Gi"), makeNode("node-a", "8", "16Gi")},
			req:      CreateRequest{Name: "vm", CPU: "2", Memory: "4Gi"},
			wantHost: "node-a",
		},
		{
			name:     "first fit skips a host full of pods",
			nodes:    []*v1.Node{makeNode("node-a", "4", "16Gi"), makeNode("node-b", "4", "16Gi")},
			pods:     []*v1.Pod{makePod("p", "node-a", "3", "1Gi", v1.PodRunning)},
			req:      CreateRequest{Name: "vm", CPU: "2", Memory: "4Gi"},
			wantHost: "node-b",
		},
		{
			name:     "first fit counts the manager's own VMs",
			nodes:    []*v1.Node{makeNode("node-a", "4", "16Gi"), makeNode("node-b", "4", "16Gi")},
			before:   []CreateRequest{{Name: "vm-0", CPU: "3", Memory: "1Gi"}},
			req:      CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi"},
			wantHost: "node-b",
		},
		{
			name:     "terminated pods free their requests",
			nodes:    []*v1.Node{makeNode("node-a", "4", "16Gi")},
			pods:     []*v1.Pod{makePod("done", "node-a", "3", "1Gi", v1.PodSucceeded), makePod("failed", "node-a", "3", "1Gi", v1.PodFailed)},
			req:      CreateRequest{Name: "vm", CPU: "4", Memory: "1Gi"},
			wantHost: "node-a",
		},
		{
			name:     "requested host is used even if an earlier one fits",
			nodes:    []*v1.Node{makeNode("node-a", "8", "16Gi"), makeNode("node-b", "8", "16Gi")},
			req:      CreateRequest{Name: "vm", CPU: "2", Memory: "4Gi", Host: "node-b"},
			wantHost: "node-b",
		},
		{
			name:        "requested host short of cpu: the message names host, pods and VMs",
			nodes:       []*v1.Node{makeNode("node-1", "8", "16Gi")},
			pods:        []*v1.Pod{makePod("p", "node-1", "7", "1Gi", v1.PodRunning)},
			before:      []CreateRequest{{Name: "vm-0", CPU: "500m", Memory: "1Gi"}},
			req:         CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi", Host: "node-1"},
			wantReason:  ReasonInsufficientCapacity,
			wantMessage: "node-1: cpu 2 requested, 0.5 free (pods use 7, VMs use 0.5 of 8)",
		},
		{
			name:        "requested host short of memory",
			nodes:       []*v1.Node{makeNode("node-1", "8", "8Gi")},
			pods:        []*v1.Pod{makePod("p", "node-1", "1", "6Gi", v1.PodRunning)},
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "4Gi", Host: "node-1"},
			wantReason:  ReasonInsufficientCapacity,
			wantMessage: "node-1: memory 4Gi requested, 2Gi free (pods use 6Gi, VMs use 0 of 8Gi)",
		},
		{
			name:     "unschedulable and NotReady hosts are skipped",
			nodes:    []*v1.Node{makeNode("node-a", "8", "16Gi", unschedulable), makeNode("node-b", "8", "16Gi", notReady), makeNode("node-c", "8", "16Gi")},
			req:      CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi"},
			wantHost: "node-c",
		},
		{
			name:        "requested unschedulable host is refused",
			nodes:       []*v1.Node{makeNode("node-a", "8", "16Gi", unschedulable)},
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi", Host: "node-a"},
			wantReason:  ReasonHostUnusable,
			wantMessage: "node-a: unschedulable",
		},
		{
			name:        "requested unknown host is refused",
			nodes:       []*v1.Node{makeNode("node-a", "8", "16Gi")},
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi", Host: "node-x"},
			wantReason:  ReasonUnknownHost,
			wantMessage: "node-x: no such node",
		},
		{
			name:       "no host fits: every host's reason is listed",
			nodes:      []*v1.Node{makeNode("node-a", "2", "16Gi"), makeNode("node-b", "8", "16Gi", notReady)},
			req:        CreateRequest{Name: "vm", CPU: "3", Memory: "1Gi"},
			wantReason: ReasonNoHostFits,
			wantMessage: "no host fits cpu 3, memory 1Gi: node-a: cpu 3 requested, 2 free (pods use 0, VMs use 0 of 2); " +
				"node-b: not Ready (Ready is False)",
		},
		{
			name:        "no nodes",
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi"},
			wantReason:  ReasonNoHosts,
			wantMessage: "no nodes",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "")
			f.addNodes(t, tc.nodes...)
			f.addPods(t, tc.pods...)
			for _, b := range tc.before {
				if _, err := f.m.Create(b); err != nil {
					t.Fatalf("creating %s: %v", b.Name, err)
				}
			}
			vm, err := f.m.Create(tc.req)
			if tc.wantHost != "" {
				if err != nil {
					t.Fatalf("Create: %v; want placed on %s", err, tc.wantHost)
				}
				if vm.Host != tc.wantHost || vm.Phase != PhaseRunning {
					t.Errorf("placed on %q, phase %s; want %s, Running", vm.Host, vm.Phase, tc.wantHost)
				}
				if host, ok := f.published(t, tc.req.Name); !ok || host != tc.wantHost {
					t.Errorf("ExternalWorkload on %q (published %v); want on %s", host, ok, tc.wantHost)
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Create: %v (VM %+v); want refused", err, vm)
			}
			if refused.Reason != tc.wantReason || refused.Message != tc.wantMessage {
				t.Errorf("refused with %s %q;\nwant %s %q", refused.Reason, refused.Message, tc.wantReason, tc.wantMessage)
			}
			if _, ok := f.m.Get(tc.req.Name); ok {
				t.Error("the refused VM is kept")
			}
			if _, ok := f.store.Get("", tc.req.Name); ok {
				t.Error("the refused VM is published")
			}
			if n := testutil.ToFloat64(f.m.cfg.Metrics.Refusals.WithLabelValues(tc.wantReason)); n != 1 {
				t.Errorf("refusals{reason=%s} = %v, want 1", tc.wantReason, n)
			}
		})
	}
}

func TestCreateValidation(t *testing.T) {
	tests := []struct {
		req   CreateRequest
		field string
	}{
		{CreateRequest{CPU: "1", Memory: "1Gi"}, "name"},
		{CreateRequest{Name: "VM_A", CPU: "1", Memory: "1Gi"}, "name"},
		{CreateRequest{Name: "vm", Memory: "1Gi"}, "cpu"},
		{CreateRequest{Name: "vm", CPU: "two", Memory: "1Gi"}, "cpu"},
		{CreateRequest{Name: "vm", CPU: "0", Memory: "1Gi"}, "cpu"},
		{CreateRequest{Name: "vm", CPU: "0.0001", Memory: "1Gi"}, "cpu"},
		{CreateRequest{Name: "vm", CPU: "1", Memory: "-1Gi"}, "memory"},
		{CreateRequest{Name: "vm", CPU: "1"}, "memory"},
		{CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi", Host: "Node_1"}, "host"},
	}
	f := newFixture(t, "")
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	for _, tc := range tests {
		_, err := f.m.Create(tc.req)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Create(%+v) = %v; want an error on field %s", tc.req, err, tc.field)
		}
	}
	if len(f.m.List()) != 0 {
		t.Errorf("invalid VMs were kept: %+v", f.m.List())
	}
}

func TestDuplicateAndDelete(t *testing.T) {
	f := newFixture(t, "")
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	if _, err := f.m.Create(CreateRequest{Name: "vm-a", CPU: "1", Memory: "1Gi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Create(CreateRequest{Name: "vm-a", CPU: "1", Memory: "1Gi"}); !errors.Is(err, ErrExists) {
		t.Errorf("second create: %v, want ErrExists", err)
	}
	if _, err := f.m.Delete("vm-b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting an unknown VM: %v, want ErrNotFound", err)
	}
	if _, err := f.m.Delete("vm-a"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.store.Get("", "vm-a"); ok {
		t.Error("the deleted VM's ExternalWorkload is still published")
	}
	if n := testutil.ToFloat64(f.m.cfg.Metrics.VMs.WithLabelValues(string(PhaseRunning))); n != 0 {
		t.Errorf("vms{phase=Running} = %v after the delete, want 0", n)
	}
}

func TestTwoLevelGrantLimits(t *testing.T) {
	later := t0.Add(time.Hour)
	earlier := t0.Add(-time.Second)
	tests := []struct {
		name        string
		grants      []*v1alpha1.Grant
		pods        []*v1.Pod
		req         CreateRequest
		wantHost    string
		wantMessage string
	}{
		{
			name:     "placed inside the grant",
			grants:   []*v1alpha1.Grant{makeGrant("g1", "vms", "node-b", "2", "4Gi", v1alpha1.GrantActive, &later)},
			req:      CreateRequest{Name: "vm", CPU: "2", Memory: "4Gi"},
			wantHost: "node-b",
		},
		{
			name: "grants on one host add up",
			grants: []*v1alpha1.Grant{makeGrant("g1", "vms", "node-a", "1", "2Gi", "", nil),
				makeGrant("g2", "vms", "node-a", "1", "2Gi", v1alpha1.GrantActive, nil)},
			req:      CreateRequest{Name: "vm", CPU: "2", Memory: "4Gi"},
			wantHost: "node-a",
		},
		{
			name:        "grant too small",
			grants:      []*v1alpha1.Grant{makeGrant("g1", "vms", "node-a", "1", "4Gi", v1alpha1.GrantActive, nil)},
			req:         CreateRequest{Name: "vm", CPU: "2", Memory: "4Gi", Host: "node-a"},
			wantMessage: "node-a: cpu 2 requested, 1 left in the grants (VMs use 0 of 1 granted)",
		},
		{
			name: "other frameworks', revoked and expired grants do not count",
			grants: []*v1alpha1.Grant{
				makeGrant("g1", "batch", "node-a", "8", "16Gi", v1alpha1.GrantActive, nil),
				makeGrant("g2", "vms", "node-a", "8", "16Gi", v1alpha1.GrantRevoked, nil),
				makeGrant("g3", "vms", "node-a", "8", "16Gi", v1alpha1.GrantActive, &earlier),
			},
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi", Host: "node-a"},
			wantMessage: "node-a: no live grant for framework vms",
		},
		{
			name:        "no grant on any host",
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi"},
			wantMessage: "no live grant for framework vms on any host",
		},
		{
			name: "first fit tries only granted hosts, and says which granted host is not a node",
			grants: []*v1alpha1.Grant{makeGrant("g1", "vms", "node-z", "8", "16Gi", v1alpha1.GrantActive, nil),
				makeGrant("g2", "vms", "node-b", "1", "16Gi", v1alpha1.GrantActive, nil)},
			req:         CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi"},
			wantMessage: "no host fits cpu 2, memory 1Gi: node-z: granted, but no such node; node-b: cpu 2 requested, 1 left in the grants (VMs use 0 of 1 granted)",
		},
		{
			name:        "the grant does not override what pods use",
			grants:      []*v1alpha1.Grant{makeGrant("g1", "vms", "node-a", "8", "16Gi", v1alpha1.GrantActive, nil)},
			pods:        []*v1.Pod{makePod("p", "node-a", "7", "1Gi", v1.PodRunning)},
			req:         CreateRequest{Name: "vm", CPU: "2", Memory: "1Gi", Host: "node-a"},
			wantMessage: "node-a: cpu 2 requested, 1 free (pods use 7, VMs use 0 of 8)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "vms")
			f.addNodes(t, makeNode("node-a", "8", "16Gi"), makeNode("node-b", "8", "16Gi"))
			f.addPods(t, tc.pods...)
			f.setGrants(t, tc.grants...)
			vm, err := f.m.Create(tc.req)
			if err != nil {
				t.Fatalf("Create: %v; in two-level mode a VM is placed or kept pending", err)
			}
			if tc.wantHost != "" {
				if vm.Phase != PhaseRunning || vm.Host != tc.wantHost {
					t.Fatalf("VM %s on %q (%s: %s); want Running on %s", vm.Name, vm.Host, vm.Phase, vm.Message, tc.wantHost)
				}
				if host, ok := f.published(t, vm.Name); !ok || host != tc.wantHost {
					t.Errorf("ExternalWorkload on %q (published %v), want on %s", host, ok, tc.wantHost)
				}
				return
			}
			if vm.Phase != PhasePending || vm.Host != "" || vm.Message != tc.wantMessage {
				t.Errorf("VM %s: phase %s on %q, message %q;\nwant Pending, message %q", vm.Name, vm.Phase, vm.Host, vm.Message, tc.wantMessage)
			}
			if _, ok := f.store.Get("", vm.Name); ok {
				t.Error("a pending VM is published")
			}
		})
	}
}

func TestTwoLevelPendingUntilGrantGrows(t *testing.T) {
	f := newFixture(t, "vms")
	f.addNodes(t, makeNode("node-a", "8", "16Gi"))
	f.setGrants(t, makeGrant("g1", "vms", "node-a", "2", "8Gi", v1alpha1.GrantActive, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	first, err := f.m.Create(CreateRequest{Name: "vm-1", CPU: "2", Memory: "4Gi"})
	if err != nil || first.Phase != PhaseRunning {
		t.Fatalf("vm-1: %+v, %v; want Running", first, err)
	}
	for _, name := range []string{"vm-2", "vm-3"} {
		v, err := f.m.Create(CreateRequest{Name: name, CPU: "2", Memory: "2Gi"})
		if err != nil || v.Phase != PhasePending {
			t.Fatalf("%s: %+v, %v; want Pending", name, v, err)
		}
	}
	d := f.m.Demand()
	if d.Framework != "vms" || d.Waiting != 2 || d.Unmet.Cpu().String() != "4" || d.Unmet.Memory().String() != "4Gi" ||
		d.LargestUnit.Cpu().String() != "2" || d.LargestUnit.Memory().String() != "2Gi" || d.LargestGang != nil {
		t.Errorf("demand %+v; want framework vms, 2 waiting, unmet cpu 4 memory 4Gi, largest unit cpu 2 memory 2Gi, no gang", d)
	}
	if u := d.Used["node-a"]; u.Cpu().String() != "2" || u.Memory().String() != "4Gi" {
		t.Errorf("demand used on node-a: %v, want cpu 2 memory 4Gi", u)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("the demand report is invalid: %v", err)
	}

	// vm-3 is deleted while pending; the grant then grows by enough for
	// one more VM: vm-2 is placed, by the retry loop, on the kick.
	if _, err := f.m.Delete("vm-3"); err != nil {
		t.Fatalf("deleting pending vm-3: %v", err)
	}
	f.setGrants(t, makeGrant("g1", "vms", "node-a", "4", "8Gi", v1alpha1.GrantActive, nil))
	f.m.Kick()
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		v, _ := f.m.Get("vm-2")
		return v.Phase == PhaseRunning, nil
	})
	if err != nil {
		v, _ := f.m.Get("vm-2")
		t.Fatalf("vm-2 not placed after the grant grew: %+v", v)
	}
	if host, ok := f.published(t, "vm-2"); !ok || host != "node-a" {
		t.Errorf("vm-2's ExternalWorkload on %q (published %v), want node-a", host, ok)
	}
	if _, ok := f.m.Get("vm-3"); ok {
		t.Error("deleted vm-3 is still listed")
	}
	if _, ok := f.store.Get("", "vm-3"); ok {
		t.Error("deleted pending vm-3 got published")
	}
	if d := f.m.Demand(); d.Waiting != 0 || len(d.Unmet) != 0 || len(d.LargestUnit) != 0 {
		t.Errorf("demand %+v after all VMs were placed; want nothing waiting", d)
	}
}

func TestTwoLevelGrantExpiryAndShrink(t *testing.T) {
	f := newFixture(t, "vms")
	f.addNodes(t, makeNode("node-a", "8", "16Gi"))
	expires := t0.Add(time.Minute)
	f.setGrants(t, makeGrant("g1", "vms", "node-a", "4", "8Gi", v1alpha1.GrantActive, &expires))
	if v, err := f.m.Create(CreateRequest{Name: "vm-1", CPU: "2", Memory: "2Gi"}); err != nil || v.Phase != PhaseRunning {
		t.Fatalf("vm-1: %+v, %v; want Running", v, err)
	}
	overGrant := func() float64 { return testutil.ToFloat64(f.m.cfg.Metrics.Overcommitted.WithLabelValues(LimitGrant)) }
	f.m.Reconcile(context.Background())
	if n := overGrant(); n != 0 {
		t.Errorf("overcommitted_hosts{limit=grant} = %v inside the grant, want 0", n)
	}

	// The grant expires: vm-1 keeps running, the host is reported, and a
	// new VM waits.
	f.clock.SetTime(expires)
	f.m.Reconcile(context.Background())
	if n := overGrant(); n != 1 {
		t.Errorf("overcommitted_hosts{limit=grant} = %v after the grant expired, want 1", n)
	}
	if v, _ := f.m.Get("vm-1"); v.Phase != PhaseRunning {
		t.Errorf("vm-1 is %s after its grant expired; VMs are not killed", v.Phase)
	}
	if v, err := f.m.Create(CreateRequest{Name: "vm-2", CPU: "1", Memory: "1Gi"}); err != nil || v.Phase != PhasePending {
		t.Errorf("vm-2 under an expired grant: %+v, %v; want Pending", v, err)
	}

	// A new, smaller grant: still over for vm-1 (2 cpu), which is kept.
	f.setGrants(t, makeGrant("g1", "vms", "node-a", "1", "8Gi", v1alpha1.GrantActive, nil))
	f.m.Reconcile(context.Background())
	if n := overGrant(); n != 1 {
		t.Errorf("overcommitted_hosts{limit=grant} = %v under a shrunken grant, want 1", n)
	}
	// It grows back: the host clears and vm-2 is placed.
	f.setGrants(t, makeGrant("g1", "vms", "node-a", "3", "8Gi", v1alpha1.GrantActive, nil))
	f.m.Reconcile(context.Background())
	if n := overGrant(); n != 0 {
		t.Errorf("overcommitted_hosts{limit=grant} = %v after the grant grew back, want 0", n)
	}
	if v, _ := f.m.Get("vm-2"); v.Phase != PhaseRunning {
		t.Errorf("vm-2 is %s (%s) after the grant grew, want Running", v.Phase, v.Message)
	}
}

func TestHybridOvercommitReported(t *testing.T) {
	f := newFixture(t, "")
	f.addNodes(t, makeNode("node-a", "4", "16Gi"))
	if _, err := f.m.Create(CreateRequest{Name: "vm-1", CPU: "2", Memory: "2Gi"}); err != nil {
		t.Fatal(err)
	}
	// A pod bound in the race window, after the VM took the capacity.
	f.addPods(t, makePod("late", "node-a", "3", "1Gi", v1.PodRunning))
	f.m.Reconcile(context.Background())
	if n := testutil.ToFloat64(f.m.cfg.Metrics.Overcommitted.WithLabelValues(LimitAllocatable)); n != 1 {
		t.Errorf("overcommitted_hosts{limit=allocatable} = %v, want 1", n)
	}
	d := f.m.Demand()
	if used := d.Used["node-a"]; d.Framework != "" || d.Waiting != 0 || len(d.Unmet) != 0 || used.Cpu().String() != "2" {
		t.Errorf("hybrid demand %+v; want no framework, nothing waiting, 2 cpu used on node-a", d)
	}
}

// The host selector keeps VMs off the nodes it does not select, with or
// without ledgers.
func TestHostSelector(t *testing.T) {
	selectVMs := func(_ *fixture, cfg *Config) { cfg.HostSelector = labels.SelectorFromSet(labels.Set{"vms": "true"}) }
	tests := []struct {
		name        string
		nodes       []*v1.Node
		req         CreateRequest
		wantHost    string
		wantReason  string
		wantMessage string
	}{
		{
			name:     "first fit skips unselected nodes",
			nodes:    []*v1.Node{makeNode("node-a", "8", "16Gi"), makeNode("node-b", "8", "16Gi", labeled("vms", "true"))},
			req:      CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi"},
			wantHost: "node-b",
		},
		{
			name:        "a requested node not selected is refused",
			nodes:       []*v1.Node{makeNode("node-a", "8", "16Gi")},
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi", Host: "node-a"},
			wantReason:  ReasonHostUnusable,
			wantMessage: `node-a: not selected by the host selector "vms=true"`,
		},
		{
			name:        "no node selected",
			nodes:       []*v1.Node{makeNode("node-a", "8", "16Gi")},
			req:         CreateRequest{Name: "vm", CPU: "1", Memory: "1Gi"},
			wantReason:  ReasonNoHosts,
			wantMessage: `no nodes selected by the host selector "vms=true"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "", selectVMs)
			f.addNodes(t, tc.nodes...)
			vm, err := f.m.Create(tc.req)
			var refused *RefusedError
			switch {
			case tc.wantHost != "" && (err != nil || vm.Host != tc.wantHost):
				t.Errorf("Create: %+v, %v; want placed on %s", vm, err, tc.wantHost)
			case tc.wantHost == "" && (!errors.As(err, &refused) || refused.Reason != tc.wantReason || refused.Message != tc.wantMessage):
				t.Errorf("Create: %v; want refused with %s %q", err, tc.wantReason, tc.wantMessage)
			}
		})
	}
	if _, err := New(Config{Framework: "vms", Grants: cache.NewStore(cache.MetaNamespaceKeyFunc), HostSelector: labels.SelectorFromSet(labels.Set{"a": "b"}),
		Nodes: newFixture(t, "").m.cfg.Nodes, Pods: cache.NewIndexer(cache.MetaNamespaceKeyFunc, PodIndexers()), Store: newStore(t),
		Metrics: newFixture(t, "").m.cfg.Metrics}); err == nil {
		t.Error("New accepted a host selector in two-level mode")
	}
}
