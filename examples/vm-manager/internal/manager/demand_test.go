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
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// racingGrants is a grant store whose List, once armed, first runs race:
// a grant update and a placement made while a report reads the grants.
type racingGrants struct {
	cache.Store
	armed atomic.Bool
	race  func()
}

func (s *racingGrants) List() []any {
	if s.armed.CompareAndSwap(true, false) {
		s.race()
	}
	return s.Store.List()
}

// A placement racing with a report never leaves Used missing a VM placed
// under a grant version the report acknowledges: while Demand reads the
// grants, the allocator grows the grant (a new version) and a VM that
// fits only under it is created. Either the VM's placement waits for the
// report (and the report's Used need not count it, since it is placed
// after the report), or the report counts it.
func TestDemandAcknowledgesGrants(t *testing.T) {
	grants := &racingGrants{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	f := newFixture(t, "vms", func(f *fixture, cfg *Config) {
		f.grants = grants
		cfg.Grants = grants
	})
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	g := makeGrant("g1", "vms", "node-1", "2", "8Gi", v1alpha1.GrantActive, nil)
	g.ResourceVersion = "1"
	other := makeGrant("g2", "batch", "node-1", "6", "8Gi", v1alpha1.GrantActive, nil)
	other.ResourceVersion = "5"
	f.setGrants(t, g, other)
	if v, err := f.m.Create(CreateRequest{Name: "vm-1", CPU: "2", Memory: "1Gi"}); err != nil || v.Phase != PhaseRunning {
		t.Fatalf("vm-1: %+v, %v; want Running under version 1", v, err)
	}

	placed := make(chan struct{})
	placedDuringRead := false
	grants.race = func() {
		g2 := makeGrant("g1", "vms", "node-1", "4", "8Gi", v1alpha1.GrantActive, nil)
		g2.ResourceVersion = "2"
		must(t, grants.Store.Update(g2))
		go func() {
			if v, err := f.m.Create(CreateRequest{Name: "vm-2", CPU: "2", Memory: "1Gi"}); err != nil || v.Phase != PhaseRunning {
				t.Errorf("vm-2: %+v, %v; want Running under version 2", v, err)
			}
			close(placed)
		}()
		select {
		case <-placed:
			placedDuringRead = true
		case <-time.After(200 * time.Millisecond):
		}
	}
	grants.armed.Store(true)
	r := f.m.Demand()
	<-placed

	if !r.Synced {
		t.Error("the report is not synced")
	}
	if len(r.ObservedGrants) != 1 || r.ObservedGrants["g1"] == "" {
		t.Fatalf("observedGrants %v; want g1 only (g2 is another framework's)", r.ObservedGrants)
	}
	used := r.Used["node-1"]
	if r.ObservedGrants["g1"] == "2" && placedDuringRead && used.Cpu().String() != "4" {
		t.Errorf("the report acknowledges g1 version 2, vm-2 was placed under it before the report was made, and Used is %v: vm-2 is missing",
			used.Cpu())
	}
	if used.Cpu().String() != "2" && used.Cpu().String() != "4" {
		t.Errorf("used cpu %v; want 2 (vm-1) or 4 (and vm-2)", used.Cpu())
	}
	if err := r.Validate(); err != nil {
		t.Errorf("the report is invalid: %v", err)
	}
	// Once vm-2 is placed, every report counts it.
	r = f.m.Demand()
	if used := r.Used["node-1"]; r.ObservedGrants["g1"] != "2" || used.Cpu().String() != "4" {
		t.Errorf("report after vm-2 was placed: observed %v, used %v; want version 2 and 4 cpu", r.ObservedGrants, r.Used)
	}
}
