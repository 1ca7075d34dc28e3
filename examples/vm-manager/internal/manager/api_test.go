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
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
)

// call sends method path with body to srv and returns the status and the
// body.
func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func newServer(t *testing.T, f *fixture) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(NewHandler(f.m, f.store, f.reg))
	t.Cleanup(srv.Close)
	return srv
}

func TestAPIErrors(t *testing.T) {
	f := newFixture(t, "")
	f.addNodes(t, makeNode("node-1", "4", "8Gi"))
	srv := newServer(t, f)
	if code, body := call(t, srv, "POST", "/vms", `{"name":"vm-a","cpu":"1","memory":"1Gi"}`); code != http.StatusCreated {
		t.Fatalf("creating vm-a: %d %s", code, body)
	}
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		// want are substrings of the answer.
		want []string
	}{
		{"bad JSON", "POST", "/vms", `{"name":"vm-b",`, http.StatusBadRequest, []string{"request body", "not a JSON object"}},
		{"empty body", "POST", "/vms", ``, http.StatusBadRequest, []string{"request body: empty"}},
		{"unknown field", "POST", "/vms", `{"name":"vm-b","cpus":"1","memory":"1Gi"}`, http.StatusBadRequest, []string{`unknown field \"cpus\"`}},
		{"trailing data", "POST", "/vms", `{"name":"vm-b","cpu":"1","memory":"1Gi"} {}`, http.StatusBadRequest, []string{"data after the JSON object"}},
		{"bad quantity", "POST", "/vms", `{"name":"vm-b","cpu":"lots","memory":"1Gi"}`, http.StatusUnprocessableEntity, []string{`"field": "cpu"`, `\"lots\" is not a quantity`}},
		{"negative memory", "POST", "/vms", `{"name":"vm-b","cpu":"1","memory":"-1Gi"}`, http.StatusUnprocessableEntity, []string{`"field": "memory"`, "greater than zero"}},
		{"name of wrong type", "POST", "/vms", `{"name":7,"cpu":"1","memory":"1Gi"}`, http.StatusUnprocessableEntity, []string{`"field": "name"`, "must be a string"}},
		{"bad name", "POST", "/vms", `{"name":"VM B","cpu":"1","memory":"1Gi"}`, http.StatusUnprocessableEntity, []string{`"field": "name"`, "RFC 1123"}},
		{"missing memory", "POST", "/vms", `{"name":"vm-b","cpu":1}`, http.StatusUnprocessableEntity, []string{`"field": "memory"`, "required"}},
		{"duplicate name", "POST", "/vms", `{"name":"vm-a","cpu":"1","memory":"1Gi"}`, http.StatusConflict, []string{"vm-a: already exists", `"reason": "AlreadyExists"`}},
		{"does not fit", "POST", "/vms", `{"name":"vm-b","cpu":"4","memory":"1Gi","host":"node-1"}`, http.StatusConflict,
			[]string{"VM vm-b does not fit: node-1: cpu 4 requested, 3 free (pods use 0, VMs use 1 of 4)", `"reason": "InsufficientCapacity"`}},
		{"unknown VM delete", "DELETE", "/vms/vm-x", ``, http.StatusNotFound, []string{"vm-x: not found"}},
		{"unknown VM get", "GET", "/vms/vm-x", ``, http.StatusNotFound, []string{"vm-x: not found"}},
		{"wrong method", "PUT", "/vms", `{}`, http.StatusMethodNotAllowed, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, srv, tc.method, tc.path, tc.body)
			if code != tc.wantCode {
				t.Errorf("%s %s: %d %s; want %d", tc.method, tc.path, code, body, tc.wantCode)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s %s: body %s; want it to contain %s", tc.method, tc.path, body, w)
				}
			}
		})
	}
	if code, body := call(t, srv, "GET", "/vms", ""); code != http.StatusOK || strings.Contains(body, "vm-b") {
		t.Errorf("GET /vms: %d %s; want 200 without vm-b", code, body)
	}
}

func TestAPILifecycle(t *testing.T) {
	f := newFixture(t, "vms")
	f.addNodes(t, makeNode("node-1", "8", "16Gi"))
	g := makeGrant("g1", "vms", "node-1", "2", "8Gi", v1alpha1.GrantActive, nil)
	g.ResourceVersion = "17"
	f.setGrants(t, g)
	srv := newServer(t, f)

	code, body := call(t, srv, "POST", "/vms", `{"name":"vm-a","cpu":2,"memory":"4Gi"}`)
	var v VM
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &v) != nil || v.Host != "node-1" || v.Phase != PhaseRunning {
		t.Fatalf("creating vm-a: %d %s; want 201, Running on node-1", code, body)
	}
	code, body = call(t, srv, "POST", "/vms", `{"name":"vm-b","cpu":"1","memory":"1Gi"}`)
	v = VM{}
	if code != http.StatusAccepted || json.Unmarshal([]byte(body), &v) != nil || v.Phase != PhasePending || v.Host != "" {
		t.Fatalf("creating vm-b beyond the grant: %d %s; want 202 Pending", code, body)
	}

	// The ExternalWorkload of vm-a, and only it, is listed at the store's
	// path.
	code, body = call(t, srv, "GET", f.store.Path(), "")
	var list v1alpha1.ExternalWorkloadList
	if code != http.StatusOK || json.Unmarshal([]byte(body), &list) != nil || len(list.Items) != 1 ||
		list.Items[0].Name != "vm-a" || list.Items[0].Spec.NodeName != "node-1" {
		t.Errorf("GET %s: %d %s; want vm-a on node-1 only", f.store.Path(), code, body)
	}

	r, err := demand.Fetch(context.Background(), srv.Client(), srv.URL+demand.Path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Framework != "vms" || r.Waiting != 1 || r.Unmet.Cpu().String() != "1" {
		t.Errorf("demand %+v; want framework vms, 1 waiting, unmet cpu 1", r)
	}
	if !r.Synced || len(r.ObservedGrants) != 1 || r.ObservedGrants["g1"] != "17" {
		t.Errorf("demand: synced %v, observedGrants %v; want synced, g1 at 17", r.Synced, r.ObservedGrants)
	}
	if code, body := call(t, srv, "GET", demand.Path, ""); code != http.StatusOK ||
		!strings.Contains(body, `"synced":true`) || !strings.Contains(body, `"observedGrants":{"g1":"17"}`) {
		t.Errorf("GET %s: %d %s; want synced and observedGrants in the JSON", demand.Path, code, body)
	}

	code, body = call(t, srv, "GET", "/metrics", "")
	for _, w := range []string{`vm_manager_vms{phase="Pending"} 1`, `vm_manager_vms{phase="Running"} 1`} {
		if code != http.StatusOK || !strings.Contains(body, w) {
			t.Errorf("GET /metrics: %d; want %s in\n%s", code, w, body)
		}
	}

	if code, body := call(t, srv, "DELETE", "/vms/vm-b", ""); code != http.StatusOK || !strings.Contains(body, `"phase": "Pending"`) {
		t.Errorf("deleting pending vm-b: %d %s; want 200 with the pending VM", code, body)
	}
	if code, body := call(t, srv, "DELETE", "/vms/vm-a", ""); code != http.StatusOK {
		t.Errorf("deleting vm-a: %d %s", code, body)
	}
	if _, ok := f.store.Get("", "vm-a"); ok {
		t.Error("vm-a's ExternalWorkload is still published after DELETE")
	}
	if code, body := call(t, srv, "GET", "/vms", ""); code != http.StatusOK || strings.TrimSpace(body) != "{\n  \"items\": []\n}" {
		t.Errorf("GET /vms after deleting both: %d %q", code, body)
	}
	if code, body := call(t, srv, "GET", "/healthz", ""); code != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz: %d %q", code, body)
	}
}

// GET /hosts shows each host's accounting: its pods, the VMs and what is
// left, and why a host takes no VM.
func TestAPIHosts(t *testing.T) {
	f := newFixture(t, "")
	f.addNodes(t, makeNode("node-1", "4", "8Gi"), makeNode("node-2", "2", "4Gi", unschedulable))
	f.addPods(t, makePod("p", "node-1", "1", "1Gi", v1.PodRunning), makePod("done", "node-1", "2", "1Gi", v1.PodSucceeded))
	srv := newServer(t, f)
	if code, body := call(t, srv, "POST", "/vms", `{"name":"vm-a","cpu":"2","memory":"2Gi","host":"node-1"}`); code != http.StatusCreated {
		t.Fatalf("creating vm-a: %d %s", code, body)
	}
	code, body := call(t, srv, "GET", "/hosts", "")
	var hosts HostList
	if code != http.StatusOK || json.Unmarshal([]byte(body), &hosts) != nil || len(hosts.Items) != 2 {
		t.Fatalf("GET /hosts: %d %s; want 200 with 2 hosts", code, body)
	}
	h := hosts.Items[0]
	got := fmt.Sprintf("%s pods=%s/%s vms=%s/%s free=%s/%s unusable=%q", h.Name, h.Pods.Cpu(), h.Pods.Memory(),
		h.VMs.Cpu(), h.VMs.Memory(), h.Free.Cpu(), h.Free.Memory(), h.Unusable)
	if want := `node-1 pods=1/1Gi vms=2/2Gi free=1/5Gi unusable=""`; got != want {
		t.Errorf("GET /hosts: node-1 is %s; want %s (the succeeded pod not counted)", got, want)
	}
	if h := hosts.Items[1]; h.Name != "node-2" || h.Unusable != "unschedulable" || h.Free.Cpu().String() != "2" {
		t.Errorf("GET /hosts: second host %+v; want node-2, unschedulable, 2 cpu free", h)
	}
}
