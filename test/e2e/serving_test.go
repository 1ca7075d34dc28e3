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
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// The secure port serves the health endpoints to anyone, and /metrics and
// /debug/cache only to users the API server authenticates (TokenReview)
// and authorizes (SubjectAccessReview on the non-resource URL). The
// scheduler reviews with its own --kubeconfig here: the authentication and
// authorization kubeconfigs are left empty.
func TestSecureEndpoints(t *testing.T) {
	s := startScheduler(t, cp.KubeconfigPath, "--authentication-kubeconfig=", "--authorization-kubeconfig=")
	s.waitReady(t)
	unprivileged, err := serviceAccountToken(t.Context(), "endpoints-nobody", false)
	if err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body, err := s.getAs("", path); err != nil || code != http.StatusOK {
			t.Errorf("%s without credentials = %d %q %v, want 200", path, code, body, err)
		}
	}
	for _, path := range []string{"/metrics", "/debug/cache"} {
		code, body, err := s.getAs("", path)
		if err != nil || code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("%s without credentials = %d %.200q %v, want 401 or 403", path, code, body, err)
		}
		if code, body, err := s.getAs("not-a-token", path); err != nil || code != http.StatusUnauthorized {
			t.Errorf("%s with a token the API server rejects = %d %.200q %v, want 401", path, code, body, err)
		}
		if code, body, err := s.getAs(unprivileged, path); err != nil || code != http.StatusForbidden {
			t.Errorf("%s as a ServiceAccount without RBAC for it = %d %.200q %v, want 403", path, code, body, err)
		}
	}

	code, body, err := s.get("/debug/cache")
	var d cache.Dump
	if err != nil || code != http.StatusOK || json.Unmarshal(body, &d) != nil {
		t.Errorf("/debug/cache as an allowed ServiceAccount = %d %.200q %v, want a JSON dump", code, body, err)
	}
	code, body, err = s.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics as an allowed ServiceAccount = %d %.200q %v", code, body, err)
	}
	for _, want := range []string{
		"\nrest_client_requests_total{",           // client-go, through component-base
		"\nkubernetes_build_info{",                // component-base version
		"\nbatch_scheduler_events_handled_total{", // the scheduler's own
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", strings.TrimSpace(want))
		}
	}
}

// --logging-format=json makes every line of the log a JSON object. The
// real binary runs, as logging is process-wide.
func TestJSONLogging(t *testing.T) {
	dir := t.TempDir()
	if err := controlplane.GoBuild(".", dir, "github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler"); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "batch-scheduler")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig", cp.KubeconfigPath, "--leader-elect=false", "--secure-port=0",
		"--logging-format=json", "-v=2")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read until the cache is ready, then stop the scheduler as a kubelet
	// would and read the rest.
	const readyMsg = "Event handlers synced; cache is ready"
	var lines []string
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if !signalled && strings.Contains(line, readyMsg) {
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			signalled = true
		}
	}
	err = cmd.Wait()
	if !signalled {
		t.Fatalf("batch-scheduler never logged %q (exit: %v); stderr:\n%s", readyMsg, err, strings.Join(lines, "\n"))
	}
	if err != nil {
		t.Fatalf("batch-scheduler did not exit cleanly on SIGTERM: %v; stderr:\n%s", err, strings.Join(lines, "\n"))
	}

	msgs := map[string]bool{}
	for i, line := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("stderr line %d is not JSON: %v: %q", i+1, err, line)
			continue
		}
		msg, _ := entry["msg"].(string)
		if _, ok := entry["ts"]; !ok || msg == "" {
			t.Errorf("stderr line %d has no ts or msg: %q", i+1, line)
		}
		msgs[msg] = true
	}
	for _, want := range []string{"Starting batch-scheduler", readyMsg, "Shutting down"} {
		if !msgs[want] {
			t.Errorf("no JSON log entry with msg %q in:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout is not empty: %q", stdout.String())
	}
}
