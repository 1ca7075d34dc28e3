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

package benchmark

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The reclaim phase of BenchmarkQueues (see BenchmarkQueues): a borrower
// fills the cluster, a queue guaranteed a quarter of it submits gangs of 8.

// reclaimRep is one gang of the guaranteed queue.
type reclaimRep struct {
	// latency is from before its first create call to its 8th pod seen
	// Running; bound to its last pod seen bound; firstEviction to the
	// first eviction of a borrower's pod seen after the creation (0:
	// none).
	latency, bound, firstEviction time.Duration
	evicted                       int
	// settle is how long the cluster took to be full again before it.
	settle time.Duration
	full   bool
}

type reclaimResult struct {
	crash                   string
	reps                    []reclaimRep
	p50, max                time.Duration
	fill                    time.Duration
	gangsLost, podsLost     int
	maxBelow                time.Duration
	violations              []string
	startLagP50, startLag99 time.Duration
	metrics                 map[string]float64
	cpu                     cpuTimes
	requests                map[string]float64
	elapsed                 time.Duration
}

// runReclaim runs phase 2 (see BenchmarkQueues).
func runReclaim(b *testing.B, e queueEnv) reclaimResult {
	s := e.s
	start := time.Now()
	ns := queueReclaimNamespace
	createNamespace(b, e.admin, ns)
	capacity := s.capacityMilli()
	guarantee := capacity / 4
	createQueue(b, e.dyn, guaranteedQueue, map[string]any{"weight": int64(1), "guaranteed": map[string]any{"cpu": fmt.Sprintf("%dm", guarantee)}})
	createQueue(b, e.dyn, borrowerQueue, map[string]any{"weight": int64(1)})
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	tr := newQueueTracker(b, e.pods, ns, s.settle, nil)

	// The borrower fills the cluster, and 2 gangs more wait. Its pods are
	// all there when the scheduler starts: created while it runs, the
	// gangs' first pods would each be told that the rest is missing, and
	// the scheduler crashes once it has written that to more than 1024
	// pods (pkg/scheduler/status.go: maybeSweep drops the entry it has
	// just added, and run dereferences it; the fairness phase shows it).
	gangs := int(capacity/1000)/reclaimGangSize + 2
	err := parallel(gangs*reclaimGangSize, setupWorkers, func(i int) error {
		gang := fmt.Sprintf("%s-%05d", borrowerQueue, i/reclaimGangSize)
		pod := queuePod(ns, fmt.Sprintf("%s-%d", gang, i%reclaimGangSize), borrowerQueue, gang, reclaimGangSize, "1", queueRunForever)
		_, err := e.pods.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	sched := startQueueScheduler(b, e, "batch-scheduler-reclaim")
	procs := e.withScheduler(sched)
	cpu0 := readCPU(procs)
	req0 := apiRequests(b, e.admin)
	reclaimStart := time.Now()
	fillStart := time.Now()
	var r reclaimResult
	if _, ok := waitFull(tr, sched, capacity, 5*time.Minute); !ok {
		smp := tr.sample()
		if _, crash := sched.stop(b); crash != "" {
			b.Fatalf("reclaim: %s", crash)
		}
		b.Fatalf("reclaim: the borrower's %d gangs never filled the cluster: %d of %d CPUs running after 5 minutes", gangs, smp.runningTotal/1000, capacity/1000)
	}
	r.fill = time.Since(fillStart)
	qlogf("reclaim: the borrower's %d gangs of %d, pending, filled %d CPUs in %s from the scheduler's start; a guarantee of %d CPUs", gangs-2, reclaimGangSize, capacity/1000, r.fill.Round(time.Millisecond), guarantee/1000)
	// It keeps 2 gangs pending: what reclaim frees beyond the guaranteed
	// gang's need is filled again.
	gen := &generator{client: e.pods, ns: ns, queue: borrowerQueue, target: 2 * reclaimGangSize * 1000, tr: tr,
		rng:  rand.New(rand.NewPCG(s.seed, 100)),
		next: func(*rand.Rand) queueJob { return queueJob{size: reclaimGangSize, runFor: queueRunForever} }, gangs: gangs}
	var wg sync.WaitGroup
	wg.Go(func() { gen.run(ctx) })

	for i := range s.reps {
		if sched.crashed() {
			break
		}
		settle, full := waitFull(tr, sched, capacity, 2*time.Minute)
		if !full {
			smp := tr.sample()
			qlogf("reclaim: the cluster was not full again after %s (%d of %d CPUs running, %d pods being deleted); going on", settle.Round(time.Millisecond),
				smp.runningTotal/1000, capacity/1000, smp.deleting)
		}
		gang := fmt.Sprintf("%s-%d", guaranteedQueue, i)
		t0 := time.Now()
		if err := createGang(ctx, e.pods, ns, guaranteedQueue, gang, reclaimGangSize, queueRunForever); err != nil {
			b.Fatal(err)
		}
		var boundAt, runningAt time.Time
		ok := false
		deadline := t0.Add(3 * time.Minute)
		for !ok && time.Now().Before(deadline) && !sched.crashed() {
			time.Sleep(20 * time.Millisecond)
			boundAt, runningAt, _, ok = tr.gangTimes(gang, reclaimGangSize)
		}
		if sched.crashed() {
			break
		}
		if !ok {
			_, _, n, _ := tr.gangTimes(gang, reclaimGangSize)
			b.Errorf("reclaim: gang %s had %d of %d pods Running 3 minutes after its creation; its pods say: %s", gang, n, reclaimGangSize, podMessages(b, e.admin, ns, gang))
			break
		}
		rep := reclaimRep{latency: runningAt.Sub(t0), bound: boundAt.Sub(t0), settle: settle, full: full}
		ev := tr.evictionsSince(borrowerQueue, t0)
		rep.evicted = len(ev)
		if len(ev) > 0 {
			rep.firstEviction = ev[0].Sub(t0)
		}
		r.reps = append(r.reps, rep)
		qlogf("reclaim %d: gang %s Running after %s (bound after %s, first eviction after %s, %d borrower pods evicted; cluster full again after %s)", i+1, gang,
			rep.latency.Round(time.Millisecond), rep.bound.Round(time.Millisecond), rep.firstEviction.Round(time.Millisecond), rep.evicted, settle.Round(time.Millisecond))
	}
	// Evictions still in flight end; then a gang below its quorum is one
	// that lost part of its pods for good.
	waitFull(tr, sched, capacity, time.Minute)
	time.Sleep(time.Second)
	cancel()
	wg.Wait()
	r.cpu = readCPU(procs).sub(cpu0)
	r.requests = subCounts(apiRequests(b, e.admin), req0)
	r.elapsed = time.Since(reclaimStart)
	r.metrics, r.crash = sched.stop(b)
	if r.crash != "" {
		b.Errorf("reclaim: %s", r.crash)
	}
	r.violations = tr.finishStrict()
	tr.close()
	r.gangsLost, r.podsLost, r.maxBelow = tr.gangLosses(borrowerQueue)
	r.startLagP50, r.startLag99, _ = tr.startLagQuantiles()
	for _, v := range r.violations {
		b.Errorf("reclaim: %s", v)
	}
	if errs := gen.errs.Load(); errs > 0 {
		b.Errorf("reclaim: %d of the borrower's gangs could not be created, the first: %v", errs, gen.err)
	}
	if len(r.reps) > 0 {
		lat := make([]time.Duration, len(r.reps))
		for i, rep := range r.reps {
			lat[i] = rep.latency
		}
		slices.Sort(lat)
		r.p50, r.max = lat[(len(lat)-1)/2], lat[len(lat)-1]
	}
	clearNamespace(b, e.pods, ns)
	deleteQueues(b, e.dyn, guaranteedQueue, borrowerQueue)
	qlogf("reclaim: done in %s", time.Since(start).Round(time.Second))
	return r
}

// waitFull waits until the running pods take the whole capacity and no
// pod is being deleted, and returns how long it waited; it gives up early
// when the scheduler crashed.
func waitFull(tr *queueTracker, sched *queueScheduler, capacity int64, timeout time.Duration) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < timeout && !sched.crashed() {
		if smp := tr.sample(); smp.runningTotal >= capacity && smp.deleting == 0 {
			return time.Since(start), true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start), false
}

// podMessages lists the PodScheduled messages of the pods of gang.
func podMessages(b testing.TB, client kubernetes.Interface, ns, gang string) string {
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range list.Items {
		if p.Annotations[framework.GroupNameAnnotation] != gang {
			continue
		}
		msg := string(p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled {
				msg += " " + c.Reason + ": " + c.Message
			}
		}
		out = append(out, fmt.Sprintf("%s on %q: %s", p.Name, p.Spec.NodeName, msg))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
