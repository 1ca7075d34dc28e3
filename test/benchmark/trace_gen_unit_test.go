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
	"math"
	"slices"
	"testing"
	"time"
)

// The same seed gives the same trace; another seed another one.
func TestTraceGeneratorSeedDeterminism(t *testing.T) {
	spec := traceSpec{seed: 7, capacity: 800, window: 2 * time.Minute, load: 0.9, scale: 100}
	a, err := generateTrace(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := generateTrace(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatalf("two traces of seed 7 differ: %s and %s", traceSummary(a), traceSummary(b))
	}
	spec.seed = 8
	c, err := generateTrace(spec)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a, c) {
		t.Fatalf("seeds 7 and 8 gave the same trace: %s", traceSummary(a))
	}
}

// A long trace follows the distributions it is drawn from: the share of
// each size class and priority, the median run time of each class, the
// bounds of sizes and run times, the offered load, and arrivals in order
// inside the window.
func TestTraceGeneratorDistributions(t *testing.T) {
	spec := traceSpec{seed: 1, capacity: 8000, window: 2 * time.Hour, load: 0.9, scale: 100}
	jobs, err := generateTrace(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) < 20000 {
		t.Fatalf("%d jobs; want at least 20000 for the shares to be judged (%s)", len(jobs), traceSummary(jobs))
	}
	n := float64(len(jobs))
	classes := make([]float64, len(traceClasses))
	prios := make([]float64, len(tracePriorities))
	runs := make([][]float64, len(traceClasses))
	var work float64
	var last time.Duration
	for i, j := range jobs {
		if j.size < 1 || j.size > traceMaxSize || classOf(j.size) != j.class {
			t.Fatalf("job %d: size %d in class %d", i, j.size, j.class)
		}
		if j.runFor < traceMinRun || j.runFor > traceMaxRun {
			t.Fatalf("job %d runs %s, outside [%s, %s]", i, j.runFor, traceMinRun, traceMaxRun)
		}
		if j.arrival < last || j.arrival > spec.window {
			t.Fatalf("job %d arrives at %s after %s, window %s", i, j.arrival, last, spec.window)
		}
		last = j.arrival
		classes[j.class]++
		prios[j.priority]++
		runs[j.class] = append(runs[j.class], j.runFor.Seconds())
		work += j.work()
	}
	for i, c := range traceClasses {
		if got := classes[i] / n; math.Abs(got-c.share) > 0.01 {
			t.Errorf("class %s: share %.3f, want %.2f ± 0.01", c.name, got, c.share)
		}
		// Clipping moves no median: the bounds are far in the tails.
		want := c.median.Seconds() / spec.scale
		slices.Sort(runs[i])
		if got := runs[i][len(runs[i])/2]; math.Abs(got/want-1) > 0.10 {
			t.Errorf("class %s: median run %.1fs, want %.1fs ± 10%%", c.name, got, want)
		}
	}
	for i, p := range tracePriorities {
		if got := prios[i] / n; math.Abs(got-p.share) > 0.01 {
			t.Errorf("priority %s: share %.3f, want %.2f ± 0.01", p.name, got, p.share)
		}
	}
	// The last job overshoots the target by at most its own work.
	target := spec.load * float64(spec.capacity) * spec.window.Seconds()
	if work < target || work > target+traceMaxSize*traceMaxRun.Seconds() {
		t.Errorf("offered work %.0f pod-seconds, want %.0f (plus at most one job)", work, target)
	}
	t.Logf("%s", traceSummary(jobs))
}

// The sizes inside the largest class follow their weights.
func TestTraceGeneratorLargeGangSizes(t *testing.T) {
	rngJobs, err := generateTrace(traceSpec{seed: 3, capacity: 8000, window: 4 * time.Hour, load: 1, scale: 100})
	if err != nil {
		t.Fatal(err)
	}
	c := traceClasses[3]
	counts := map[int]float64{}
	var n float64
	for _, j := range rngJobs {
		if j.class == 3 {
			counts[j.size]++
			n++
		}
	}
	if n < 1000 {
		t.Fatalf("%.0f jobs in class %s; want at least 1000", n, c.name)
	}
	for i, size := range c.sizes {
		if got := counts[size] / n; math.Abs(got-c.weights[i]) > 0.04 {
			t.Errorf("size %d: %.3f of class %s, want %.2f ± 0.04", size, got, c.name, c.weights[i])
		}
	}
}

// A spec the generator cannot honor is refused with the reason.
func TestTraceGeneratorRejectsBadSpecs(t *testing.T) {
	good := traceSpec{seed: 1, capacity: 800, window: time.Minute, load: 0.9, scale: 100}
	for name, s := range map[string]traceSpec{
		"small cluster": {seed: 1, capacity: 100, window: time.Minute, load: 0.9, scale: 100},
		"no window":     {seed: 1, capacity: 800, load: 0.9, scale: 100},
		"no load":       {seed: 1, capacity: 800, window: time.Minute, scale: 100},
		"scale below 1": {seed: 1, capacity: 800, window: time.Minute, load: 0.9, scale: 0.5},
	} {
		if _, err := generateTrace(s); err == nil {
			t.Errorf("%s: %+v accepted", name, s)
		}
	}
	if _, err := generateTrace(good); err != nil {
		t.Errorf("%+v refused: %v", good, err)
	}
}
