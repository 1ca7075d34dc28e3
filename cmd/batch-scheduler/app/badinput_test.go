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

package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
)

// TestBadFlagsAndConfigs is the sweep of malformed flags and
// configuration files (docs/bad-input.md): each exits with code 2 and one
// line that names the flag, or the file and line, before any connection
// to the API server.
func TestBadFlagsAndConfigs(t *testing.T) {
	master := "--master=http://127.0.0.1:1"
	huge := strings.Repeat("n", 10000)
	bigConfig := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(bigConfig, []byte(header+"# "+strings.Repeat("x", config.MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var unknownKeys strings.Builder
	unknownKeys.WriteString(header)
	for i := range 500 {
		fmt.Fprintf(&unknownKeys, "bogus%d: %d\n", i, i)
	}
	var manyDynamic strings.Builder
	manyDynamic.WriteString(header + "eventHandlers:\n- name: default\n  args:\n    dynamicResources:\n")
	for i := range config.MaxListItems + 1 {
		fmt.Fprintf(&manyDynamic, "    - widgets%d.v1.example.com\n", i)
	}
	var manyInformers strings.Builder
	manyInformers.WriteString(header + "customInformers:\n")
	for i := range config.MaxListItems + 1 {
		fmt.Fprintf(&manyInformers, "- {name: c%d, resource: Node, source: {http: {url: \"http://127.0.0.1:1\"}}}\n", i)
	}
	tests := []struct {
		name   string
		args   []string
		stderr []string
	}{
		// Flags.
		{"negative QPS", []string{master, "--kube-api-qps=-1"}, []string{"--kube-api-qps must be greater than 0, got -1"}},
		{"zero QPS", []string{master, "--kube-api-qps=0"}, []string{"--kube-api-qps must be greater than 0"}},
		{"NaN QPS", []string{master, "--kube-api-qps=NaN"}, []string{"--kube-api-qps must be a finite number"}},
		{"infinite QPS", []string{master, "--kube-api-qps=+Inf"}, []string{"--kube-api-qps must be a finite number"}},
		{"QPS not a number", []string{master, "--kube-api-qps=fast"}, []string{`--kube-api-qps "fast": must be a number`}},
		{"QPS out of range", []string{master, "--kube-api-qps=1e999"}, []string{"--kube-api-qps", "out of range"}},
		{"negative burst", []string{master, "--kube-api-burst=-1"}, []string{"--kube-api-burst must be at least 1, got -1"}},
		{"zero burst", []string{master, "--kube-api-burst=0"}, []string{"--kube-api-burst must be at least 1"}},
		{"burst not an integer", []string{master, "--kube-api-burst=1.5"}, []string{`--kube-api-burst "1.5": must be an integer`}},
		{"negative events QPS", []string{master, "--events-qps=-5"}, []string{"--events-qps must be greater than 0"}},
		{"negative events burst", []string{master, "--events-burst=-5"}, []string{"--events-burst must be at least 1"}},
		{"invalid scheduler name", []string{master, "--scheduler-name=Batch_Scheduler"}, []string{`--scheduler-name "Batch_Scheduler" is not a valid scheduler name`}},
		{"empty scheduler name", []string{master, "--scheduler-name="}, []string{"--scheduler-name"}},
		{"huge scheduler name", []string{master, "--scheduler-name=" + huge}, []string{"--scheduler-name", "(10000 bytes)"}},
		{"scheduler name twice", []string{master, "--scheduler-name=a,b,a"}, []string{`--scheduler-name "a" is given twice`}},
		{"empty event handler", []string{master, "--event-handler="}, []string{"--event-handler"}},
		{"bad lease namespace", []string{master, "--leader-elect-resource-namespace=Kube_System"}, []string{"--leader-elect-resource-namespace", "not a valid namespace name"}},
		{"bad lease name", []string{master, "--leader-elect-resource-name=a/b"}, []string{"--leader-elect-resource-name", "not a valid Lease name"}},
		{"negative retry period", []string{master, "--leader-elect-retry-period=-1s"}, []string{"--leader-elect-retry-period must be positive"}},
		{"duration without unit", []string{master, "--leader-elect-lease-duration=15"}, []string{`--leader-elect-lease-duration "15": must be a duration`}},
		{"bool flag not a bool", []string{master, "--leader-elect=sometimes"}, []string{`--leader-elect "sometimes": must be true or false`}},
		{"verbosity not a number", []string{master, "-v=loud"}, []string{`--v "loud": must be a verbosity level`}},
		{"port not a number", []string{master, "--secure-port=https"}, []string{`--secure-port "https": must be an integer`}},
		{"disabled metric not a metric name", []string{master, "--disabled-metrics=batch_scheduler_cache_size,cache-size"},
			[]string{"--disabled-metrics: must be fully qualified metric names", `got "cache-size"`}},
		{"hidden metrics of a version without a previous minor", []string{master, "--show-hidden-metrics-for-version=0.99"},
			[]string{`--show-hidden-metrics-for-version "0.99": this build`, "has no previous minor version"}},
		{"allowed metric labels without a label", []string{master, "--allow-metric-labels=batch_scheduler_pending_jobs=active"},
			[]string{"--allow-metric-labels: must have keys with format `metricName,labelName`"}},
		{"allowed metric labels manifest missing", []string{master, "--allow-metric-labels-manifest=/nonexistent/allow.yaml"},
			[]string{`--allow-metric-labels-manifest "/nonexistent/allow.yaml": failed to read allow list manifest`}},
		{"both allowed metric labels flags", []string{master, "--allow-metric-labels=batch_scheduler_pending_jobs,queue=active",
			"--allow-metric-labels-manifest=" + writeFile(t, "batch_scheduler_pending_jobs,queue: active\n")},
			[]string{"--allow-metric-labels and --allow-metric-labels-manifest: give one or the other, not both"}},
		// Configuration files.
		{"config is /dev/zero", []string{master, "--config-path=/dev/zero"}, []string{"--config-path: /dev/zero: is not a regular file"}},
		{"config is a directory", []string{master, "--config-path=" + t.TempDir()}, []string{"is a directory"}},
		{"config too big", []string{master, "--config-path=" + bigConfig}, []string{"big.yaml", "more than the limit of 2 MiB"}},
		{"config of unknown keys", []string{master, "--config-path=" + writeFile(t, unknownKeys.String())},
			[]string{"config.yaml: line 3: field bogus0 not found", "and 490 more problems"}},
		{"config of too many keys", []string{master, "--config-path=" + writeFile(t, strings.Repeat("k: 1\n", 10)+unknownKeys.String()+unknownKeys.String()[len(header):])},
			[]string{"config.yaml: line 1: a mapping of"}},
		{"too many dynamic resources", []string{master, "--config-path=" + writeFile(t, manyDynamic.String())},
			[]string{"config.yaml: line 7: a list of 1001 items; at most 1000 are allowed"}},
		{"too many custom informers", []string{master, "--config-path=" + writeFile(t, manyInformers.String())},
			[]string{"config.yaml: line 4: a list of 1001 items"}},
		{"YAML error names its own line", []string{master, "--config-path=" + writeFile(t, header+"eventHandlers: []\n- name: default\n")},
			[]string{"config.yaml: line 4: "}},
		{"tab in indentation", []string{master, "--config-path=" + writeFile(t, header+"eventHandlers:\n\t- name: default\n")},
			[]string{"config.yaml: line 4: a tab in the indentation"}},
		{"empty config", []string{master, "--config-path=" + writeFile(t, "")}, []string{"the file is empty"}},
		{"wrong kind", []string{master, "--config-path=" + writeFile(t, "apiVersion: batch-scheduler.io/v1alpha1\nkind: KubeSchedulerConfiguration\n")},
			[]string{"line 2", `kind is "KubeSchedulerConfiguration"`}},
		{"custom informer name not a label", []string{master, "--config-path=" + writeFile(t, header+"customInformers:\n- {name: "+huge+", resource: Node, source: {http: {}}}\n")},
			[]string{"line 4", "customInformers[0].name: Invalid value", "(10000 bytes)", "must be no more than 63 characters"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			code, _, stderr := execute(t, ctx, tt.args)
			if code != 2 {
				t.Errorf("exit code = %d, want 2 (stderr %.500q)", code, stderr)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %.500q does not contain %q", stderr, w)
				}
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr is not one line: %.500q", stderr)
			}
			if len(stderr) > 4096 {
				t.Errorf("stderr has %d bytes; a bad input must get a short message", len(stderr))
			}
			if strings.Contains(stderr, "strconv.") {
				t.Errorf("stderr shows Go's parser: %q", stderr)
			}
		})
	}
}

// TestAPIHealth: a failing API server is logged and named by /readyz's
// api-server check until a request succeeds again.
func TestAPIHealth(t *testing.T) {
	status := http.StatusUnauthorized
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
	}))
	defer srv.Close()
	h := newAPIHealth()
	cfg := &rest.Config{Host: srv.URL}
	h.wrap(cfg)
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(url string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if resp, err := rt.RoundTrip(req); err == nil {
			_ = resp.Body.Close()
		}
	}
	synced := false
	check := h.readyCheck(func() (bool, []string) { return synced, nil })
	if err := check.Check(nil); err != nil {
		t.Fatalf("before any request: %v", err)
	}
	get(srv.URL + "/api/v1/pods")
	if err := check.Check(nil); err == nil || !strings.Contains(err.Error(), "GET /api/v1/pods: 401 Unauthorized") {
		t.Errorf("after a 401: %v, want the request and the status", err)
	}
	get("http://127.0.0.1:1/api/v1/nodes")
	if err := check.Check(nil); err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "2 failures") {
		t.Errorf("after a refused connection: %v", err)
	}
	synced = true
	if err := check.Check(nil); err != nil {
		t.Errorf("once synced the check passes, got %v", err)
	}
	synced = false
	status = http.StatusOK
	get(srv.URL + "/api/v1/pods")
	if err := h.err(); err != nil {
		t.Errorf("after a success: %v, want nil", err)
	}
	if !errors.Is(check.Check(nil), nil) {
		t.Error("check fails after recovery")
	}
}
