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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The throughput phase of BenchmarkQueues (see BenchmarkQueues): pending
// single pods without queues, over 10 queues, and without queues again.

// queueThroughput is phase 3: a, b, a.
type queueThroughput struct {
	a1, queues, a2 schedulerRun
}

func (t queueThroughput) noQueues() float64 {
	return (t.a1.podsPerSecond() + t.a2.podsPerSecond()) / 2
}

func (t queueThroughput) ratio() float64 { return t.queues.podsPerSecond() / t.noQueues() }

// tputQueues is the number of queues of the throughput phase with queues.
const tputQueues = 10

// runQueueThroughput runs phase 3 (see BenchmarkQueues).
func runQueueThroughput(b *testing.B, e queueEnv) queueThroughput {
	start := time.Now()
	var queues []string
	for i := range tputQueues {
		queues = append(queues, fmt.Sprintf("tput-%02d", i))
	}
	phases := []struct {
		name   string
		queues []string
	}{{"no-queues-1", nil}, {"queues", queues}, {"no-queues-2", nil}}
	runs := make([]schedulerRun, len(phases))
	for i, p := range phases {
		ns := "tput-" + p.name
		createNamespace(b, e.admin, ns)
		for _, q := range p.queues {
			createQueue(b, e.dyn, q, map[string]any{"weight": int64(1)})
		}
		setup := time.Now()
		err := parallel(e.s.pods, setupWorkers, func(j int) error {
			queue := ""
			if len(p.queues) > 0 {
				queue = p.queues[j%len(p.queues)]
			}
			_, err := e.pods.CoreV1().Pods(ns).Create(b.Context(), queuePod(ns, fmt.Sprintf("pod-%05d", j), queue, "", 0, "100m", queueRunForever), metav1.CreateOptions{})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		qlogf("throughput %s: %d pending pods created in %s", p.name, e.s.pods, time.Since(setup).Round(time.Millisecond))
		waitQuiet(b, e.admin)
		ps := e.s.settings
		if ps.cpuProfile != "" {
			ps.cpuProfile = e.s.cpuProfile + "-" + p.name + ".pprof"
		}
		runs[i] = runScheduler(b, ps, e.cp, e.admin, e.procs, ns, e.nodes, schedulerPhase{name: p.name, schedulerName: schedulerName})
		r := runs[i]
		qlogf("throughput %s: %d pods in %s: %.0f pods/s (start-up %s, first bind after %s)", p.name, r.pods, r.elapsed.Round(time.Millisecond),
			r.podsPerSecond(), r.startup.Round(time.Millisecond), r.firstBind.Round(time.Millisecond))
		clearNamespace(b, e.pods, ns)
		if len(p.queues) > 0 {
			deleteQueues(b, e.dyn, p.queues...)
		}
	}
	qlogf("throughput: done in %s", time.Since(start).Round(time.Second))
	return queueThroughput{a1: runs[0], queues: runs[1], a2: runs[2]}
}
