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
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The backlog phase of BenchmarkQueues (issue 36): every queue backlogged,
// one of them with big gangs, the others with single pods and small
// gangs; run once with the default profile (reservations on) and once
// with the Reservation plugin left out, as the default was before.

// Variants of the backlog phase (BENCH_QUEUE_BACKLOG_VARIANTS).
const (
	// backlogOff leaves the Reservation plugin out of the PostFilter
	// plugins (backlogNoReservationConfig): the baseline.
	backlogOff = "off"
	// backlogOn is the default profile, Reservation first among the
	// PostFilter plugins, its arguments at their defaults.
	backlogOn = "on"

	queueBacklogNamespace = "queues-backlog"
	// bigGangMin is the size from which a gang counts as big in the
	// waits reported.
	bigGangMin = 16
)

// backlogNoReservationConfig is the command's configuration of the
// "off" variant: docs/queues.md's way of turning reservations off.
const backlogNoReservationConfig = `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: ` + schedulerName + `
  plugins:
    postFilter:
      disabled:
      - name: "*"
      enabled:
      - name: Reclaim
      - name: DefaultPreemption
`

// backlogQueue is a queue of the backlog phase: its weight, and the jobs
// it streams.
type backlogQueue struct {
	name   string
	weight int64
	next   func(rng *rand.Rand) queueJob
}

// backlogRunFor draws a run time of 5 to 60 s.
func backlogRunFor(rng *rand.Rand) string { return fmt.Sprintf("%ds", 5+rng.IntN(56)) }

// backlogQueues are the queues of the backlog phase. Every pod asks for
// 1 CPU and says its run time (expected, so that it may backfill).
var backlogQueues = []backlogQueue{
	{"big", 3, func(rng *rand.Rand) queueJob {
		return queueJob{size: 4 + rng.IntN(29), runFor: backlogRunFor(rng), expected: true}
	}},
	{"small-a", 2, func(rng *rand.Rand) queueJob {
		if rng.IntN(2) == 0 {
			return queueJob{size: 1, single: true, runFor: backlogRunFor(rng), expected: true}
		}
		return queueJob{size: 1 + rng.IntN(4), runFor: backlogRunFor(rng), expected: true}
	}},
	{"small-b", 1, func(rng *rand.Rand) queueJob {
		return queueJob{size: 1, single: true, runFor: backlogRunFor(rng), expected: true}
	}},
}

// loadBacklogSettings reads the backlog phase's knobs into s.
func loadBacklogSettings(b testing.TB, s *queueSettings) {
	b.Helper()
	s.backlogFor = time.Duration(envInt(b, "BENCH_QUEUE_BACKLOG_SECONDS", smoke(240, 10))) * time.Second
	s.backlogSkip = time.Duration(envInt(b, "BENCH_QUEUE_BACKLOG_SKIP_SECONDS", smoke(60, 2))) * time.Second
	variants := os.Getenv("BENCH_QUEUE_BACKLOG_VARIANTS")
	if variants == "" {
		variants = backlogOff + "," + backlogOn
	}
	s.backlogVariants = nil
	for v := range strings.SplitSeq(variants, ",") {
		switch v = strings.TrimSpace(v); v {
		case backlogOff, backlogOn:
			s.backlogVariants = append(s.backlogVariants, v)
		default:
			b.Fatalf("BENCH_QUEUE_BACKLOG_VARIANTS=%q: %q is not %s or %s", variants, v, backlogOff, backlogOn)
		}
	}
	if s.backlogFor <= s.backlogSkip {
		b.Fatalf("BENCH_QUEUE_BACKLOG_SECONDS (%s) must be above BENCH_QUEUE_BACKLOG_SKIP_SECONDS (%s)", s.backlogFor, s.backlogSkip)
	}
}

// backlogQueueResult is one queue of one variant.
type backlogQueueResult struct {
	name   string
	weight int64
	// fair is its fair share of the cluster's CPU (pkg/fairshare); bound
	// and running the time-averaged share its bound and running pods
	// took.
	fair, bound, running float64
	// minPending is the least CPU (milli) it had pending at a sample,
	// minDemand the least of its bound and pending CPU ÷ its fair share.
	minPending int64
	minDemand  float64
	evicted    int
}

// waitClass is the wait (creation → quorum live, or bound for a single
// pod) of one class of jobs: of those that started in the window, their
// number and quantiles; of those still waiting at its end, their number
// and the oldest's age.
type waitClass struct {
	name          string
	n             int
	p50, p99, max time.Duration
	waiting       int
	oldest        time.Duration
}

// Classes of waitClass, by index in backlogResult.waits.
var waitClassNames = []string{fmt.Sprintf("gangs ≥ %d", bigGangMin), fmt.Sprintf("gangs < %d", bigGangMin), "single pods"}

func waitClassOf(j jobStart) int {
	switch {
	case j.single:
		return 2
	case j.size >= bigGangMin:
		return 0
	default:
		return 1
	}
}

// backlogResult is one variant of the backlog phase.
type backlogResult struct {
	variant string
	// crash says how the scheduler crashed, if it did.
	crash  string
	queues []backlogQueueResult
	// worstBound and worstRunning are the largest |share/fair - 1| of the
	// bound and the running pods; boundUtil and utilization the
	// time-averaged bound and running CPU ÷ capacity.
	worstBound, worstRunning, boundUtil, utilization float64
	samples                                          int
	// evictions, completed and binds are the pods evicted, Succeeded and
	// bound in the window.
	evictions, completed, binds int64
	// schedCPU is the scheduler's CPU time in the window (-1: unknown).
	schedCPU   time.Duration
	waits      []waitClass
	est        estimateResult
	violations []string
	deleted    int64
	cpu        cpuTimes
	window     time.Duration
	metrics    map[string]float64
}

// evictionsPer100 is the evictions per 100 completed pods.
func (r backlogResult) evictionsPer100() float64 {
	return 100 * float64(r.evictions) / math.Max(float64(r.completed), 1)
}

// cpuPerPod is the scheduler's CPU time per pod bound, in milliseconds.
func (r backlogResult) cpuPerPod() float64 {
	return float64(r.schedCPU.Microseconds()) / 1000 / math.Max(float64(r.binds), 1)
}

// runBacklog runs one variant of the backlog phase (see BenchmarkQueues).
func runBacklog(b *testing.B, e queueEnv, variant string) backlogResult {
	s := e.s
	start := time.Now()
	label := "backlog " + variant
	ns := queueBacklogNamespace + "-" + variant
	createNamespace(b, e.admin, ns)
	var names []string
	var weights []int64
	for _, q := range backlogQueues {
		createQueue(b, e.dyn, q.name, map[string]any{"weight": q.weight, "borrow": true})
		names = append(names, q.name)
		weights = append(weights, q.weight)
	}
	var extra []string
	if variant == backlogOff {
		cfg := filepath.Join(b.TempDir(), "no-reservation.yaml")
		if err := os.WriteFile(cfg, []byte(backlogNoReservationConfig), 0o600); err != nil {
			b.Fatal(err)
		}
		extra = []string{"--config-path", cfg}
	}
	sched := startQueueScheduler(b, e, "batch-scheduler-backlog-"+variant, extra...)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	deleter := startTerminalDeleter(ctx, e.pods, ns, 4)
	tr := newQueueTracker(b, e.pods, ns, s.settle, deleter.add)

	// As in the fairness phase, every queue demands a quarter more than
	// its fair share, with at least the backlog pending.
	capacity := s.capacityMilli()
	fair := expectedShares(capacity, names, weights)
	gens := make([]*generator, len(backlogQueues))
	var wg sync.WaitGroup
	for i, q := range backlogQueues {
		gens[i] = &generator{client: e.pods, ns: ns, queue: q.name, target: s.backlog, floor: int64(fair[q.name] * float64(capacity) * 5 / 4), tr: tr,
			rng: rand.New(rand.NewPCG(s.seed, 200+uint64(i))), next: q.next}
		wg.Go(func() { gens[i].run(ctx) })
	}
	pollCtx, stopPolls := context.WithCancel(ctx)
	defer stopPolls()
	poller := newStandingPoller(sched.addr, time.Second)
	wg.Go(func() { poller.run(pollCtx) })

	procs := e.withScheduler(sched)
	phaseStart := time.Now()
	qlogf(label+": queues %v of weights %v, a backlog of %d CPUs each, %s (the first %s left out)", names, weights, s.backlog/1000, s.backlogFor, s.backlogSkip)
	var samples []queueSample
	var winStart time.Time
	var cpu0 cpuTimes
	var binds0, succ0 int64
	tick := time.NewTicker(time.Second)
	for time.Since(phaseStart) < s.backlogFor && !sched.crashed() {
		<-tick.C
		smp := tr.sample()
		if smp.at.Sub(phaseStart) < s.backlogSkip {
			continue
		}
		if winStart.IsZero() {
			winStart, cpu0 = time.Now(), readCPU(procs)
			binds0, succ0 = tr.counts()
		}
		samples = append(samples, smp)
		if n := len(samples); n%30 == 0 {
			qlogf(label+": %s: bound %d of %d CPUs: %s; pending %s", smp.at.Sub(phaseStart).Round(time.Second), smp.boundTotal/1000, capacity/1000,
				perQueue(names, smp.bound), perQueue(names, smp.pending))
		}
	}
	tick.Stop()
	winEnd := time.Now()
	if winStart.IsZero() {
		winStart, cpu0 = winEnd, readCPU(procs)
		binds0, succ0 = tr.counts()
	}
	cpu := readCPU(procs).sub(cpu0)
	binds1, succ1 := tr.counts()
	started, waiting := tr.jobStarts()
	stopPolls()
	cancel()
	wg.Wait()
	metrics, crash := sched.stop(b)
	violations := tr.finish()
	tr.close()
	deleter.close()

	r := backlogResult{variant: variant, crash: crash, samples: len(samples), binds: binds1 - binds0, completed: succ1 - succ0, schedCPU: -1,
		violations: violations, deleted: deleter.deleted.Load(), cpu: cpu, window: winEnd.Sub(winStart), metrics: metrics}
	if v, ok := cpu["batch-scheduler"]; ok {
		r.schedCPU = v
	}
	n := float64(max(len(samples), 1))
	for _, smp := range samples {
		r.utilization += float64(smp.runningTotal) / float64(capacity) / n
		r.boundUtil += float64(smp.boundTotal) / float64(capacity) / n
	}
	for i, q := range backlogQueues {
		qr := backlogQueueResult{name: q.name, weight: q.weight, fair: fair[q.name], minPending: math.MaxInt64, minDemand: math.Inf(1)}
		for _, smp := range samples {
			qr.bound += float64(smp.bound[q.name]) / float64(capacity) / n
			qr.running += float64(smp.running[q.name]) / float64(capacity) / n
			qr.minPending = min(qr.minPending, smp.pending[q.name])
			qr.minDemand = min(qr.minDemand, float64(smp.bound[q.name]+smp.pending[q.name])/(qr.fair*float64(capacity)))
		}
		if len(samples) == 0 {
			qr.minPending, qr.minDemand = 0, 0
		}
		for _, at := range tr.evictionsSince(q.name, winStart) {
			if at.Before(winEnd) {
				qr.evicted++
			}
		}
		r.evictions += int64(qr.evicted)
		r.worstBound = max(r.worstBound, math.Abs(qr.bound/qr.fair-1))
		r.worstRunning = max(r.worstRunning, math.Abs(qr.running/qr.fair-1))
		r.queues = append(r.queues, qr)
		if errs := gens[i].errs.Load(); errs > 0 {
			b.Errorf(label+": %d jobs of %s could not be created, the first: %v", errs, q.name, gens[i].err)
		}
	}
	r.waits, r.est = backlogWaits(started, waiting, winStart, winEnd), poller.result(gangStarts(ns, started, winStart, winEnd))
	for _, v := range violations {
		b.Errorf(label+": %s", v)
	}
	if crash != "" {
		b.Errorf(label+": %s", crash)
	}
	qlogf(label+": %d samples; bound utilization %.3f; worst |bound/fair - 1| %.3f; %d evictions, %d pods completed", len(samples), r.boundUtil, r.worstBound, r.evictions, r.completed)
	clearNamespace(b, e.pods, ns)
	deleteQueues(b, e.dyn, names...)
	qlogf(label+": done in %s", time.Since(start).Round(time.Second))
	return r
}

// backlogWaits sums up the waits of the jobs that started in [from, to),
// and of those created before to still waiting, by class.
func backlogWaits(started, waiting []jobStart, from, to time.Time) []waitClass {
	waits := make([][]time.Duration, len(waitClassNames))
	out := make([]waitClass, len(waitClassNames))
	for i, name := range waitClassNames {
		out[i].name = name
	}
	for _, j := range started {
		if !j.started.Before(from) && j.started.Before(to) {
			c := waitClassOf(j)
			waits[c] = append(waits[c], j.started.Sub(j.created))
		}
	}
	for _, j := range waiting {
		if j.created.Before(to) {
			c := &out[waitClassOf(j)]
			c.waiting++
			c.oldest = max(c.oldest, to.Sub(j.created))
		}
	}
	for i, w := range waits {
		slices.Sort(w)
		out[i].n = len(w)
		out[i].p50, out[i].p99 = quantile(w, 0.5), quantile(w, 0.99)
		if len(w) > 0 {
			out[i].max = w[len(w)-1]
		}
	}
	return out
}

// gangStarts are the real starts of the gangs that started in [from,
// to), by their job id in /debug/standing ("<namespace>/<group name>").
func gangStarts(ns string, started []jobStart, from, to time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for _, j := range started {
		if !j.single && !j.started.Before(from) && j.started.Before(to) {
			out[ns+"/"+j.job] = j.started
		}
	}
	return out
}

// reportBacklog reports the backlog phase's figures of runs, per variant
// (backlog-off-..., backlog-on-...), the mean over the runs; a variant
// whose scheduler crashed in a run reports none.
func reportBacklog(b *testing.B, s queueSettings, runs []queueRun) {
	for vi, v := range s.backlogVariants {
		var rs []backlogResult
		for _, r := range runs {
			if vi < len(r.backlog) && r.backlog[vi].crash == "" {
				rs = append(rs, r.backlog[vi])
			}
		}
		if len(rs) == 0 || len(rs) < len(runs) {
			continue
		}
		mean := func(f func(r backlogResult) float64) float64 {
			var sum float64
			for _, r := range rs {
				sum += f(r)
			}
			return sum / float64(len(rs))
		}
		p := "backlog-" + v + "-"
		for qi, q := range backlogQueues {
			b.ReportMetric(mean(func(r backlogResult) float64 { return r.queues[qi].bound / r.queues[qi].fair }), p+q.name+"-bound/fair")
			b.ReportMetric(mean(func(r backlogResult) float64 { return r.queues[qi].running / r.queues[qi].fair }), p+q.name+"-running/fair")
		}
		b.ReportMetric(mean(func(r backlogResult) float64 { return r.worstBound }), p+"worst-dev-bound")
		b.ReportMetric(mean(func(r backlogResult) float64 { return r.evictionsPer100() }), p+"evictions/100pods")
		b.ReportMetric(mean(func(r backlogResult) float64 { return r.boundUtil }), p+"utilization-bound")
		// A class of which no job started in a run has no wait to report.
		if !slices.ContainsFunc(rs, func(r backlogResult) bool { return r.waits[0].n == 0 }) {
			b.ReportMetric(mean(func(r backlogResult) float64 { return r.waits[0].p50.Seconds() }), p+"big-wait-p50-s")
			b.ReportMetric(mean(func(r backlogResult) float64 { return r.waits[0].p99.Seconds() }), p+"big-wait-p99-s")
		}
		if !slices.ContainsFunc(rs, func(r backlogResult) bool { return r.waits[2].n == 0 }) {
			b.ReportMetric(mean(func(r backlogResult) float64 { return r.waits[2].p99.Seconds() }), p+"single-wait-p99-s")
		}
		if !slices.ContainsFunc(rs, func(r backlogResult) bool { return r.schedCPU < 0 }) {
			b.ReportMetric(mean(func(r backlogResult) float64 { return r.cpuPerPod() }), p+"sched-cpu-ms/pod")
		}
		for _, k := range rs[0].est.keys() {
			if slices.ContainsFunc(rs, func(r backlogResult) bool { return r.est.stats[k].n == 0 }) {
				continue
			}
			b.ReportMetric(mean(func(r backlogResult) float64 { return r.est.stats[k].p50 }), p+"est-"+k+"-p50-s")
			b.ReportMetric(mean(func(r backlogResult) float64 { return r.est.stats[k].p90 }), p+"est-"+k+"-p90-s")
		}
	}
}

// printBacklog prints the tables of the backlog phase's variants.
func printBacklog(out io.Writer, s queueSettings, rs []backlogResult) {
	for _, r := range rs {
		title := "backlog off (Reservation left out of the PostFilter plugins)"
		if r.variant == backlogOn {
			title = "backlog on (the default profile: Reservation first among the PostFilter plugins)"
		}
		fmt.Fprintf(out, "\n%s: %s measured (%d samples, every second, after %s); big: gangs of 4-32, small-a: single pods and gangs of 1-4, small-b: single pods; 1 CPU each, 5-60 s; backlog ≥ %d CPUs per queue\n",
			title, r.window.Round(time.Second), r.samples, s.backlogSkip, s.backlog/1000)
		fmt.Fprintf(out, "%-8s %6s %8s %8s %11s %8s %13s %12s %11s %8s\n", "queue", "weight", "fair", "bound", "bound/fair", "running", "running/fair", "pending-min", "demand-min", "evicted")
		for _, q := range r.queues {
			fmt.Fprintf(out, "%-8s %6d %8.3f %8.3f %11.3f %8.3f %13.3f %12d %11.2f %8d\n", q.name, q.weight, q.fair, q.bound, q.bound/q.fair, q.running, q.running/q.fair,
				q.minPending/1000, q.minDemand, q.evicted)
		}
		cpuPerPod := "-"
		if r.schedCPU >= 0 {
			cpuPerPod = fmt.Sprintf("%.2f ms (%.1f s)", r.cpuPerPod(), r.schedCPU.Seconds())
		}
		fmt.Fprintf(out, "worst |bound/fair - 1| %.3f, running %.3f; utilization bound %.3f, running %.3f; evictions %.2f per 100 completed pods (%d evicted, %d completed); scheduler CPU per pod bound %s over %d pods\n",
			r.worstBound, r.worstRunning, r.boundUtil, r.utilization, r.evictionsPer100(), r.evictions, r.completed, cpuPerPod, r.binds)
		fmt.Fprintf(out, "%-14s %8s %10s %10s %10s %14s %12s\n", "wait of", "started", "p50", "p99", "max", "waiting-at-end", "oldest")
		for _, w := range r.waits {
			p50, p99, most := "-", "-", "-"
			if w.n > 0 {
				p50, p99, most = w.p50.Round(10*time.Millisecond).String(), w.p99.Round(10*time.Millisecond).String(), w.max.Round(10*time.Millisecond).String()
			}
			fmt.Fprintf(out, "%-14s %8d %10s %10s %10s %14d %12s\n", w.name, w.n, p50, p99, most, w.waiting, w.oldest.Round(time.Second))
		}
		e := r.est
		switch {
		case e.unavailable != "":
			fmt.Fprintf(out, "start estimates: n/a (%s)\n", e.unavailable)
		default:
			fmt.Fprintf(out, "start estimates (real start − estimate, s; %d polls, %d failed%s): %d of %d gangs started in the window had one before their start\n",
				e.polls, e.failures, firstErr(e.firstErr), e.withEstimate, e.gangsStarted)
			for _, k := range e.keys() {
				st := e.stats[k]
				fmt.Fprintf(out, "  %-20s n %4d  |error| p50 %7.1f  p90 %7.1f  mean error %+7.1f\n", k, st.n, st.p50, st.p90, st.bias)
			}
		}
		fmt.Fprintf(out, "%s: %s; preemption attempts %.0f, victims %.0f%s; CPU s: kube-apiserver %s, etcd %s, kwok %s, batch-scheduler %s, self %s; finished pods deleted %d; gangs below quorum: %d\n",
			title, attempts(r.metrics), sumMetric(r.metrics, "batch_scheduler_preemption_attempts_total"), sumMetric(r.metrics, "batch_scheduler_preemption_victims_total"),
			byLabel(r.metrics, "batch_scheduler_preemption_victims_total"),
			r.cpu.fmt("kube-apiserver"), r.cpu.fmt("etcd"), r.cpu.fmt("kwok"), r.cpu.fmt("batch-scheduler"), r.cpu.fmt("self"), r.deleted, len(r.violations))
		if r.crash != "" {
			fmt.Fprintf(out, "%s: THE SCHEDULER CRASHED; the figures above are those of the samples before: %s\n", title, r.crash)
		}
	}
}

func firstErr(s string) string {
	if s == "" {
		return ""
	}
	return ", the first: " + s
}
