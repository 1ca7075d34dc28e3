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
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/fairshare"
)

// The fairness phase of BenchmarkQueues (see BenchmarkQueues): queues of
// weights 1, 1, 2, 4 keep a backlog of gangs; the time-averaged share each
// runs vs its fair share, and the same workload without queues as the
// control.

// fairQueueResult is one queue of the fairness phase.
type fairQueueResult struct {
	name   string
	weight int64
	// fair is the queue's fair share of the cluster's CPU from
	// pkg/fairshare; measured the time-averaged share of the cluster's
	// CPU its running pods took, bound the same for its bound pods, and
	// ofUsed its part of the running CPU (measured / utilization).
	fair, measured, bound, ofUsed float64
	// schedFair is the fair share (CPUs) the scheduler computed last, from
	// its metrics; -1 if absent.
	schedFair float64
	// minPending and meanPending are the least and the mean CPU (milli)
	// the queue had pending at a sample of the measured window.
	minPending, meanPending int64
	// minDemand is the least, over the samples, of what the queue had
	// bound and pending ÷ its fair share: above 1, it always asked for
	// more than its share.
	minDemand float64
	evicted   int
	created   int64
}

type fairnessResult struct {
	// crash says how the scheduler crashed, if it did: the figures are
	// then those of the samples before it.
	crash  string
	queues []fairQueueResult
	// worst is the largest |measured/fair - 1|, worstBound the same with
	// the bound pods' shares (the scheduler's side, without the simulated
	// kubelets' lag); utilization the mean running CPU ÷ capacity,
	// boundUtil the same for bound pods.
	worst, worstBound, utilization, boundUtil float64
	samples                                   int
	startLagP50, startLagP99                  time.Duration
	violations                                []string
	deleted, gone                             int64
	cpu                                       cpuTimes
	elapsed                                   time.Duration
	metrics                                   map[string]float64
	// requests are the API server's requests during the phase.
	requests map[string]float64
}

// expectedShares computes the fair shares of queues (name → weight) from
// pkg/fairshare, every queue demanding more than capacity: the fraction of
// capacity each gets.
func expectedShares(capacity int64, names []string, weights []int64) map[string]float64 {
	var in []fairshare.Queue
	for i, name := range names {
		in = append(in, fairshare.Queue{Name: name, Weight: weights[i], Borrow: true, Lend: true,
			Demand: fairshare.Vector{v1.ResourceCPU: 2 * capacity}})
	}
	res := fairshare.Compute(fairshare.Vector{v1.ResourceCPU: capacity}, in)
	out := map[string]float64{}
	for _, name := range names {
		if sh, ok := res.Shares[name]; ok {
			out[name] = float64(sh.FairShare[v1.ResourceCPU]) / float64(capacity)
		}
	}
	return out
}

// runFairness runs phase 1 (see BenchmarkQueues). With control, it runs
// the same workload with the scheduler's queues disabled (no Queue object,
// the queue names on the pods ignored): the baseline of utilization and
// of what the division is without queues.
func runFairness(b *testing.B, e queueEnv, control bool) fairnessResult {
	s := e.s
	start := time.Now()
	ns := queueFairNamespace
	if control {
		ns += "-control"
	}
	createNamespace(b, e.admin, ns)
	var names []string
	var weights []int64
	for _, q := range fairQueues {
		if !control {
			createQueue(b, e.dyn, q.name, map[string]any{"weight": q.weight, "borrow": true})
		}
		names = append(names, q.name)
		weights = append(weights, q.weight)
	}
	var sched *queueScheduler
	if control {
		cfg := filepath.Join(b.TempDir(), "no-queues.yaml")
		if err := os.WriteFile(cfg, []byte("apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\neventHandlers:\n- name: default\n  args: {disableQueues: true}\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		sched = startQueueScheduler(b, e, "batch-scheduler-fairness-control", "--config-path", cfg)
	} else {
		sched = startQueueScheduler(b, e, "batch-scheduler-fairness")
	}
	label := "fairness"
	if control {
		label = "fairness (control, no queues)"
	}
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	deleter := startTerminalDeleter(ctx, e.pods, ns, 4)
	tr := newQueueTracker(b, e.pods, ns, s.settle, deleter.add)

	// Every queue demands (bound and pending) more than its fair share
	// at all times: a quarter more, and at least the backlog pending.
	fair := expectedShares(s.capacityMilli(), names, weights)
	gens := make([]*generator, len(fairQueues))
	var wg sync.WaitGroup
	for i, q := range fairQueues {
		floor := int64(fair[q.name] * float64(s.capacityMilli()) * 5 / 4)
		gens[i] = &generator{client: e.pods, ns: ns, queue: q.name, target: s.backlog, floor: floor, tr: tr,
			rng: rand.New(rand.NewPCG(s.seed, uint64(i))),
			next: func(rng *rand.Rand) queueJob {
				return queueJob{size: 1 + rng.IntN(8), runFor: fmt.Sprintf("%ds", 5+rng.IntN(11))}
			}}
		wg.Go(func() { gens[i].run(ctx) })
	}
	procs := e.withScheduler(sched)
	cpu0 := readCPU(procs)
	req0 := apiRequests(b, e.admin)
	phaseStart := time.Now()
	qlogf(label+": queues %v of weights %v, a backlog of %d CPUs each, %s (the first %s left out)", names, weights, s.backlog/1000, s.fairFor, s.fairSkip)
	var samples []queueSample
	tick := time.NewTicker(time.Second)
	for time.Since(phaseStart) < s.fairFor && !sched.crashed() {
		<-tick.C
		smp := tr.sample()
		if smp.at.Sub(phaseStart) >= s.fairSkip {
			samples = append(samples, smp)
		}
		if n := len(samples); n > 0 && n%30 == 0 {
			qlogf(label+": %s: running %d of %d CPUs: %s", smp.at.Sub(phaseStart).Round(time.Second), smp.runningTotal/1000, s.capacityMilli()/1000, perQueue(names, smp.running))
		}
	}
	tick.Stop()
	elapsed := time.Since(phaseStart)
	cancel()
	wg.Wait()
	cpu := readCPU(procs).sub(cpu0)
	reqs := subCounts(apiRequests(b, e.admin), req0)
	metrics, crash := sched.stop(b)
	violations := tr.finish()
	tr.close()
	deleter.close()

	r := fairnessResult{crash: crash, samples: len(samples), violations: violations, deleted: deleter.deleted.Load(), gone: deleter.gone.Load(), cpu: cpu, elapsed: elapsed, metrics: metrics, requests: reqs}
	r.startLagP50, r.startLagP99, _ = tr.startLagQuantiles()
	capacity := float64(s.capacityMilli())
	for _, smp := range samples {
		r.utilization += float64(smp.runningTotal) / capacity
		r.boundUtil += float64(smp.boundTotal) / capacity
	}
	n := float64(max(len(samples), 1))
	r.utilization /= n
	r.boundUtil /= n
	for i, q := range fairQueues {
		qr := fairQueueResult{name: q.name, weight: q.weight, fair: fair[q.name], minPending: math.MaxInt64, minDemand: math.Inf(1), schedFair: -1,
			evicted: len(tr.evictionsSince(q.name, start)), created: gens[i].created.Load()}
		for _, smp := range samples {
			qr.measured += float64(smp.running[q.name]) / capacity
			qr.bound += float64(smp.bound[q.name]) / capacity
			if smp.runningTotal > 0 {
				qr.ofUsed += float64(smp.running[q.name]) / float64(smp.runningTotal)
			}
			qr.minPending = min(qr.minPending, smp.pending[q.name])
			qr.minDemand = min(qr.minDemand, float64(smp.bound[q.name]+smp.pending[q.name])/(qr.fair*capacity))
			qr.meanPending += smp.pending[q.name]
		}
		qr.measured /= n
		qr.bound /= n
		qr.ofUsed /= n
		qr.meanPending /= int64(n)
		if len(samples) == 0 {
			qr.minPending, qr.minDemand = 0, 0
		}
		if v, ok := queueMetric(metrics, q.name, "fair_share"); ok {
			qr.schedFair = v
		}
		r.worst = max(r.worst, math.Abs(qr.measured/qr.fair-1))
		r.worstBound = max(r.worstBound, math.Abs(qr.bound/qr.fair-1))
		r.queues = append(r.queues, qr)
		if errs := gens[i].errs.Load(); errs > 0 {
			b.Errorf(label+": %d gangs of %s could not be created, the first: %v", errs, q.name, gens[i].err)
		}
	}
	for _, v := range violations {
		b.Errorf(label+": %s", v)
	}
	if crash != "" {
		b.Errorf(label+": %s", crash)
	}
	qlogf(label+": %d samples; utilization %.3f; worst |measured/fair - 1| %.3f; %d finished pods deleted", len(samples), r.utilization, r.worst, r.deleted)
	clearNamespace(b, e.pods, ns)
	deleteQueues(b, e.dyn, names...)
	qlogf(label+": done in %s", time.Since(start).Round(time.Second))
	return r
}

// perQueue renders amounts (milli-CPU) per queue in CPUs.
func perQueue(names []string, m map[string]int64) string {
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, m[n]/1000))
	}
	return strings.Join(parts, ", ")
}

// queueMetric reads batch_scheduler_queue_resources of queue, resource
// cpu and kind from the scheduler's metrics.
func queueMetric(m map[string]float64, queue, kind string) (float64, bool) {
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, "batch_scheduler_queue_resources{")
		if ok && strings.Contains(rest, `queue="`+queue+`"`) && strings.Contains(rest, `kind="`+kind+`"`) && strings.Contains(rest, `resource="cpu"`) {
			return v, true
		}
	}
	return 0, false
}

// sumMetric sums the samples of metric name (any labels).
func sumMetric(m map[string]float64, name string) float64 {
	var sum float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// byLabel renders the series of metric name in m by their labels, most
// first, as " (plugin=Reclaim 12, plugin=Reservation 3)"; "" when it has
// no labelled series.
func byLabel(m map[string]float64, name string) string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	for k, v := range m {
		if labels, ok := strings.CutPrefix(k, name+"{"); ok && v > 0 {
			list = append(list, kv{strings.ReplaceAll(strings.TrimSuffix(labels, "}"), `"`, ""), v})
		}
	}
	if len(list) == 0 {
		return ""
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v || list[i].v == list[j].v && list[i].k < list[j].k })
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = fmt.Sprintf("%s %.0f", e.k, e.v)
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// requestRates lists the API requests of reqs at 1/s or more (and the
// failed ones), most first, per second of elapsed.
func requestRates(reqs map[string]float64, elapsed time.Duration) string {
	type kv struct {
		k string
		v float64
	}
	var list []kv
	for k, v := range reqs {
		if k == apiServerGCKey {
			continue
		}
		if v/elapsed.Seconds() >= 1 || strings.Contains(k, "code") {
			list = append(list, kv{k, v / elapsed.Seconds()})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v || list[i].v == list[j].v && list[i].k < list[j].k })
	var parts []string
	for _, e := range list {
		parts = append(parts, fmt.Sprintf("%s %.1f", e.k, e.v))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
