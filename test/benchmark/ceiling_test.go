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
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// The raw binding ceiling is measured once per binder concurrency in
// settings.binders (16, 64 and 128 by default) before the scheduler, and
// once more, with the concurrency that did best, after it. Each
// concurrency's figure is the mean of its phases; the ceiling is the best
// figure: what the API server sustains, not what one client's choice of
// concurrency gets out of it.

// againNamespace holds the pods of the ceiling phase that runs after the
// scheduler.
const againNamespace = "ceiling-again"

// ceilingNamespace is the namespace of the ceiling phase with binders
// calls in flight.
func ceilingNamespace(binders int) string { return fmt.Sprintf("ceiling-%d", binders) }

// ceilingNamespaces are the namespaces of every ceiling phase of a run.
func (s settings) ceilingNamespaces() []string {
	var out []string
	for _, n := range s.binders {
		out = append(out, ceilingNamespace(n))
	}
	return append(out, againNamespace)
}

// ceilingEnv is what the ceiling phases of one run share.
type ceilingEnv struct {
	s     settings
	cp    *controlplane.ControlPlane
	admin kubernetes.Interface
	procs map[string]int
	nodes []string
}

// ceilings are the ceiling phases of a run, in the order they ran.
type ceilings []phase

// runCeilingsBefore runs one ceiling phase per binder concurrency.
func runCeilingsBefore(b testing.TB, e ceilingEnv) ceilings {
	b.Helper()
	var out ceilings
	for _, n := range e.s.binders {
		p := runCeiling(b, e.s, e.cp, e.admin, e.procs, ceilingNamespace(n), e.nodes, n)
		logf("%s: %d pods in %s with %d binders: %.0f pods/s", p.name, p.pods, p.elapsed.Round(time.Millisecond), n, p.podsPerSecond())
		out = append(out, p)
	}
	return out
}

// runAgain runs the ceiling once more, with the concurrency that did best
// so far, and returns all phases.
func (c ceilings) runAgain(b testing.TB, e ceilingEnv) ceilings {
	b.Helper()
	best, _ := c.best()
	p := runCeiling(b, e.s, e.cp, e.admin, e.procs, againNamespace, e.nodes, best)
	logf("%s: %d pods in %s with %d binders: %.0f pods/s", p.name, p.pods, p.elapsed.Round(time.Millisecond), best, p.podsPerSecond())
	return append(slices.Clone(c), p)
}

// byBinders returns the mean pods/s of each binder concurrency, and the
// concurrencies in ascending order.
func (c ceilings) byBinders() (map[int]float64, []int) {
	sum, n := map[int]float64{}, map[int]int{}
	for _, p := range c {
		sum[p.binders] += p.podsPerSecond()
		n[p.binders]++
	}
	var keys []int
	for k := range sum {
		sum[k] /= float64(n[k])
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return sum, keys
}

// best returns the binder concurrency with the highest mean pods/s, and
// that rate: the ceiling.
func (c ceilings) best() (binders int, rate float64) {
	rates, keys := c.byBinders()
	for _, k := range keys {
		if rates[k] > rate {
			binders, rate = k, rates[k]
		}
	}
	return binders, rate
}

// describe says, on one line, the rate of each concurrency and which won.
func (c ceilings) describe() string {
	rates, keys := c.byBinders()
	best, rate := c.best()
	var parts []string
	for _, k := range keys {
		var runs []string
		for _, p := range c {
			if p.binders == k {
				runs = append(runs, fmt.Sprintf("%.0f", p.podsPerSecond()))
			}
		}
		part := fmt.Sprintf("%d binders %.0f", k, rates[k])
		if len(runs) > 1 {
			part += " (mean of " + strings.Join(runs, ", ") + ")"
		}
		parts = append(parts, part)
	}
	return fmt.Sprintf("ceiling %.0f pods/s (best of: %s; best %d)", rate, strings.Join(parts, ", "), best)
}

// report adds the ceiling's metrics to b: ceiling-pods/s and one
// ceiling-N-pods/s per binder concurrency, each averaged over runs.
func reportCeilings(b *testing.B, runs []ceilings) (ceiling float64) {
	perBinders := map[int]float64{}
	var keys []int
	for _, c := range runs {
		_, r := c.best()
		ceiling += r
		rates, ks := c.byBinders()
		for _, k := range ks {
			if _, seen := perBinders[k]; !seen {
				keys = append(keys, k)
			}
			perBinders[k] += rates[k] / float64(len(runs))
		}
	}
	ceiling /= float64(len(runs))
	b.ReportMetric(ceiling, "ceiling-pods/s")
	for _, k := range keys {
		b.ReportMetric(perBinders[k], fmt.Sprintf("ceiling-%d-pods/s", k))
	}
	return ceiling
}

// printPhaseRow prints one row of a summary table: time, pods/s, the ratio
// column, the CPU seconds of the named processes and the CPU per pod.
func printPhaseRow(out io.Writer, p phase, ratio string, procs ...string) {
	var total time.Duration
	for _, v := range p.cpu {
		total += v
	}
	name := p.name
	if p.binders > 0 {
		name = fmt.Sprintf("%s (%d)", p.name, p.binders)
	}
	fmt.Fprintf(out, "%-20s %10s %10.0f %8s", name, p.elapsed.Round(time.Millisecond), p.podsPerSecond(), ratio)
	for _, proc := range procs {
		fmt.Fprintf(out, " %12s", p.cpu.fmt(proc))
	}
	fmt.Fprintf(out, " %12.2f\n", float64(total.Microseconds())/1000/float64(p.pods))
}

// printPhaseHeader prints the header of printPhaseRow's table.
func printPhaseHeader(out io.Writer, procs ...string) {
	fmt.Fprintf(out, "%-20s %10s %10s %8s", "phase (binders)", "time", "pods/s", "ratio")
	for _, proc := range procs {
		if proc == "self" {
			proc = "self-s"
		} else {
			proc += "-s"
		}
		fmt.Fprintf(out, " %12s", proc)
	}
	fmt.Fprintf(out, " %12s\n", "cpu-ms/pod")
}

// printQuarters prints when each quarter of each phase's pods was bound,
// and its API requests.
func printQuarters(out io.Writer, phases []phase) {
	for _, p := range phases {
		var q []string
		for _, d := range p.quarters {
			q = append(q, d.Round(10*time.Millisecond).String())
		}
		fmt.Fprintf(out, "%s: 25/50/75/100%% bound at %s; API requests: %s\n", p.name, strings.Join(q, " "), formatRequests(p))
	}
}
