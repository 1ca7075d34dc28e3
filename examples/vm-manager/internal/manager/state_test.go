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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// memState is a State in memory. Save can be made to fail, and onSave
// sees each save before it is made.
type memState struct {
	mu     sync.Mutex
	vms    []VM
	saves  int
	fail   error
	onSave func(prev, next []VM)
}

var _ State = (*memState)(nil)

func (s *memState) Load() ([]VM, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.vms), nil
}

func (s *memState) Save(vms []VM) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.onSave != nil {
		s.onSave(s.vms, vms)
	}
	if s.fail != nil {
		return s.fail
	}
	s.vms = slices.Clone(vms)
	s.saves++
	return nil
}

func (s *memState) setFail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// withState keeps the fixture's VMs in s.
func withState(s State) fixtureOpt {
	return func(_ *fixture, cfg *Config) { cfg.State = s }
}

// runningVM is a VM Running on host since t0.
func runningVM(name, host, cpu, memory string) VM {
	placed := metav1.NewTime(t0)
	return VM{Name: name, CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory), Host: host, Phase: PhaseRunning,
		Created: metav1.NewTime(t0), Placed: &placed}
}

// vmDiff compares VMs by value: quantities and times by what they mean.
func vmDiff(want, got []VM) string {
	return cmp.Diff(want, got,
		cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
		cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) }))
}

// withoutMessages clears the VMs' messages, which are not saved.
func withoutMessages(vms []VM) []VM {
	out := slices.Clone(vms)
	for i := range out {
		out[i].Message = ""
	}
	return out
}

// A manager killed and started again from its state file has the same
// VMs: the Running ones published on their hosts, the Pending ones still
// pending and retried.
func TestStateRestart(t *testing.T) {
	tests := []struct {
		name      string
		framework string
		// run creates and deletes VMs before the restart.
		run func(t *testing.T, f *fixture)
		// after checks the restarted manager.
		after func(t *testing.T, f *fixture)
	}{
		{
			name: "hybrid",
			run: func(t *testing.T, f *fixture) {
				for _, name := range []string{"vm-a", "vm-b", "vm-c"} {
					if _, err := f.m.Create(CreateRequest{Name: name, CPU: "1", Memory: "1Gi", Host: "node-1"}); err != nil {
						t.Fatal(err)
					}
					f.clock.Step(1500 * time.Microsecond) // distinct times
				}
				if _, err := f.m.Delete("vm-b"); err != nil {
					t.Fatal(err)
				}
			},
			after: func(t *testing.T, f *fixture) {
				if _, ok := f.store.Get("", "vm-b"); ok {
					t.Error("deleted vm-b is published again")
				}
			},
		},
		{
			name:      "two-level",
			framework: "vms",
			run: func(t *testing.T, f *fixture) {
				f.setGrants(t, makeGrant("g1", "vms", "node-1", "2", "8Gi", v1alpha1.GrantActive, nil))
				for _, name := range []string{"vm-a", "vm-b", "vm-c"} {
					if _, err := f.m.Create(CreateRequest{Name: name, CPU: "2", Memory: "1Gi"}); err != nil {
						t.Fatal(err)
					}
				}
			},
			after: func(t *testing.T, f *fixture) {
				for _, name := range []string{"vm-b", "vm-c"} {
					if v, _ := f.m.Get(name); v.Phase != PhasePending {
						t.Errorf("%s after the restart: %+v; want Pending", name, v)
					}
					if _, ok := f.store.Get("", name); ok {
						t.Errorf("pending %s is published", name)
					}
				}
				// The grant grows by one VM: the older pending VM goes first.
				f.setGrants(t, makeGrant("g1", "vms", "node-1", "4", "8Gi", v1alpha1.GrantActive, nil))
				f.m.Reconcile(context.Background())
				if b, c := f.m.vmPhase("vm-b"), f.m.vmPhase("vm-c"); b != PhaseRunning || c != PhasePending {
					t.Errorf("after the grant grew: vm-b %s, vm-c %s; want Running, Pending (oldest first)", b, c)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vms.json")
			f := newFixture(t, tc.framework, withState(FileState{Path: path}))
			f.addNodes(t, makeNode("node-1", "8", "16Gi"))
			tc.run(t, f)
			before := f.m.List()

			if _, err := f.restart(t); err != nil {
				t.Fatalf("restarting from %s: %v", path, err)
			}
			if d := vmDiff(withoutMessages(before), withoutMessages(f.m.List())); d != "" {
				t.Errorf("VMs after the restart (-before +after):\n%s", d)
			}
			for _, v := range before {
				host, ok := f.published(t, v.Name)
				if v.Phase == PhaseRunning && (!ok || host != v.Host) {
					t.Errorf("Running %s: published %v on %q after the restart; want on %s", v.Name, ok, host, v.Host)
				}
				if v.Phase == PhaseRunning && v.Placed == nil {
					t.Errorf("Running %s has no placed time", v.Name)
				}
			}
			tc.after(t, f)
		})
	}
}

// vmPhase returns the phase of VM name, "" if unknown.
func (m *Manager) vmPhase(name string) Phase {
	v, _ := m.Get(name)
	return v.Phase
}

// The state file is strict: what it holds that is unknown or wrong stops
// the start, with the file and the field named.
func TestStateFileErrors(t *testing.T) {
	const created = `"created":"2026-01-02T03:04:05Z"`
	vm := func(fields string) string {
		return `{"version":1,"vms":[{"name":"vm-a","cpu":"1","memory":"1Gi",` + fields + `}]}`
	}
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"empty", "", "empty"},
		{"not JSON", "{", "not a JSON object"},
		{"trailing data", `{"version":1,"vms":[]} x`, "data after the JSON object"},
		{"unsupported version", `{"version":2,"vms":[]}`, "version: 2 is not supported"},
		{"no version", `{"vms":[]}`, "version: 0 is not supported"},
		{"unknown field", vm(`"phase":"Pending",` + created + `,"colour":"red"`), `unknown field "colour"`},
		{"a number where a string belongs", `{"version":1,"vms":[{"name":"vm-a","cpu":2}]}`, "vms.cpu: a JSON number where a string belongs"},
		{"bad quantity", `{"version":1,"vms":[{"name":"vm-a","cpu":"lots","memory":"1Gi","phase":"Pending",` + created + `}]}`, `vms[0].cpu: "lots" is not a quantity`},
		{"bad name", `{"version":1,"vms":[{"name":"VM A","cpu":"1","memory":"1Gi","phase":"Pending",` + created + `}]}`, "vms[0].name:"},
		{"bad requested host", vm(`"requestedHost":"Node_1","phase":"Pending",` + created), "vms[0].requestedHost:"},
		{"unknown phase", vm(`"phase":"Stopped",` + created), `vms[0].phase: "Stopped" is neither Pending nor Running`},
		{"bad created", vm(`"phase":"Pending","created":"yesterday"`), `vms[0].created: "yesterday" is not an RFC 3339 time`},
		{"running without host", vm(`"phase":"Running","placed":"2026-01-02T03:04:05Z",` + created), "vms[0].host: required for a Running VM"},
		{"running without placed", vm(`"phase":"Running","host":"node-1",` + created), "vms[0].placed:"},
		{"pending with a host", vm(`"phase":"Pending","host":"node-1",` + created), "vms[0].host:"},
		{"pending with placed", vm(`"phase":"Pending","placed":"2026-01-02T03:04:05Z",` + created), "vms[0].placed:"},
		{"a name twice", `{"version":1,"vms":[` +
			`{"name":"vm-a","cpu":"1","memory":"1Gi","phase":"Pending",` + created + `},` +
			`{"name":"vm-a","cpu":"1","memory":"1Gi","phase":"Pending",` + created + `}]}`, `vms[1].name: "vm-a" is also vms[0]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vms.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := FileState{Path: path}.Load()
			if err == nil || !strings.Contains(err.Error(), "state file "+path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v; want an error naming %s and saying %q", err, path, tc.want)
			}
			f := newFixture(t, "")
			cfg := f.cfg
			cfg.State = FileState{Path: path}
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("New: %v; want the state file's error", err)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		vms, err := FileState{Path: filepath.Join(t.TempDir(), "none.json")}.Load()
		if err != nil || len(vms) != 0 {
			t.Errorf("Load of a missing file: %v, %v; want no VMs, no error", vms, err)
		}
	})
}

// What Save writes, Load reads back; the file is JSON a person can read.
func TestFileStateRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vms.json")
	pending := VM{Name: "vm-p", CPU: resource.MustParse("500m"), Memory: resource.MustParse("1Gi"), RequestedHost: "node-2",
		Phase: PhasePending, Created: metav1.NewTime(t0.Add(1234))}
	want := []VM{runningVM("vm-r", "node-1", "2", "4Gi"), pending}
	s := FileState{Path: path}
	if err := s.Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if d := vmDiff(want, got); d != "" {
		t.Errorf("loaded (-saved +loaded):\n%s", d)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil || raw["version"] != float64(1) {
		t.Errorf("the state file is not JSON of version 1: %v\n%s", err, data)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".vms.json.*")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// Write-ahead: a VM is saved Running before its ExternalWorkload is
// published, and saved deleted only after its ExternalWorkload is gone.
func TestStateWriteAhead(t *testing.T) {
	state := &memState{}
	f := newFixture(t, "", withState(state))
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	var violations []string
	state.onSave = func(prev, next []VM) {
		running := func(vms []VM) map[string]bool {
			out := map[string]bool{}
			for _, v := range vms {
				if v.Phase == PhaseRunning {
					out[v.Name] = true
				}
			}
			return out
		}
		was, is := running(prev), running(next)
		for name := range is {
			if _, ok := f.store.Get("", name); !was[name] && ok {
				violations = append(violations, name+" was published before it was saved Running")
			}
		}
		for name := range was {
			if _, ok := f.store.Get("", name); !is[name] && ok {
				violations = append(violations, name+" was saved deleted while still published")
			}
		}
	}
	if _, err := f.m.Create(CreateRequest{Name: "vm-a", CPU: "1", Memory: "1Gi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Delete("vm-a"); err != nil {
		t.Fatal(err)
	}
	if len(violations) > 0 || state.saves != 2 {
		t.Errorf("%d saves, violations %q; want 2 saves in write-ahead order", state.saves, violations)
	}
}

// When the state cannot be saved, the operation fails, says so, and
// leaves the VM as it was.
func TestStateSaveFailure(t *testing.T) {
	saveErr := errors.New("disk full")
	t.Run("hybrid", func(t *testing.T) {
		state := &memState{}
		f := newFixture(t, "", withState(state))
		f.addNodes(t, makeNode("node-1", "8", "16Gi"))
		srv := newServer(t, f)
		if code, body := call(t, srv, "POST", "/vms", `{"name":"vm-a","cpu":"1","memory":"1Gi"}`); code != http.StatusCreated {
			t.Fatalf("creating vm-a: %d %s", code, body)
		}
		state.setFail(saveErr)
		code, body := call(t, srv, "POST", "/vms", `{"name":"vm-b","cpu":"1","memory":"1Gi"}`)
		if code != http.StatusInternalServerError || !strings.Contains(body, "VM vm-b not created: saving the state: disk full") {
			t.Errorf("creating vm-b with the state unsaveable: %d %s; want 500 saying it was not created and why", code, body)
		}
		if _, ok := f.m.Get("vm-b"); ok {
			t.Error("vm-b is kept")
		}
		if _, ok := f.store.Get("", "vm-b"); ok {
			t.Error("vm-b is published")
		}
		code, body = call(t, srv, "DELETE", "/vms/vm-a", "")
		if code != http.StatusInternalServerError || !strings.Contains(body, "VM vm-a not deleted, it keeps running: saving the state: disk full") {
			t.Errorf("deleting vm-a with the state unsaveable: %d %s; want 500 saying it was not deleted and why", code, body)
		}
		if v, ok := f.m.Get("vm-a"); !ok || v.Phase != PhaseRunning {
			t.Errorf("vm-a after the failed delete: %+v, %v; want Running", v, ok)
		}
		if host, ok := f.published(t, "vm-a"); !ok || host != "node-1" {
			t.Errorf("vm-a after the failed delete: published %v on %q; want published on node-1", ok, host)
		}
		if d := vmDiff([]VM{mustGet(t, f.m, "vm-a")}, state.vms); d != "" {
			t.Errorf("saved VMs (-want +saved):\n%s", d)
		}
	})
	t.Run("two-level pending", func(t *testing.T) {
		state := &memState{}
		f := newFixture(t, "vms", withState(state))
		f.addNodes(t, makeNode("node-1", "8", "16Gi"))
		if v, err := f.m.Create(CreateRequest{Name: "vm-a", CPU: "1", Memory: "1Gi"}); err != nil || v.Phase != PhasePending {
			t.Fatalf("vm-a: %+v, %v; want Pending", v, err)
		}
		state.setFail(saveErr)
		if _, err := f.m.Create(CreateRequest{Name: "vm-b", CPU: "1", Memory: "1Gi"}); err == nil {
			t.Error("a pending VM was created without being saved")
		}
		if _, err := f.m.Delete("vm-a"); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("deleting pending vm-a: %v; want the save's error", err)
		}
		if names := vmNames(f.m.List()); !slices.Equal(names, []string{"vm-a"}) {
			t.Errorf("VMs %q; want vm-a only", names)
		}
		// Placed by a reconcile that cannot save: it stays pending, unpublished.
		f.setGrants(t, makeGrant("g1", "vms", "node-1", "2", "8Gi", v1alpha1.GrantActive, nil))
		f.m.Reconcile(context.Background())
		if v, _ := f.m.Get("vm-a"); v.Phase != PhasePending || !strings.Contains(v.Message, "disk full") {
			t.Errorf("vm-a after a reconcile that could not save: %+v; want Pending, saying why", v)
		}
		if _, ok := f.store.Get("", "vm-a"); ok {
			t.Error("vm-a is published without being saved")
		}
	})
	t.Run("ledger", func(t *testing.T) {
		state := &memState{}
		f := newLedgerFixture(t, withState(state))
		f.addNodes(t, makeNode("node-1", "8", "16Gi"))
		f.api.edit("node-1", joined("batch-scheduler"))
		state.setFail(saveErr)
		if _, err := f.m.Create(CreateRequest{Name: "vm-a", CPU: "1", Memory: "1Gi"}); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("Create: %v; want the save's error", err)
		}
		if got := entryNames(f.api.ledger("node-1")); len(got) != 0 {
			t.Errorf("entries of node-1: %q; want the committed entry removed again", got)
		}
		if _, ok := f.m.Get("vm-a"); ok {
			t.Error("vm-a is kept")
		}
	})
}

func mustGet(t *testing.T, m *Manager, name string) VM {
	t.Helper()
	v, ok := m.Get(name)
	if !ok {
		t.Fatalf("VM %s not found", name)
	}
	return v
}

func vmNames(vms []VM) []string {
	out := make([]string, len(vms))
	for i, v := range vms {
		out[i] = v.Name
	}
	return out
}

// The placed time shows in the admin API once a VM runs.
func TestAPIPlacedTime(t *testing.T) {
	f := newFixture(t, "vms")
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	srv := newServer(t, f)
	if code, body := call(t, srv, "POST", "/vms", `{"name":"vm-a","cpu":"1","memory":"1Gi"}`); code != http.StatusAccepted || strings.Contains(body, `"placed"`) {
		t.Errorf("a pending VM: %d %s; want 202 without a placed time", code, body)
	}
	f.clock.Step(90 * time.Second)
	f.setGrants(t, makeGrant("g1", "vms", "node-1", "2", "8Gi", v1alpha1.GrantActive, nil))
	f.m.Reconcile(context.Background())
	code, body := call(t, srv, "GET", "/vms/vm-a", "")
	var v VM
	if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil || v.Placed == nil || !v.Placed.Time.Equal(t0.Add(90*time.Second)) ||
		!v.Created.Time.Equal(t0) {
		t.Errorf("GET /vms/vm-a: %d %s; want placed at %s, created at %s", code, body, t0.Add(90*time.Second).Format("15:04:05"), t0.Format("15:04:05"))
	}
}
