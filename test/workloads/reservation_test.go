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

package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/standing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// Reservation invariants, judged on a cluster whose queue never empties:
// 8 nodes of 1 CPU, three feeders streaming one-CPU single Jobs of 2 to 5
// s (half say their runtime, half do not), and a gang Job of 4 one-CPU
// pods of 3 s arriving every 6 s. batch-scheduler runs with reservations
// on. A checker reads /debug/standing every 200 ms and watches every pod:
//
//   - a reservation is never given away: no pod of another job, created
//     after a node was reserved, lands on that node while it stays
//     reserved, unless it backfills: it says its runtime, its binding
//     names the reserving job (framework.BackfilledIntoAnnotation) and
//     the reservation's expected start the scheduler judged it against
//     (BackfillDeadlineAnnotation), and its runtime from its creation
//     ends by then. The binding is the record: a reservation is re-made
//     several times a second as pods end, each time with a new start,
//     and reads of /debug/standing 200 ms apart miss some versions;
//   - backfill never delays a reserved gang: a gang whose reservation
//     held until it started starts within reservationTolerance of the
//     start its reservation expected last;
//   - only the gangs reserve (a single Job is a gang of quorum 1 to the
//     scheduler, and takes the room as its turn comes);
//   - no gang runs below its quorum (the pod watcher).
//
// Every gang must start, and at least two must have reserved, or the
// scene tested nothing.
func TestReservationInvariantsUnderBacklog(t *testing.T) {
	ns := setup(t, 8, "1")
	watch(t, ns, func(job string) int {
		if strings.HasPrefix(job, "gang-") {
			return 4
		}
		return 1
	})
	addr, err := harness.FreeAddress()
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	startScheduler(t, "--config-path="+reservationConfig(t), "--insecure-bind-address="+host, "--insecure-port="+port)

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	chk := newReservationChecker()
	var wg sync.WaitGroup
	wg.Go(func() { chk.pollStanding(ctx, t, "http://"+addr+standing.Path) })
	wg.Go(func() { chk.watchPods(ctx, t, ns) })

	var fed sync.WaitGroup
	for f := range 3 {
		fed.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(f), 36))
			for i := 0; ctx.Err() == nil; i++ {
				runFor := fmt.Sprintf("%ds", 2+rng.IntN(4))
				ann := map[string]string{controlplane.RunForAnnotation: runFor}
				if rng.IntN(2) == 0 {
					ann[framework.ExpectedRuntimeAnnotation] = runFor
				}
				j := gangJob(ns, fmt.Sprintf("s%d-%d", f, i), 1, "1", ann)
				delete(j.Spec.Template.Annotations, "batch-scheduler.io/job-gang")
				if _, err := cp.Client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
					t.Errorf("creating a single: %v", err)
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(700+rng.IntN(600)) * time.Millisecond):
				}
			}
		})
	}
	const gangs = 6
	var names []string
	for i := range gangs {
		time.Sleep(6 * time.Second)
		name := fmt.Sprintf("gang-%d", i)
		createJob(t, gangJob(ns, name, 4, "1", map[string]string{controlplane.RunForAnnotation: "3s", framework.ExpectedRuntimeAnnotation: "3s"}))
		names = append(names, name)
	}
	// Every gang starts, the singles still streaming.
	err = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		return chk.allStarted(names, 4), nil
	})
	stop()
	fed.Wait()
	wg.Wait()
	if err != nil {
		t.Errorf("not every gang started within 90 s of the last one's creation: started %v", chk.startedOf(names, 4))
	}
	for _, v := range chk.violations(4) {
		t.Error(v)
	}
	reserved, judged, backfilled := chk.summary(4)
	t.Logf("%d gangs reserved, %d judged on their start, %d pods backfilled (by their binding), %d standing reads", reserved, judged, backfilled, chk.reads)
	if reserved < 2 {
		t.Errorf("only %d gangs reserved: the scene did not exercise reservations", reserved)
	}
}

// reservationTolerance is how much later than its reservation expected a
// gang may start: the simulated kubelets end pods, and the informers
// report it, a few seconds late on a busy machine.
const reservationTolerance = 10 * time.Second

// reservationConfig writes a configuration with reservations on.
func reservationConfig(t *testing.T) string {
	t.Helper()
	cfg := t.TempDir() + "/config.yaml"
	writeFile(t, cfg, `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: batch-scheduler
  plugins:
    postFilter:
      disabled:
      - name: "*"
      enabled:
      - name: Reservation
      - name: Reclaim
      - name: DefaultPreemption
`)
	return cfg
}

// reservationChecker records what /debug/standing said of reservations
// and when each pod was bound, and judges them afterwards.
type reservationChecker struct {
	// mu guards everything below.
	mu sync.Mutex
	// polls are the times of the standing reads, in order; held[i] the
	// reservations read at polls[i], by Job name.
	polls []time.Time
	held  []map[string]standing.Reservation
	// binds are the pods first seen bound, in order.
	binds []boundPod
	reads int
}

type boundPod struct {
	pod, job, node string
	// at is when the bind was seen, created the pod's creation time (to
	// the second, rounded down).
	at, created time.Time
	// runtime is the pod's expected runtime; 0 for none.
	runtime time.Duration
	// backfilled is the job its binding says it backfilled into ("" for
	// none), by Job name, and deadline the reservation's expected start
	// the binding gives (zero when absent or malformed).
	backfilled string
	deadline   time.Time
}

func newReservationChecker() *reservationChecker { return &reservationChecker{} }

// pollStanding reads url every 200 ms until ctx ends.
func (c *reservationChecker) pollStanding(ctx context.Context, t *testing.T, url string) {
	client := &http.Client{Timeout: 2 * time.Second}
	for ctx.Err() == nil {
		before := time.Now()
		if rep, err := readStanding(ctx, client, url); err == nil {
			held := map[string]standing.Reservation{}
			for _, j := range rep.Jobs {
				if j.Reservation != nil {
					held[jobName(j.Job)] = *j.Reservation
				}
			}
			c.mu.Lock()
			// A read is placed at its request's start: what it says
			// held then or later.
			c.polls = append(c.polls, before)
			c.held = append(c.held, held)
			c.reads++
			c.mu.Unlock()
		} else if ctx.Err() == nil {
			t.Logf("reading %s: %v", url, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func readStanding(ctx context.Context, client *http.Client, url string) (*standing.Report, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	var rep standing.Report
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return nil, fmt.Errorf("decoding the standing: %w", err)
	}
	return &rep, nil
}

// jobName is the Job's name in a job ID ("ns/Job:name" or "ns/name").
func jobName(id string) string {
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == ':' || id[i] == '/' {
			return id[i+1:]
		}
	}
	return id
}

// watchPods records each pod of ns the first time it is seen bound.
func (c *reservationChecker) watchPods(ctx context.Context, t *testing.T, ns string) {
	seen := map[string]bool{}
	for ctx.Err() == nil {
		w, err := cp.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() == nil {
				t.Logf("watching the pods of %s: %v", ns, err)
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type == apiwatch.Deleted || pod.Spec.NodeName == "" || seen[pod.Name] {
				continue
			}
			seen[pod.Name] = true
			b := boundPod{pod: pod.Name, job: pod.Labels[batchv1.JobNameLabel], node: pod.Spec.NodeName, at: time.Now(), created: pod.CreationTimestamp.Time}
			if d, ok, _ := framework.ExpectedRuntime(pod); ok {
				b.runtime = d
			}
			if into, ok := pod.Annotations[framework.BackfilledIntoAnnotation]; ok {
				b.backfilled = jobName(into)
				b.deadline, _ = time.Parse(time.RFC3339Nano, pod.Annotations[framework.BackfillDeadlineAnnotation])
			}
			c.mu.Lock()
			c.binds = append(c.binds, b)
			c.mu.Unlock()
		}
		w.Stop()
	}
}

// startOf is when the quorum-th pod of job was seen bound; false before.
func (c *reservationChecker) startOf(job string, quorum int) (time.Time, bool) {
	n := 0
	for _, b := range c.binds {
		if b.job == job {
			if n++; n == quorum {
				return b.at, true
			}
		}
	}
	return time.Time{}, false
}

func (c *reservationChecker) allStarted(jobs []string, quorum int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, j := range jobs {
		if _, ok := c.startOf(j, quorum); !ok {
			return false
		}
	}
	return true
}

func (c *reservationChecker) startedOf(jobs []string, quorum int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, j := range jobs {
		if _, ok := c.startOf(j, quorum); ok {
			out = append(out, j)
		}
	}
	return out
}

// violations judges the record (see TestReservationInvariantsUnderBacklog).
func (c *reservationChecker) violations(quorum int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	// Given away: a pod bound to a node that the first read after the
	// bind shows held for another job without a break since before the
	// pod was created (the reservation's heldSince for the node; a
	// creation time is whole seconds, so before it is surely before the
	// pod existed), unless the holder started by then or the pod
	// backfilled. A bind is seen some time after the scheduler decided
	// it, so the pod's creation, not the bind, tells that the node was
	// held before the decision; and reads 200 ms apart cannot tell a
	// reservation that moved off the node and back between two of them
	// from one that stayed: heldSince can. The decision came after the
	// pod's creation, so a pod whose runtime from its creation outlasts
	// the deadline its binding gives surely broke the backfill rule.
	for _, b := range c.binds {
		i, _ := slices.BinarySearchFunc(c.polls, b.at, func(p, at time.Time) int { return p.Compare(at) })
		if i == 0 || i >= len(c.polls) {
			continue
		}
		for holder, r := range c.held[i] {
			if holder == b.job || !slices.Contains(r.Nodes, b.node) {
				continue
			}
			since, ok := r.HeldSince[b.node]
			if !ok || !since.Before(b.created) {
				continue // not held without a break since before the pod existed
			}
			if start, started := c.startOf(holder, quorum); started && !start.After(b.at) {
				continue
			}
			if b.backfilled == holder {
				continue // judged below
			}
			out = append(out, fmt.Sprintf("pod %s (runtime %s, created %s) was bound at %s to %s, held for %s since %s without a break, and its binding names no backfill of %s (backfilled into %q): the reservation was given away; %s's reservation read from the pod's creation on: %s",
				b.pod, b.runtime, b.created.Format("15:04:05"), b.at.Format("15:04:05.000"), b.node, holder, since.Format("15:04:05.000"), holder, b.backfilled,
				holder, c.historyOf(holder, b.created.Add(-time.Second), b.at.Add(time.Second))))
		}
	}
	// A backfill the scheduler claims must keep the rule.
	for _, b := range c.binds {
		if b.backfilled == "" {
			continue
		}
		why := ""
		switch {
		case b.runtime <= 0:
			why = "it says no runtime"
		case b.deadline.IsZero():
			why = "its binding gives no valid " + framework.BackfillDeadlineAnnotation
		case b.created.Add(b.runtime).After(b.deadline):
			why = fmt.Sprintf("its runtime from its creation outlasts the deadline %s its binding gives", b.deadline.Format("15:04:05.000"))
		default:
			continue
		}
		out = append(out, fmt.Sprintf("pod %s (runtime %s, created %s), bound at %s to %s, backfilled into %s's reservation, but %s", b.pod, b.runtime,
			b.created.Format("15:04:05"), b.at.Format("15:04:05.000"), b.node, b.backfilled, why))
	}
	// Only gangs (of quorum 2 or more) reserve; the singles take the
	// room as their turn comes.
	for holder := range c.lastHeld() {
		if !strings.HasPrefix(holder, "gang-") {
			out = append(out, fmt.Sprintf("%s, a Job of one pod, held a reservation", holder))
		}
	}
	// Delayed: a gang whose reservation held until it started must start
	// by its last expected start, within the tolerance.
	for holder, last := range c.lastHeld() {
		start, ok := c.startOf(holder, quorum)
		if !ok || last.r.Start == nil || start.Sub(last.at) > time.Second {
			continue // not started, start unknown, or the reservation ended before
		}
		if late := start.Sub(*last.r.Start); late > reservationTolerance {
			out = append(out, fmt.Sprintf("gang %s started %s after its reservation expected (%s): backfill or others delayed it", holder, late.Round(time.Millisecond), last.r.Start.Format("15:04:05")))
		}
	}
	return out
}

// historyOf lists what the reads from..to said of holder's reservation:
// its nodes and expected start at each read where either changed.
func (c *reservationChecker) historyOf(holder string, from, to time.Time) string {
	var out []string
	last := "?"
	for i, at := range c.polls {
		if at.Before(from) || at.After(to) {
			continue
		}
		now := "none"
		if r, ok := c.held[i][holder]; ok {
			start := "unknown"
			if r.Start != nil {
				start = r.Start.Format("15:04:05.000")
			}
			now = fmt.Sprintf("nodes %v start %s made %s", r.Nodes, start, r.Made.Format("15:04:05.000"))
		}
		if now != last {
			out = append(out, at.Format("15:04:05.000")+" "+now)
			last = now
		}
	}
	return strings.Join(out, "; ")
}

type lastReservation struct {
	at time.Time
	r  standing.Reservation
}

// lastHeld is each holder's last reservation read, with the read's time.
func (c *reservationChecker) lastHeld() map[string]lastReservation {
	out := map[string]lastReservation{}
	for i, held := range c.held {
		for holder, r := range held {
			out[holder] = lastReservation{at: c.polls[i], r: r}
		}
	}
	return out
}

// summary counts the gangs that reserved, those judged on their start,
// and the pods whose binding says they backfilled.
func (c *reservationChecker) summary(quorum int) (reserved, judged, backfilled int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for holder, last := range c.lastHeld() {
		reserved++
		if start, ok := c.startOf(holder, quorum); ok && last.r.Start != nil && start.Sub(last.at) <= time.Second {
			judged++
		}
	}
	for _, b := range c.binds {
		if b.backfilled != "" {
			backfilled++
		}
	}
	return reserved, judged, backfilled
}
