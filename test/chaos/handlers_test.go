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

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// panicLabel makes the chaos handler panic on a pod or node carrying it.
const panicLabel = "chaos/panic"

// Fault 6: a vendor handler (the default one, embedded) that panics on
// every pod and node labelled chaos/panic. Each panic must be recovered,
// logged with the object's key and counted; the other objects are
// scheduled as usual, and the checker finds no difference but the
// refused objects.
func TestHandlerPanicsOnSomeObjects(t *testing.T) {
	e := setup(t, options{handler: "chaos", env: []string{"CHAOS_PANIC_LABEL=" + panicLabel},
		nodeLabels: map[int]map[string]string{3: {panicLabel: "true"}},
		loadLabels: map[string]string{panicLabel: "true"}, labelEvery: 5,
		// The refused objects differ for good: each checker run re-checks
		// them for its whole re-check window (15.5 s by default).
		bound: 60 * time.Second})
	panicNode := e.nodes[3]
	e.waitBinds(5, 60*time.Second, "scheduling the pods without the label")
	podwatch.Pause(t.Context(), phase())
	e.checkAlive()

	refused := map[string]bool{panicNode: true}
	for _, key := range e.load.Labelled() {
		refused[key] = true
	}
	if len(refused) < 2 {
		t.Fatal("the load labelled no pod")
	}
	// Each refused object is named in a log line of the panic.
	logText := e.sched().Log()
	for _, key := range []string{panicNode, e.load.Labelled()[0]} {
		if !strings.Contains(logText, `"Event handler panicked; event dropped"`) || !strings.Contains(logText, `key="`+key+`"`) {
			t.Errorf("no log line of a handler panic names %s", key)
		}
	}
	// Counted, by resource.
	vec, err := e.sched().Metrics(t.Context(), "batch_scheduler_handler_panics_total")
	if err != nil {
		t.Fatal(err)
	}
	byResource := map[string]float64{}
	for _, s := range vec {
		byResource[string(s.Metric["resource"])] += float64(s.Value)
	}
	var pods, nodes float64
	for r, v := range byResource {
		switch strings.ToLower(r) {
		case "pod", "pods":
			pods += v
		case "node", "nodes":
			nodes += v
		}
	}
	if pods < 1 || nodes < 1 {
		t.Errorf("batch_scheduler_handler_panics_total by resource = %v, want pods and nodes >= 1", byResource)
	}
	// Nothing refused got bound; the others were.
	for key, node := range e.watcher.BoundTo() {
		if refused[key] {
			t.Errorf("pod %s, which the handler refused, was bound to %s", key, node)
		}
		if node == panicNode {
			t.Errorf("pod %s was bound to node %s, which the handler refused", key, node)
		}
	}
	// The refused objects, and the jobs (gangs) of refused pods, differ
	// on purpose: the handler never let them into the cache.
	o := outcome{expected: func(d Difference) bool {
		return d.Name == panicNode || slices.ContainsFunc(e.load.Labelled(), func(k string) bool {
			return k == d.Name || strings.HasPrefix(k, d.Name+"-")
		})
	}}
	e.recover(e.sched(), &o)
	o.note = fmt.Sprintf("panics: pods %.0f, nodes %.0f; %d labelled pods and 1 node refused, none bound", pods, nodes, len(e.load.Labelled()))
	e.finish("6. handler panics on labelled objects", &o)
}

// schedulerHasFlag says whether the scheduler binary knows flag.
func schedulerHasFlag(t *testing.T, flag string) bool {
	t.Helper()
	out, err := exec.Command(schedulerBinary, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", schedulerBinary, err, out)
	}
	return strings.Contains(string(out), "--"+flag+" ")
}

// Fault 7: a handler that takes 100 ms per pod and node event, under the
// load and a burst of 15 pods. No event may be lost (the checker finds no
// difference once the backlog drained), and while it lasts the backlog
// metrics and /readyz (event-backlog, --max-event-delay=1s) show it.
func TestSlowHandler(t *testing.T) {
	const maxDelay = "--max-event-delay"
	hasFlag := schedulerHasFlag(t, strings.TrimPrefix(maxDelay, "--"))
	var args []string
	if hasFlag {
		args = append(args, maxDelay+"=1s")
	} else {
		t.Errorf("the scheduler has no %s flag: the event-backlog readiness check (branch h-inproc) is not merged", maxDelay)
	}
	e := setup(t, options{handler: "chaos", env: []string{"CHAOS_HANDLER_DELAY=100ms"}, args: args,
		interval: 500 * time.Millisecond, maxLive: 20, bound: 90 * time.Second})
	e.waitBinds(3, 60*time.Second, "scheduling before the burst")
	e.load.Burst(t.Context(), 15)

	var maxBacklog, maxOldest float64
	var notReady string
	metricsSeen := false
	end := time.Now().Add(phase())
	_ = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, phase(), true, func(ctx context.Context) (bool, error) {
		if b, found, err := e.sched().Sum(ctx, "batch_scheduler_event_handler_backlog", nil); err == nil && found {
			metricsSeen = true
			maxBacklog = max(maxBacklog, b)
		}
		if vec, err := e.sched().Metrics(ctx, "batch_scheduler_event_handler_oldest_pending_seconds"); err == nil {
			for _, s := range vec {
				maxOldest = max(maxOldest, float64(s.Value))
			}
		}
		if code, body, err := e.sched().Get(ctx, "/readyz?verbose"); err == nil && code == http.StatusServiceUnavailable && strings.Contains(string(body), "event-backlog") && notReady == "" {
			notReady = string(body)
		}
		return time.Now().After(end), nil
	})
	e.checkAlive()
	if !metricsSeen {
		t.Error("/metrics has no batch_scheduler_event_handler_backlog: the backlog metric (branch h-inproc) is not merged")
	} else {
		if maxBacklog < 1 {
			t.Errorf("batch_scheduler_event_handler_backlog never went above 0 under a 100 ms handler")
		}
		if maxOldest < 1 {
			t.Errorf("batch_scheduler_event_handler_oldest_pending_seconds peaked at %.2f s, want >= 1 s after a burst of 15 pods at 100 ms per event", maxOldest)
		}
	}
	if hasFlag && notReady == "" {
		t.Errorf("/readyz never failed its event-backlog check with %s=1s", maxDelay)
	}
	var o outcome
	e.recover(e.sched(), &o)
	// Drained: the backlog is gone and the scheduler is ready again.
	if metricsSeen {
		err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			b, _, err := e.sched().Sum(ctx, "batch_scheduler_event_handler_backlog", nil)
			return err == nil && b == 0, nil
		})
		if err != nil {
			t.Error("the event backlog did not drain within 60 s")
		}
	}
	if err := e.sched().WaitReady(t.Context(), 60*time.Second); err != nil {
		t.Error(err)
	}
	o.note = fmt.Sprintf("100 ms per event; backlog peak %.0f, oldest pending peak %.1f s, readyz event-backlog failed: %v", maxBacklog, maxOldest, notReady != "")
	e.finish("7. handler taking 100 ms per event", &o)
}
