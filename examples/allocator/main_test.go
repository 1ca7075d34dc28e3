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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var cp *controlplane.ControlPlane

// TestMain starts etcd and kube-apiserver only: the allocator reads
// nothing but Nodes, which the test writes itself.
func TestMain(m *testing.M) {
	controlplane.RunTests("allocator", &cp, m.Run, controlplane.WithoutCluster())
}

// reportServer is a fake framework's demand report that the test can
// change. The framework applies every grant as soon as it is published:
// its reports are synced and acknowledge the grants observe lists.
type reportServer struct {
	mu     sync.Mutex
	report demand.Report
	// observe lists the framework's grants (name -> resourceVersion);
	// nil acknowledges nothing.
	observe func() map[string]string
}

func (s *reportServer) set(r demand.Report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report = r
}

// observeFrom makes the framework acknowledge what allocator s serves.
func (rs *reportServer) observeFrom(s *started, framework string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.observe = func() map[string]string { return s.observed(framework) }
}

func (s *reportServer) current() *demand.Report {
	s.mu.Lock()
	r, observe := s.report, s.observe
	s.mu.Unlock()
	r.Synced = true
	if observe != nil {
		r.ObservedGrants = observe()
	}
	return &r
}

// started is a running allocator.
type started struct {
	addr    string
	done    chan error
	stop    context.CancelFunc
	stopped bool
}

func start(t *testing.T, args ...string) *started {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "address")
	ctx, cancel := context.WithCancel(t.Context())
	s := &started{done: make(chan error, 1), stop: cancel}
	go func() {
		s.done <- run(ctx, append([]string{"--kubeconfig", cp.KubeconfigPath, "--listen", "127.0.0.1:0",
			"--address-file", addrFile}, args...))
	}()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-s.done:
			return false, fmt.Errorf("allocator exited early: %v", err)
		default:
		}
		b, err := os.ReadFile(addrFile)
		if err != nil {
			return false, nil
		}
		s.addr = strings.TrimSpace(string(b))
		return true, nil
	})
	if err != nil {
		cancel()
		t.Fatalf("waiting for the address file: %v", err)
	}
	// Grants are served once the first round has published; before, 503.
	var code int
	var body string
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if code, body = s.do(t, http.MethodGet, "/readyz", ""); code == http.StatusOK {
			return true, nil
		}
		if code != http.StatusServiceUnavailable {
			return false, fmt.Errorf("/readyz: HTTP %d %s, want 200 or 503", code, body)
		}
		return false, nil
	})
	if err != nil {
		cancel()
		t.Fatalf("waiting for the allocator's first round: %v (last: HTTP %d %s)", err, code, body)
	}
	return s
}

// shutdown stops the allocator and checks it exits cleanly; a second
// call does nothing.
func (s *started) shutdown(t *testing.T) {
	t.Helper()
	if s.stopped {
		return
	}
	s.stopped = true
	s.stop()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("allocator exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("allocator did not stop")
	}
}

func (s *started) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+s.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

// grants lists the served grants: name -> CPU in millicores, and the
// list's resourceVersion.
func (s *started) grants(t *testing.T) (map[string]int64, map[string]v1alpha1.Grant, int64) {
	t.Helper()
	code, body := s.do(t, http.MethodGet, "/apis/batch-scheduler.io/v1alpha1/grants", "")
	if code != http.StatusOK {
		t.Fatalf("listing grants: HTTP %d: %s", code, body)
	}
	var list v1alpha1.GrantList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("decoding the grant list: %v", err)
	}
	cpu := map[string]int64{}
	all := map[string]v1alpha1.Grant{}
	for _, g := range list.Items {
		all[g.Name] = g
		if g.Status.Phase == v1alpha1.GrantActive {
			cpu[g.Name] = g.Spec.Resources.Cpu().MilliValue()
		}
	}
	rv, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
	return cpu, all, rv
}

// observed lists framework's grants as name -> resourceVersion; nothing
// when the list fails (a framework that cannot see its grants
// acknowledges none).
func (s *started) observed(framework string) map[string]string {
	out := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+"/apis/batch-scheduler.io/v1alpha1/grants", nil)
	if err != nil {
		return out
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	var list v1alpha1.GrantList
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&list) != nil {
		return out
	}
	for _, g := range list.Items {
		if g.Spec.Framework == framework {
			out[g.Name] = g.ResourceVersion
		}
	}
	return out
}

func (s *started) waitGrants(t *testing.T, what string, want map[string]int64) {
	t.Helper()
	var last map[string]int64
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last, _, _ = s.grants(t)
		if len(last) != len(want) {
			return false, nil
		}
		for k, v := range want {
			if got, ok := last[k]; !ok || got != v {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s: grants (cpu, millicores) %v, want %v", what, last, want)
	}
}

func TestAllocatorAgainstAPIServer(t *testing.T) {
	aReport, bReport := &reportServer{}, &reportServer{}
	aSrv := httptest.NewServer(demand.Handler(aReport.current))
	defer aSrv.Close()
	bSrv := httptest.NewServer(demand.Handler(bReport.current))
	defer bSrv.Close()

	state := filepath.Join(t.TempDir(), "state.yaml")
	s := start(t, "--state-file", state, "--interval", "200ms", "--idle-timeout", "1s")
	defer s.shutdown(t)
	aReport.observeFrom(s, "a")
	bReport.observeFrom(s, "b")

	for _, req := range []struct{ name, body string }{
		{"a", fmt.Sprintf(`{"weight":1,"demandURL":%q}`, aSrv.URL+demand.Path)},
		{"b", fmt.Sprintf(`{"weight":3,"demandURL":%q}`, bSrv.URL+demand.Path)},
	} {
		if code, body := s.do(t, http.MethodPut, "/frameworks/"+req.name, req.body); code != http.StatusCreated {
			t.Fatalf("PUT /frameworks/%s: HTTP %d: %s", req.name, code, body)
		}
	}
	if code, body := s.do(t, http.MethodPut, "/frameworks/c", `{"weight":-1}`); code != http.StatusBadRequest || !strings.Contains(body, "weight") {
		t.Errorf("PUT with a negative weight: HTTP %d %s, want 400 naming weight", code, body)
	}

	for _, name := range []string{"node-1", "node-2"} {
		_, err := controlplane.CreateNode(t.Context(), cp.Client, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
				v1.ResourcePods: resource.MustParse("10"),
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) }()
	}
	s.waitGrants(t, "weights 1:3", map[string]int64{"a.node-1": 1000, "b.node-1": 3000, "a.node-2": 1000, "b.node-2": 3000})
	_, all, rv1 := s.grants(t)
	if g := all["b.node-1"]; g.Spec.Framework != "b" || g.Spec.NodeName != "node-1" || g.Spec.Issuer != "allocator" ||
		g.Spec.Resources.Memory().Value() != 6<<30 {
		t.Errorf("grant b.node-1 = %+v, want b's 3/4 of node-1 issued by allocator", g.Spec)
	}

	// b uses all its grants and more work waits; a uses nothing, so once
	// its grants have been idle for the idle timeout their CPU moves to b:
	// a's grants shrink first, and b's grow once a acknowledged that.
	bReport.set(demand.Report{Framework: "b", Waiting: 2,
		Unmet:       v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
		LargestUnit: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
		Used: map[string]v1.ResourceList{
			"node-1": {v1.ResourceCPU: resource.MustParse("3")},
			"node-2": {v1.ResourceCPU: resource.MustParse("3")},
		}})
	s.waitGrants(t, "after b's demand", map[string]int64{"b.node-1": 4000, "b.node-2": 4000, "a.node-1": 0, "a.node-2": 0})

	// A revoked grant is published as Revoked.
	if code, body := s.do(t, http.MethodPost, "/grants/a.node-1/revoke", `{"message":"maintenance"}`); code != http.StatusOK {
		t.Fatalf("revoke: HTTP %d: %s", code, body)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, all, _ := s.grants(t)
		g := all["a.node-1"]
		return g.Status.Phase == v1alpha1.GrantRevoked && g.Status.Message == "maintenance", nil
	})
	if err != nil {
		t.Fatalf("a.node-1 not published as Revoked: %v", err)
	}
	s.shutdown(t)
	if b, err := os.ReadFile(state); err != nil || !strings.Contains(string(b), "\nheld:\n") || !strings.Contains(string(b), "- grant: b.node-1\n") {
		t.Errorf("state file after the run (%v):\n%s\nwant a held section naming b.node-1", err, b)
	}

	// A restart sees the same frameworks and revocation, and serves higher
	// resourceVersions.
	s2 := start(t, "--state-file", state, "--interval", "200ms", "--idle-timeout", "1s")
	defer s2.shutdown(t)
	aReport.observeFrom(s2, "a")
	bReport.observeFrom(s2, "b")
	code, body := s2.do(t, http.MethodGet, "/frameworks", "")
	if code != http.StatusOK || !strings.Contains(body, `"name":"a"`) || !strings.Contains(body, `"name":"b"`) {
		t.Errorf("GET /frameworks after a restart: HTTP %d %s, want a and b", code, body)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, all, _ := s2.grants(t)
		return all["a.node-1"].Status.Phase == v1alpha1.GrantRevoked && all["b.node-1"].Status.Phase == v1alpha1.GrantActive, nil
	})
	if err != nil {
		t.Errorf("after a restart: grants not rebuilt with a.node-1 revoked: %v", err)
	}
	if _, _, rv2 := s2.grants(t); rv2 <= rv1 {
		t.Errorf("resourceVersion after a restart %d, want above %d", rv2, rv1)
	}
}
