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

package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	k8smetrics "k8s.io/component-base/metrics"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestPickHighest(t *testing.T) {
	var nodes []*framework.NodeInfo
	for _, name := range []string{"a", "b", "c", "d"} {
		nodes = append(nodes, framework.NewNodeInfo(st.MakeNode().Name(name).Obj()))
	}
	scores := func(s ...int64) []framework.NodeScore {
		out := make([]framework.NodeScore, len(s))
		for i, v := range s {
			out[i] = framework.NodeScore{Name: nodes[i].Name(), Score: v}
		}
		return out
	}
	tests := []struct {
		name   string
		scores []framework.NodeScore
		// want are the nodes that may be picked.
		want []string
	}{
		{"unique highest first", scores(90, 10, 20, 30), []string{"a"}},
		{"unique highest in the middle", scores(10, 20, 300, 30), []string{"c"}},
		{"unique highest last", scores(10, 20, 30, 31), []string{"d"}},
		{"two tied", scores(10, 50, 20, 50), []string{"b", "d"}},
		{"a tie below the highest does not count", scores(40, 40, 90, 10), []string{"c"}},
		{"all tied", scores(7, 7, 7, 7), []string{"a", "b", "c", "d"}},
		{"a later tie after a new highest", scores(50, 50, 60, 60), []string{"c", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[string]int{}
			const rounds = 400
			for range rounds {
				seen[pickHighest(nodes, tt.scores).Name()]++
			}
			for name := range seen {
				if !contains(tt.want, name) {
					t.Errorf("picked %s, want one of %v (seen %v)", name, tt.want, seen)
				}
			}
			// Ties are broken at random: each tied node wins sometimes.
			// (Missing one of 4 in 400 fair draws has odds below 1e-49.)
			for _, name := range tt.want {
				if seen[name] == 0 {
					t.Errorf("never picked %s of the tied %v in %d rounds (seen %v)", name, tt.want, rounds, seen)
				}
			}
		})
	}
	t.Run("scores of unknown nodes fall back to the first node", func(t *testing.T) {
		got := pickHighest(nodes, []framework.NodeScore{{Name: "x", Score: 1}, {Name: "y", Score: 0}})
		if got != nodes[0] {
			t.Errorf("picked %s, want %s", got.Name(), nodes[0].Name())
		}
	})
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestNewValidates(t *testing.T) {
	c, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	rec := events.NewFakeRecorder(1)
	profiles := map[string]*frameworkruntime.Framework{testSchedulerName: {}}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"no cache", Options{Queue: c.Queue(), Client: client, Recorder: rec, Profiles: profiles}, "cache, queue, client and event recorder are required"},
		{"no client", Options{Cache: c, Queue: c.Queue(), Recorder: rec, Profiles: profiles}, "cache, queue, client and event recorder are required"},
		{"no recorder", Options{Cache: c, Queue: c.Queue(), Client: client, Profiles: profiles}, "cache, queue, client and event recorder are required"},
		{"no profiles", Options{Cache: c, Queue: c.Queue(), Client: client, Recorder: rec}, "no profiles"},
		{"empty profiles", Options{Cache: c, Queue: c.Queue(), Client: client, Recorder: rec, Profiles: map[string]*frameworkruntime.Framework{}}, "no profiles"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New = %v, %v; want an error containing %q", s, err, tt.wantErr)
			}
			if s != nil {
				t.Errorf("New returned a scheduler with its error")
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	c, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := Options{Cache: c, Queue: c.Queue(), Client: fake.NewClientset(), Recorder: events.NewFakeRecorder(1),
		Profiles: map[string]*frameworkruntime.Framework{testSchedulerName: {}}}
	tests := []struct {
		name               string
		concurrency, tries int
		backoff            time.Duration
		wantConcurrency    int
		wantTries          int
		wantBackoff        time.Duration
	}{
		{"zero values are defaulted", 0, 0, 0, DefaultBindConcurrency, 3, 100 * time.Millisecond},
		{"negative values are defaulted", -1, -2, -time.Second, DefaultBindConcurrency, 3, 100 * time.Millisecond},
		{"given values are kept", 4, 5, time.Second, 4, 5, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base
			opts.BindConcurrency, opts.BindAttempts, opts.BindBackoff = tt.concurrency, tt.tries, tt.backoff
			s, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if s.binds.max != tt.wantConcurrency || s.opts.BindAttempts != tt.wantTries || s.opts.BindBackoff != tt.wantBackoff {
				t.Errorf("concurrency %d, attempts %d, backoff %v; want %d, %d, %v",
					s.binds.max, s.opts.BindAttempts, s.opts.BindBackoff, tt.wantConcurrency, tt.wantTries, tt.wantBackoff)
			}
			if s.metrics == nil || s.metrics.Attempts == nil {
				t.Errorf("no metrics were created")
			}
			if s.queue != c.Queue() || s.snapshot == nil {
				t.Errorf("the scheduler does not use the cache's queue, or has no snapshot")
			}
		})
	}
}

func TestNewMetricsRegisters(t *testing.T) {
	reg := k8smetrics.NewKubeRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Attempts.WithLabelValues(resultScheduled, "p").Inc()
	m.AttemptDuration.WithLabelValues(resultScheduled, "p").Observe(1)
	m.E2ELatency.Observe(1)
	m.BindErrors.Inc()
	m.PodsBound.Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, name := range []string{
		"batch_scheduler_schedule_attempts_total",
		"batch_scheduler_scheduling_attempt_duration_seconds",
		"batch_scheduler_pod_scheduling_e2e_duration_seconds",
		"batch_scheduler_bind_errors_total",
		"batch_scheduler_pods_bound_total",
	} {
		if !got[name] {
			t.Errorf("metric %s is not registered (got %v)", name, got)
		}
	}
	// A second set cannot register the same names.
	if _, err := NewMetrics(reg); err == nil || !strings.Contains(err.Error(), "registering the scheduling metrics") {
		t.Errorf("second NewMetrics on the same registry: err = %v, want a registration error", err)
	}
}

// Run schedules until its context ends, then waits for its binds.
func TestRun(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "4")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.sched.Run(ctx)
	}()
	for i := range 3 {
		h.addPod(st.MakePod().Name(fmt.Sprintf("p-%d", i)).Req(res{v1.ResourceCPU: "1"}).Obj())
	}
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return len(h.bindings()) == 3, nil
	}); err != nil {
		t.Fatalf("the pods were not bound: %v (bound %v)", err, h.boundTo())
	}
	cancel()
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		select {
		case <-done:
			return true, nil
		default:
			return false, nil
		}
	}); err != nil {
		t.Fatalf("Run did not return after its context ended: %v", err)
	}
	if got := h.attempts(resultScheduled); got != 3 {
		t.Errorf("Attempts{scheduled} = %v, want 3", got)
	}
	if got := h.requestedCPU("n1"); got != 3000 {
		t.Errorf("n1 requested %dm, want 3000m", got)
	}
}
