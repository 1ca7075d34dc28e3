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
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// A trace of mixed batch jobs for BenchmarkTrace: gangs of 1 to 256 pods
// (one pod stands for one GPU of a GPU cluster), run times from seconds
// to minutes once scaled, three priorities, arriving over a window.
//
// The size classes are the Microsoft Philly trace's: jobs of 1 GPU, 2–4,
// 5–8 and more than 8 (Jeon et al., "Analysis of Large-Scale
// Multi-Tenant GPU Clusters for DNN Training Workloads", USENIX ATC 2019,
// Figure 2, and the bucketing of the trace's own analysis notebook,
// github.com/msr-fiddle/philly-traces). The share of each class, the
// sizes inside a class and the run-time medians are this benchmark's
// parameters (traceClasses); docs/performance.md says which of them come
// from the paper and which do not.

// traceClass is one size class of the trace.
type traceClass struct {
	// name is how the reports call it ("1", "2-4", "5-8", "9-256").
	name string
	// share is the fraction of the jobs in this class.
	share float64
	// sizes are the gang sizes of the class, drawn with weights.
	sizes   []int
	weights []float64
	// median is the median run time before scaling; run times are
	// log-normal around it with traceSigma.
	median time.Duration
}

// traceClasses are the size classes, smallest first.
var traceClasses = []traceClass{
	{name: "1", share: 0.70, sizes: []int{1}, weights: []float64{1}, median: 10 * time.Minute},
	{name: "2-4", share: 0.15, sizes: []int{2, 4}, weights: []float64{0.5, 0.5}, median: 20 * time.Minute},
	{name: "5-8", share: 0.10, sizes: []int{8}, weights: []float64{1}, median: 40 * time.Minute},
	{name: "9-256", share: 0.05, sizes: []int{16, 32, 64, 128, 256}, weights: []float64{0.40, 0.25, 0.15, 0.12, 0.08}, median: 60 * time.Minute},
}

// tracePriority is one priority of the trace, a PriorityClass.
type tracePriority struct {
	name  string
	value int32
	share float64
}

// tracePriorities are the trace's priorities, lowest first.
var tracePriorities = []tracePriority{
	{name: "trace-low", value: 100, share: 0.50},
	{name: "trace-normal", value: 1000, share: 0.35},
	{name: "trace-high", value: 10000, share: 0.15},
}

const (
	// traceSigma is the spread of the log-normal run times (of the
	// natural logarithm).
	traceSigma = 1.5
	// traceMaxSize is the largest gang.
	traceMaxSize = 256
	// traceMinRun and traceMaxRun bound the run times after scaling:
	// the simulated kubelets start pods seconds late on a busy machine,
	// and a run must fit in minutes.
	traceMinRun = 2 * time.Second
	traceMaxRun = 3 * time.Minute
)

// traceSpec says what trace to generate.
type traceSpec struct {
	seed uint64
	// capacity is the cluster's room in pods (one per GPU).
	capacity int
	// window is the time over which the jobs arrive.
	window time.Duration
	// load is the work the trace offers, as a fraction of the capacity
	// over the window (pod-seconds ÷ (capacity × window)).
	load float64
	// scale divides the run times drawn from the distributions (a trace
	// of hours played in minutes).
	scale float64
}

// traceJob is one job of the trace.
type traceJob struct {
	name string
	// arrival is when the job is created, from the start of the replay.
	arrival time.Duration
	size    int
	class   int // index in traceClasses
	// runFor is how long each of its pods runs, scaled.
	runFor   time.Duration
	priority int // index in tracePriorities
}

// work is the job's pod-seconds.
func (j traceJob) work() float64 { return float64(j.size) * j.runFor.Seconds() }

// classOf returns the index in traceClasses of the class of a gang of
// size pods.
func classOf(size int) int {
	switch {
	case size <= 1:
		return 0
	case size <= 4:
		return 1
	case size <= 8:
		return 2
	default:
		return 3
	}
}

// validate says what is wrong with s, if anything.
func (s traceSpec) validate() error {
	switch {
	case s.capacity < 2*traceMaxSize:
		return fmt.Errorf("trace capacity %d: want at least %d pods, twice the largest gang", s.capacity, 2*traceMaxSize)
	case s.window <= 0:
		return fmt.Errorf("trace window %s: want a positive duration", s.window)
	case s.load <= 0 || s.load > 4:
		return fmt.Errorf("trace load %g: want a fraction in (0, 4]", s.load)
	case s.scale < 1:
		return fmt.Errorf("trace scale %g: want at least 1", s.scale)
	}
	return nil
}

// generateTrace draws jobs from the distributions with the seed until
// their work reaches load × capacity × window, and spreads their
// arrivals uniformly at random over the window (a Poisson process
// conditioned on the number of jobs), in order. The same spec gives the
// same trace.
func generateTrace(s traceSpec) ([]traceJob, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(s.seed, 0x7472616365)) // "trace"
	target := s.load * float64(s.capacity) * s.window.Seconds()
	var jobs []traceJob
	var work float64
	for work < target {
		j := drawJob(rng, s.scale)
		jobs = append(jobs, j)
		work += j.work()
	}
	arrivals := make([]time.Duration, len(jobs))
	for i := range arrivals {
		arrivals[i] = time.Duration(rng.Float64() * float64(s.window)).Round(time.Millisecond)
	}
	slices.Sort(arrivals)
	for i := range jobs {
		jobs[i].arrival = arrivals[i]
		jobs[i].name = fmt.Sprintf("job-%05d", i)
	}
	return jobs, nil
}

// drawJob draws one job's class, size, run time and priority.
func drawJob(rng *rand.Rand, scale float64) traceJob {
	shares := make([]float64, len(traceClasses))
	for i, c := range traceClasses {
		shares[i] = c.share
	}
	class := pick(rng, shares)
	c := traceClasses[class]
	size := c.sizes[pick(rng, c.weights)]
	run := float64(c.median) * math.Exp(traceSigma*rng.NormFloat64()) / scale
	runFor := time.Duration(min(max(run, float64(traceMinRun)), float64(traceMaxRun))).Round(100 * time.Millisecond)
	prios := make([]float64, len(tracePriorities))
	for i, p := range tracePriorities {
		prios[i] = p.share
	}
	return traceJob{size: size, class: class, runFor: runFor, priority: pick(rng, prios)}
}

// pick returns an index drawn with the weights.
func pick(rng *rand.Rand, weights []float64) int {
	var sum float64
	for _, w := range weights {
		sum += w
	}
	x := rng.Float64() * sum
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	return len(weights) - 1
}

// traceSummary describes a trace in one line.
func traceSummary(jobs []traceJob) string {
	counts := make([]int, len(traceClasses))
	var pods int
	var work float64
	for _, j := range jobs {
		counts[j.class]++
		pods += j.size
		work += j.work()
	}
	out := fmt.Sprintf("%d jobs, %d pods, %.0f pod-seconds; jobs by size class:", len(jobs), pods, work)
	for i, c := range traceClasses {
		out += fmt.Sprintf(" %s %d", c.name, counts[i])
	}
	return out
}
