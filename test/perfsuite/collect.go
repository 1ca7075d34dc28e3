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

package perfsuite

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podTracker watches every pod of the cluster and keeps what the ops and
// the collectors ask: which pods are scheduled or were attempted, and the
// count of pods that became scheduled, per open collector.
type podTracker struct {
	informer cache.SharedIndexInformer

	// mu guards collectors and seen; the informer's handler takes it
	// for each pod it sees first and each pod that becomes scheduled.
	mu         sync.Mutex
	collectors []*collector
	// seen is when the watch first showed each pod not yet scheduled.
	seen map[types.UID]time.Time
}

func newPodTracker(ctx context.Context, client kubernetes.Interface) (*podTracker, error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	t := &podTracker{informer: factory.Core().V1().Pods().Informer(), seen: map[types.UID]time.Time{}}
	if _, err := t.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(nil, obj) },
		UpdateFunc: t.observe,
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), t.informer.HasSynced) {
		return nil, fmt.Errorf("syncing the pod watch: %w", context.Cause(ctx))
	}
	return t, nil
}

// observe notes when a pod is first seen pending, and counts a pod that
// became scheduled, with its latency from then, for every open collector
// it matches.
func (t *podTracker) observe(oldObj, newObj any) {
	pod, ok := newObj.(*v1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if pod.Spec.NodeName == "" {
		if _, ok := t.seen[pod.UID]; !ok {
			t.seen[pod.UID] = now
		}
		return
	}
	if old, ok := oldObj.(*v1.Pod); ok && old.Spec.NodeName != "" {
		return
	}
	first, pending := t.seen[pod.UID]
	delete(t.seen, pod.UID)
	for _, c := range t.collectors {
		if c.matches(pod) {
			c.scheduled++
			if pending {
				c.latencies = append(c.latencies, now.Sub(first))
			}
		}
	}
}

// podScope selects pods: by namespace (any when empty) and labels.
type podScope struct {
	namespaces map[string]bool
	selector   labels.Selector
}

func newScope(namespaces []string, sel map[string]string) podScope {
	s := podScope{selector: labels.SelectorFromSet(sel)}
	if len(namespaces) > 0 {
		s.namespaces = map[string]bool{}
		for _, ns := range namespaces {
			s.namespaces[ns] = true
		}
	}
	return s
}

func (s podScope) matches(pod *v1.Pod) bool {
	if s.namespaces != nil && !s.namespaces[pod.Namespace] {
		return false
	}
	return s.selector.Matches(labels.Set(pod.Labels))
}

// counts returns how many pods of the scope are scheduled, and how many
// were attempted (scheduled, or marked unschedulable) out of all.
func (t *podTracker) counts(s podScope) (scheduled, attempted, all int) {
	for _, obj := range t.informer.GetStore().List() {
		pod := obj.(*v1.Pod)
		if !s.matches(pod) || pod.DeletionTimestamp != nil {
			continue
		}
		all++
		if pod.Spec.NodeName != "" {
			scheduled++
			attempted++
			continue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodScheduled {
				attempted++
				break
			}
		}
	}
	return scheduled, attempted, all
}

// pending describes the scope's unscheduled pods: their count per
// namespace and the first one's PodScheduled message.
func (t *podTracker) pending(s podScope) string {
	count := map[string]int{}
	msg := map[string]string{}
	for _, obj := range t.informer.GetStore().List() {
		pod := obj.(*v1.Pod)
		if !s.matches(pod) || pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" {
			continue
		}
		count[pod.Namespace]++
		if _, ok := msg[pod.Namespace]; ok {
			continue
		}
		msg[pod.Namespace] = "never attempted"
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodScheduled {
				msg[pod.Namespace] = fmt.Sprintf("%s: %s", c.Reason, c.Message)
			}
		}
	}
	parts := make([]string, 0, len(count))
	for ns, n := range count {
		parts = append(parts, fmt.Sprintf("%s: %d (%q)", ns, n, msg[ns]))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// waitFor polls every 100ms until done(scheduled, attempted, all) holds
// for the scope, or the timeout.
func (t *podTracker) waitFor(ctx context.Context, s podScope, timeout time.Duration, what string, done func(scheduled, attempted, all int) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		sc, at, all := t.counts(s)
		if done(sc, at, all) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached within %s: %d scheduled, %d attempted of %d pods; unscheduled: %s", what, timeout, sc, at, all, t.pending(s))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", what, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// collector measures one window: the pods of its scope that became
// scheduled in each second, and the scheduler's attempt histogram.
type collector struct {
	podScope
	name  string
	start time.Time

	// scheduled and latencies are guarded by the tracker's mu.
	scheduled int
	latencies []time.Duration // first seen pending → seen scheduled, per pod

	sampler throughputSampler
	stopped chan struct{}
	done    chan struct{}
	before  histogram
}

// throughputSampler turns the count of scheduled pods, read once a second,
// into per-interval rates the way scheduler_perf's throughput collector
// does, so that our pods/s and upstream's thresholds mean the same thing:
//   - ticks before the first scheduled pod are not samples;
//   - the first tick that sees a scheduled pod only sets the baseline (it
//     would mix the window's start with the ops creating pods);
//   - a tick that sees no new pod records nothing yet; the next tick that
//     does spreads its pods over every interval since the last sample, and
//     records that rate once per interval;
//   - pods scheduled after the last sampling tick are not sampled.
//
// A window whose pods were all scheduled within one second therefore has
// no samples, and its rate is the overall one (pods ÷ window).
type throughputSampler struct {
	started  bool
	last     int
	lastTime time.Time
	skipped  int
	samples  []float64
}

// tick records the count of scheduled pods seen at now.
func (s *throughputSampler) tick(now time.Time, scheduled int) {
	switch {
	case scheduled == 0:
		return
	case !s.started:
		s.started, s.last, s.lastTime = true, scheduled, now
		return
	case scheduled == s.last:
		s.skipped++
		return
	}
	rate := float64(scheduled-s.last) / now.Sub(s.lastTime).Seconds()
	for range s.skipped + 1 {
		s.samples = append(s.samples, rate)
	}
	s.last, s.lastTime, s.skipped = scheduled, now, 0
}

// average is the mean of the samples, and false when there are none.
func (s *throughputSampler) average() (float64, bool) {
	if len(s.samples) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, r := range s.samples {
		sum += r
	}
	return sum / float64(len(s.samples)), true
}

// startCollector opens a window; its sampler runs until stop.
func (t *podTracker) startCollector(name string, s podScope, before histogram) *collector {
	c := &collector{podScope: s, name: name, start: time.Now(), stopped: make(chan struct{}), done: make(chan struct{}), before: before}
	t.mu.Lock()
	t.collectors = append(t.collectors, c)
	t.mu.Unlock()
	go func() {
		defer close(c.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-c.stopped:
				return
			case <-tick.C:
				t.mu.Lock()
				n := c.scheduled
				t.mu.Unlock()
				// Only this goroutine touches the sampler until
				// stop has seen done closed.
				c.sampler.tick(time.Now(), n)
			}
		}
	}()
	return c
}

// Window is what one collector measured.
type Window struct {
	Name    string
	Pods    int
	Elapsed time.Duration
	Average float64 // mean of throughputSampler's samples, as upstream reports it; Overall when there are none
	Overall float64 // Pods / Elapsed
	// P50, P90, P99: each pod's time from the watch showing it pending
	// to the watch showing it bound; the same instrument for both
	// schedulers.
	P50, P90, P99 time.Duration
	// Decide50, Decide99: the scheduler's own decision-time histogram
	// (see RunningScheduler.Decisions), over the window.
	Decide50, Decide99 time.Duration
	Decisions          float64       // observations of that histogram
	SchedCPU           time.Duration // the scheduler process's CPU over the window
	Threshold          Threshold
}

// stop closes the window and returns its figures; after is the attempt
// histogram at its end.
func (t *podTracker) stop(c *collector, after histogram) Window {
	close(c.stopped)
	<-c.done
	elapsed := time.Since(c.start)
	t.mu.Lock()
	for i, o := range t.collectors {
		if o == c {
			t.collectors = append(t.collectors[:i], t.collectors[i+1:]...)
			break
		}
	}
	n := c.scheduled
	lat := slices.Clone(c.latencies)
	t.mu.Unlock()
	w := Window{Name: c.name, Pods: n, Elapsed: elapsed, Overall: float64(n) / elapsed.Seconds()}
	var sampled bool
	if w.Average, sampled = c.sampler.average(); !sampled {
		w.Average = w.Overall
	}
	d := after.sub(c.before)
	w.Decisions = d.count()
	w.Decide50, w.Decide99 = d.quantile(0.5), d.quantile(0.99)
	slices.Sort(lat)
	w.P50, w.P90, w.P99 = percentile(lat, 0.5), percentile(lat, 0.9), percentile(lat, 0.99)
	return w
}

// percentile is the nearest-rank q-percentile of sorted; 0 when empty.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, i)].Round(100 * time.Microsecond)
}

// histogram is a cumulative histogram: upper bound → count of
// observations at or below it.
type histogram map[float64]float64

func (h histogram) sub(o histogram) histogram {
	d := histogram{}
	for le, v := range h {
		d[le] = v - o[le]
	}
	return d
}

func (h histogram) count() float64 { return h[math.Inf(1)] }

// quantile interpolates linearly inside the bucket that holds the
// q-quantile, as Prometheus's histogram_quantile does; 0 without
// observations, the largest finite bound when it falls in +Inf.
func (h histogram) quantile(q float64) time.Duration {
	total := h.count()
	if total <= 0 {
		return 0
	}
	bounds := make([]float64, 0, len(h))
	for le := range h {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	rank := q * total
	lower, below := 0.0, 0.0
	for _, le := range bounds {
		c := h[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return seconds(lower)
			}
			if c == below {
				return seconds(le)
			}
			return seconds(lower + (le-lower)*(rank-below)/(c-below))
		}
		lower, below = le, c
	}
	return seconds(lower)
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond)
}
