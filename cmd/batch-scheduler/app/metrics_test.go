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
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	k8smetrics "k8s.io/component-base/metrics"
	metricsv1 "k8s.io/component-base/metrics/api/v1"
)

// The metric flags change component-base's process-wide settings. The
// tests here that set them do not call t.Parallel, so that no other test
// of the package runs meanwhile, and undo what they set: the allow-list
// in t.Cleanup. --disabled-metrics cannot be undone (component-base has no
// way to enable a disabled metric again), so it is tested in a child
// process.

// scrapeCommand runs the command with args (plus an unreachable API
// server and a plain HTTP port), waits until /metrics answers with every
// string of until in it, and returns the body. The command stops when
// the test ends.
func scrapeCommand(t *testing.T, until []string, args ...string) string {
	t.Helper()
	insecurePort := port(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, _, stderr := execute(t, ctx, append([]string{"--master=http://127.0.0.1:1", "--bind-address=127.0.0.1",
			"--secure-port=0", "--insecure-port", insecurePort}, args...))
		if code != 0 {
			t.Errorf("exit code %d: %s", code, stderr)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the command did not stop after its context was cancelled")
		}
	})
	client := &http.Client{Timeout: 5 * time.Second}
	var body string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+insecurePort+"/metrics", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return false, nil
		}
		body = string(b)
		for _, u := range until {
			if !strings.Contains(body, u) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("/metrics never served all of %q: %v (last body %.300q)", until, err, body)
	}
	return body
}

// wired are series that exist once the command has wired its event
// handler (the dispatcher takes its counters then), after it started
// serving.
var wired = []string{"\nbatch_scheduler_pending_jobs{", `handler_panics_total{event="add",resource="Node"} `, `handler_panics_total{event="add",resource="Pod"} `}

// typeLineRE finds the family name of each "# TYPE" line.
var typeLineRE = regexp.MustCompile(`(?m)^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) `)

// TestMetricsServedOnceWithStability: /metrics serves the scheduler's
// metrics with the legacy registry's (process, Go, client-go), each
// family once, with the stability level in front of the HELP text as
// component-base renders it.
func TestMetricsServedOnceWithStability(t *testing.T) {
	body := scrapeCommand(t, wired)
	families := map[string]int{}
	for _, m := range typeLineRE.FindAllStringSubmatch(body, -1) {
		families[m[1]]++
	}
	for name, n := range families {
		if n != 1 {
			t.Errorf("/metrics has %d families %s, want 1", n, name)
		}
	}
	for _, name := range []string{"go_goroutines", "process_start_time_seconds", "rest_client_requests_total", "registered_metrics_total",
		"batch_scheduler_pending_jobs", "batch_scheduler_cache_size", "batch_scheduler_pending_job_oldest_seconds"} {
		if families[name] != 1 && (name != "process_start_time_seconds" || fileExists("/proc/self/stat")) {
			t.Errorf("/metrics has no family %s", name)
		}
	}
	for _, want := range []string{
		"# HELP batch_scheduler_pending_jobs [BETA] Jobs waiting in the scheduling queue",
		"# HELP batch_scheduler_cache_size [ALPHA] Objects in the scheduler cache",
		// A custom collector, computed when scraped.
		"# HELP batch_scheduler_pending_job_oldest_seconds [BETA] How long the job",
		"# HELP batch_scheduler_events_handled_total [ALPHA] Informer events",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no line starting %q", want)
		}
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "# HELP batch_scheduler_") && !regexp.MustCompile(`^# HELP \S+ \[(ALPHA|BETA)\] `).MatchString(line) {
			t.Errorf("no stability level in %q", line)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestAllowMetricLabels: --allow-metric-labels limits a label to the
// values given; the others are served as "unexpected".
func TestAllowMetricLabels(t *testing.T) {
	t.Cleanup(k8smetrics.ResetLabelValueAllowLists)
	body := scrapeCommand(t, wired, "--allow-metric-labels=batch_scheduler_events_handled_total,resource=Pod")
	for _, want := range []string{
		`batch_scheduler_events_handled_total{event="add",resource="Pod"} `,
		// Node and every other resource.
		`batch_scheduler_events_handled_total{event="add",resource="unexpected"} `,
		// Another metric with the same label is not limited.
		`batch_scheduler_handler_panics_total{event="add",resource="Node"} `,
	} {
		if !strings.Contains(body, "\n"+want) {
			t.Errorf("/metrics has no series %s", want)
		}
	}
	if strings.Contains(body, `batch_scheduler_events_handled_total{event="add",resource="Node"}`) {
		t.Error(`/metrics has events_handled_total{resource="Node"}, which the allow-list leaves out`)
	}
}

// disabledChildEnv marks the child process of TestDisabledMetrics.
const disabledChildEnv = "BATCH_SCHEDULER_TEST_DISABLED_METRICS_CHILD"

// disabled are the metrics TestDisabledMetrics disables: a gauge vector,
// and a custom collector computed when scraped.
var disabled = []string{"batch_scheduler_cache_size", "batch_scheduler_pending_job_oldest_seconds"}

// TestDisabledMetrics: the metrics that --disabled-metrics names are not
// served, the others are. The command runs with the flag in a child
// process (this test binary again), since a disabled metric stays
// disabled for the whole process; here it runs without, to show that the
// metrics are there otherwise.
func TestDisabledMetrics(t *testing.T) {
	if os.Getenv(disabledChildEnv) == "1" {
		body := scrapeCommand(t, wired, "--disabled-metrics="+strings.Join(disabled, ","))
		for _, name := range disabled {
			if strings.Contains(body, name) {
				t.Errorf("/metrics serves the disabled %s", name)
			}
		}
		for _, want := range []string{"\nbatch_scheduler_pending_jobs{", "\nbatch_scheduler_events_handled_total{", "\ndisabled_metrics_total 2\n"} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics has no %q", strings.TrimSpace(want))
			}
		}
		t.Log("child checked /metrics")
		return
	}
	body := scrapeCommand(t, wired)
	for _, name := range disabled {
		if !strings.Contains(body, "\n"+name) {
			t.Fatalf("/metrics without --disabled-metrics has no %s: nothing to disable", name)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDisabledMetrics$", "-test.count=1", "-test.v")
	child.Env = append(os.Environ(), disabledChildEnv+"=1")
	out, err := child.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child checked /metrics") {
		t.Fatalf("the child process failed (%v):\n%s", err, out)
	}
}

// TestShowHiddenMetricsNeedsAPreviousMinor: component-base accepts only
// the previous minor version of the build; a build of minor version 0 has
// none. No metric of this project is deprecated, so nothing is hidden yet;
// the flag is there for when one is.
func TestShowHiddenMetricsNeedsAPreviousMinor(t *testing.T) {
	for _, tt := range []struct {
		flag, build string
		wantErr     string
	}{
		{"", "v0.0.0-dev+abc", ""},
		{"1.4", "v1.5.2", ""}, // component-base then compares 1.4 with 1.5
		{"0.99", "v0.0.0-dev+abc", "this build, v0.0.0-dev+abc, has no previous minor version"},
		{"0.99", "v1.0.3", "this build, v1.0.3, has no previous minor version"},
		{"1.4", "not-a-version", `the version of this build, "not-a-version", has no minor version`},
	} {
		err := checkPreviousMinorExists(tt.flag, tt.build)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("flag %q on build %s: %v, want no error", tt.flag, tt.build, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), flagShowHiddenMetrics+" ")):
			t.Errorf("flag %q on build %s: %v, want an error naming the flag and saying %q", tt.flag, tt.build, err, tt.wantErr)
		}
	}
	// A value that is not the previous minor version, by component-base's
	// check, names the flag too.
	errs := validateMetricsFlag(flagShowHiddenMetrics, metricsv1.MetricsConfiguration{ShowHiddenMetricsForVersion: "1.2"})
	if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), `--show-hidden-metrics-for-version "1.2": must be omitted or have the value`) {
		t.Errorf("component-base's check of 1.2 = %v, want one error naming the flag", errs)
	}
}
