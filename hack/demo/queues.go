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

package main

// The queues story: two teams share four nodes through tenant queues
// (docs/queues.md). batch-scheduler runs with its default profile
// (queueConfig), whose PostFilter plugins are Reservation, Reclaim and
// DefaultPreemption; queues are on because Queue objects exist.
//
//	node-1 .. node-4   2 cpu each, 8 in all
//	Queue team-a       weight 1
//	Queue team-b       weight 1, guaranteed cpu 2
//
// Act 1, reclaim. Every Job is a gang of 2 pods of 1 cpu
// (batch-scheduler.io/job-gang: "true", parallelism = completions = 2:
// quorum 2) in the namespace of its team, whose pods name the team's
// queue (label batch-scheduler.io/queue); the cluster holds 8 of them.
// The step titles (queueSteps) tell the story: team-a borrows the whole
// cluster, team-b's gangs arrive and Reclaim evicts two of team-a's gangs,
// each whole; their new pods wait until team-b's work is done, then run,
// and every Job completes. bRunFor outlasts the Job controller's back-off,
// so that the evicted gangs' new pods are seen waiting beside b1 and b2.
// team-a's pods say nothing of their runtime, so team-b's gangs, which
// reserve the room first, cannot tell when it frees: Reservation hands
// them on to Reclaim at once (waitWithoutEstimate 0s, the default), as
// without reservations.
//
// Act 2, reservation and backfill (queues_backfill.go, backfillSteps):
// team-a's Jobs say how long they run; a gang of the whole cluster
// reserves it and is told when it starts, a short Job backfills the room
// held for it, and the gang starts when it was told.
//
// Throughout, a pod watch (queueWatch) checks that no gang runs below its
// quorum and that no node holds more than its CPUs.

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

const (
	// queueCRD is the Queue CRD, relative to the repository root. It is
	// installed before the scheduler starts: the scheduler looks for the
	// resource (discovery) when it starts.
	queueCRD = "deploy/crds/batch-scheduler.io_queues.yaml"

	teamA = "team-a"
	teamB = "team-b"

	// gangSize is the pods of every Job, all needed at once: its quorum.
	gangSize = 2
	// aRunFor: team-a's pods run long enough for team-b to arrive while
	// they all run, and for its survivors to still run when the evicted
	// gangs' pods are replaced. bRunFor outlasts jobBackoff.
	aRunFor = 40 * time.Second
	bRunFor = 35 * time.Second
	// jobBackoff is how long the Job controller waits before it replaces
	// failed pods: 10 s, doubled for each failure after the first since
	// the Job's last success; 20 s for the 2 evicted pods of a gang.
	jobBackoff = 20 * time.Second
	// gangSettle is how long a gang may run some but fewer than its
	// quorum of pods: its binds, or its evictions, are separate calls.
	gangSettle = 5 * time.Second
)

// queueNodeCPU is the cpu of each node of the story.
const queueNodeCPU = "2"

var queueNodeNames = []string{"node-1", "node-2", "node-3", "node-4"}

// queueNode is one of the story's nodes.
func queueNode(name string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(res{"cpu": queueNodeCPU, "memory": "4Gi", "pods": "10"}).Obj()
}

// teamJob is a Job of the story: gangSize pods of 1 cpu in the namespace
// named after its queue, each running runFor once started.
func teamJob(queue, name string, runFor time.Duration) gangJob {
	return gangJob{namespace: queue, name: name, n: gangSize, req: res{"cpu": "1"}, runFor: runFor, queue: queue}
}

var (
	aJobs = []gangJob{teamJob(teamA, "a1", aRunFor), teamJob(teamA, "a2", aRunFor), teamJob(teamA, "a3", aRunFor), teamJob(teamA, "a4", aRunFor)}
	bJobs = []gangJob{teamJob(teamB, "b1", bRunFor), teamJob(teamB, "b2", bRunFor)}
)

// queueSpecs are the story's queues.
func queueSpecs() []*v1alpha1.Queue {
	return []*v1alpha1.Queue{
		{ObjectMeta: metav1.ObjectMeta{Name: teamA}, Spec: v1alpha1.QueueSpec{Weight: 1}},
		{ObjectMeta: metav1.ObjectMeta{Name: teamB}, Spec: v1alpha1.QueueSpec{Weight: 1,
			Guaranteed: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}},
	}
}

// runQueues is the queues story; it returns the number of steps.
func runQueues(ctx context.Context, e *env) (int, error) {
	cp := e.cp
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return 0, fmt.Errorf("creating a dynamic client: %w", err)
	}
	if e.queues, err = versioned.NewForConfig(cp.Config); err != nil {
		return 0, fmt.Errorf("creating a client of batch-scheduler.io: %w", err)
	}
	if err := progress("installing the Queue CRD ("+queueCRD+") and waiting until it is served", func() error {
		return controlplane.InstallCRDFile(ctx, dyn, queueCRD)
	}); err != nil {
		return 0, err
	}
	if err := progress(fmt.Sprintf("creating the namespaces %s and %s and %d nodes of %s cpu (simulated kubelets)", teamA, teamB, len(queueNodeNames), queueNodeCPU), func() error {
		if err := createNamespaces(ctx, cp.Client, []*v1.Pod{st.MakePod().Namespace(teamA).Obj(), st.MakePod().Namespace(teamB).Obj()}); err != nil {
			return err
		}
		for _, name := range queueNodeNames {
			if _, err := controlplane.CreateKwokNode(ctx, cp.Client, queueNode(name)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	specs := queueSpecs()
	var described []string
	for _, q := range specs {
		described = append(described, describeQueueSpec(q))
	}
	if err := progress("creating the Queues (batch-scheduler.io/v1alpha1, cluster-scoped): "+strings.Join(described, "; "), func() error {
		for _, q := range specs {
			if _, err := e.queues.BatchSchedulerV1alpha1().Queues().Create(ctx, q, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating Queue %s: %w", q.Name, err)
			}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	if err := progress(fmt.Sprintf("writing %s (the default profile: Reservation, Reclaim and DefaultPreemption make room; queues are on once a Queue exists)", configPath), func() error {
		return writeConfigLines(configPath, queueConfig())
	}); err != nil {
		return 0, err
	}
	if err := progress("watching every pod of batch-scheduler (test/podwatch): each bind, eviction and end, for the gangs' quorum and the nodes' CPUs", func() (err error) {
		ctx, cancel := context.WithCancel(ctx)
		e.stops = append(e.stops, func() error { cancel(); return nil })
		var nodes []*v1.Node
		for _, name := range queueNodeNames {
			nodes = append(nodes, queueNode(name))
		}
		e.watch, err = harness.WatchJobGangs(ctx, e.cp.Client, nodes, storyQuorum, gangSettle)
		return err
	}); err != nil {
		return 0, err
	}
	if err := startScheduler(ctx, e); err != nil {
		return 0, err
	}
	var snap *snapshot
	if err := progress("waiting for batch-scheduler to write both Queues' status (every 2s, when it changed)", func() error {
		return harness.Poll(ctx, waitTimeout, "both Queues' status", e.sched.Alive, func() (bool, error) {
			var err error
			if snap, err = observe(ctx, e); err != nil {
				return false, err
			}
			for _, q := range specs {
				if err := snap.check().QueueValid(q.Name); err != nil {
					return false, err
				}
			}
			return true, nil
		})
	}); err != nil {
		return 0, err
	}
	fmt.Println()
	harness.WriteQueues(os.Stdout, snap.queues)
	e.print = func(s, _ *snapshot) { printQueueStory(s) }
	n, err := runSteps(ctx, e, append(queueSteps(), backfillSteps()...))
	if err != nil {
		return 0, err
	}
	fmt.Println()
	if err := e.watch.Err(); err != nil {
		return 0, err
	}
	for _, line := range e.watch.Summary() {
		fmt.Println("guarantee held: " + line)
	}
	return n, nil
}

// queueConfig is the story's scheduler configuration: the default
// profile, Reservation first among the PostFilter plugins, before Reclaim
// and DefaultPreemption (docs/queues.md, "Reservations and backfill").
func queueConfig() []string {
	return []string{
		"# Written by the demo (hack/demo). See docs/queues.md.",
		"apiVersion: batch-scheduler.io/v1alpha1",
		"kind: SchedulerConfiguration",
		"profiles:",
		"- schedulerName: " + ourScheduler,
	}
}

// storyQuorum is the quorum of the story's Job name: all its pods.
func storyQuorum(name string) int {
	for _, j := range slices.Concat(aJobs, bJobs, fillJobs, []gangJob{bigJob, shortJob, longJob, untimedJob}) {
		if j.name == name {
			return int(j.n)
		}
	}
	return gangSize
}

// describeQueueSpec renders a queue's spec, e.g. "team-b (weight 1,
// guaranteed cpu 2)".
func describeQueueSpec(q *v1alpha1.Queue) string {
	parts := []string{fmt.Sprintf("weight %d", q.Spec.Weight)}
	if len(q.Spec.Guaranteed) > 0 {
		parts = append(parts, "guaranteed "+harness.Quantities(q.Spec.Guaranteed))
	}
	return q.Name + " (" + strings.Join(parts, ", ") + ")"
}

// createJobs creates jobs; the Job controller then creates their pods.
func createJobs(jobs ...gangJob) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		for _, j := range jobs {
			if err := createJob(ctx, e, j); err != nil {
				return err
			}
		}
		return nil
	}
}

// unknownStart is the clause of a pod whose job reserved room that pods
// of no expected runtime hold (reservationMessage in pkg/plugins/capacity).
var unknownStart = regexp.MustCompile(`reservation: room held on .+ until [0-9]+ running pods end; start time unknown`)

// queueSteps is the queues story.
func queueSteps() []step {
	// evicted and kept are team-a's Jobs that Reclaim evicted in step 2,
	// and the others: which is not fixed, so step 2 finds out.
	var evicted, kept []string
	aKeys, bKeys := jobKeys(aJobs), jobKeys(bJobs)
	both := func(keys []string) string { return strings.Join(keys, ", ") }
	// waitWhy is what the evicted gangs' new pods say while they wait.
	waitWhy := func(key string) []string {
		return []string{fmt.Sprintf("gang %s: 0 of %d tasks could be placed, min-available %d", key, gangSize, gangSize),
			fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu", len(queueNodeNames), len(queueNodeNames))}
	}
	return []step{
		{
			title: fmt.Sprintf("team-a submits 4 Jobs (%s): gangs of %d one-cpu pods, each running %s.\n", both(aKeys), gangSize, aRunFor) +
				"   team-b asks for nothing: team-a may borrow its share, guarantee included (lent while idle).",
			apply: createJobs(aJobs...),
			lines: func() []outcome {
				return []outcome{
					ql("Jobs "+both(aKeys), "each 2 pods bound, Running", "8 one-cpu pods on 8 cpus: all 4 gangs fit"),
					ql("Queue team-a", "allocated cpu 8, fair share cpu 8", "the only queue that asks: its fair share is everything"),
					ql("Queue team-b", "allocated 0, fair share 0", "asks for nothing; its guarantee (cpu 2) is lent to team-a"),
				}
			},
			within: waitTimeout,
			check: func(s *snapshot) error {
				v := s.check()
				for _, k := range aKeys {
					v.JobRuns(k, 0)
				}
				v.Queue(teamA, harness.QueueWant{Allocated: "8", FairShare: "8", Pending: "0", RunningJobs: 4})
				v.Queue(teamB, harness.QueueWant{Allocated: "0", FairShare: "0", Pending: "0"})
				return v.Err()
			},
		},
		{
			title: fmt.Sprintf("team-b submits 2 Jobs (%s): gangs of %d one-cpu pods, each running %s. Both queues\n", both(bKeys), gangSize, bRunFor) +
				"   now ask for more than half: with equal weights, fair shares are cpu 4 each. team-a uses 8, so Reclaim\n" +
				"   evicts team-a's gangs for team-b's, each whole (which two is not fixed).",
			apply: createJobs(bJobs...),
			lines: func() []outcome {
				return []outcome{
					ql("Jobs "+both(bKeys), "each 2 pods bound, Running", "team-b is below its fair share (cpu 4): Reclaim makes room"),
					ql("", "", "(Reservation, first, cannot tell when team-a's pods end: it hands them on at once)"),
					ql("two of team-a's Jobs", "both pods evicted, none left running", "2 gangs of 2 cpu make room for team-b's 4; a gang is never left below its quorum"),
					ql("the other two", "still 2 pods Running", "team-a keeps its fair share, cpu 4"),
					ql("Queue team-a", "allocated cpu 4, fair share cpu 4", "back at its fair share"),
					ql("Queue team-b", "allocated cpu 4, fair share cpu 4", "its guarantee (cpu 2) plus its equal part of the rest"),
				}
			},
			within: waitTimeout,
			check: func(s *snapshot) error {
				v := s.check()
				for _, k := range bKeys {
					v.JobRuns(k, 0)
				}
				var touched, untouched []string
				for _, k := range aKeys {
					if v.LostPods(k) {
						touched = append(touched, k)
					} else {
						untouched = append(untouched, k)
					}
				}
				switch {
				case len(touched) > 2:
					v.Fail("%d of team-a's gangs lost pods (%s); team-b needed 2 gangs' room", len(touched), both(touched))
				case len(touched) < 2:
					v.Wait("%d of team-a's gangs evicted so far; expected 2", len(touched))
				}
				for _, k := range touched {
					v.JobEvicted(k)
				}
				for _, k := range untouched {
					v.JobRuns(k, 0)
				}
				v.Queue(teamA, harness.QueueWant{Allocated: "4", FairShare: "4", PendingJobs: harness.AnyCount, RunningJobs: 2})
				v.Queue(teamB, harness.QueueWant{Allocated: "4", FairShare: "4", Pending: "0", RunningJobs: 2})
				evicted, kept = touched, untouched
				return v.Err()
			},
		},
		{
			title: fmt.Sprintf("Nothing is changed: the Job controller replaces the evicted pods, after its back-off (%s for\n", jobBackoff) +
				"   a gang's 2 failed pods). The new pods wait: the nodes are full, and team-a, at its fair share,\n" +
				"   may not reclaim from team-b.",
			lines: func() []outcome {
				return []outcome{
					ql("Jobs "+both(evicted), "2 new pods each, not bound", fmt.Sprintf("%q: the nodes are full; Reclaim declines,", waitWhy("<job>")[1])),
					ql("", "", "as team-a would go above its fair share (cpu 6 of 4)"),
					ql("", "one of them adds \"reservation: room held on <node> ...;", "team-a's first job in line holds the room that frees;"),
					ql("", "start time unknown ...\"", "the pods it waits for say nothing of their runtime"),
					ql("Jobs "+both(kept)+", "+both(bKeys), "each 2 pods Running", "unchanged"),
					ql("Queue team-a", "allocated cpu 4, fair share cpu 4, pending cpu 4, 2 pending jobs", "asks for 8, gets its fair share"),
					ql("Queue team-b", "allocated cpu 4, fair share cpu 4", "unchanged"),
				}
			},
			within: jobBackoff + waitTimeout,
			check: func(s *snapshot) error {
				v := s.check()
				reserving := 0
				for _, k := range evicted {
					v.JobPodsWait(k, waitWhy(k)...)
					if pods := v.CurrentPods(k); len(pods) > 0 && !slices.ContainsFunc(pods, func(p harness.Pod) bool { return !unknownStart.MatchString(p.Message) }) {
						reserving++
					}
				}
				if reserving != 1 {
					v.Wait("%d of team-a's waiting Jobs hold a reservation of unknown start; expected 1", reserving)
				}
				for _, k := range append(slices.Clone(kept), bKeys...) {
					v.JobRuns(k, 0)
				}
				v.Queue(teamA, harness.QueueWant{Allocated: "4", FairShare: "4", Pending: "4", PendingJobs: 2, RunningJobs: 2})
				v.Queue(teamB, harness.QueueWant{Allocated: "4", FairShare: "4", Pending: "0", RunningJobs: 2})
				return v.Err()
			},
		},
		{
			title: fmt.Sprintf("Nothing is changed: team-b's pods finish (%s after they started), and so do team-a's two\n", bRunFor) +
				fmt.Sprintf("   gangs that kept running (%s). team-a's waiting gangs take the room back.", aRunFor),
			lines: func() []outcome {
				return []outcome{
					ql("Jobs "+both(bKeys), "Complete", "ran "+bRunFor.String()),
					ql("Jobs "+both(kept), "Complete", "ran "+aRunFor.String()),
					ql("Jobs "+both(evicted), "2 pods bound, Running", "room is free again: they start, whole"),
					ql("Queue team-a", "allocated cpu 4, fair share cpu 4", "a queue's fair share is at most what it asks for"),
					ql("Queue team-b", "allocated 0, fair share 0", "asks for nothing"),
				}
			},
			within: aRunFor + waitTimeout,
			check: func(s *snapshot) error {
				v := s.check()
				for _, k := range append(slices.Clone(bKeys), kept...) {
					v.JobDone(k, 0)
				}
				for _, k := range evicted {
					v.JobRuns(k, gangSize)
				}
				v.Queue(teamA, harness.QueueWant{Allocated: "4", FairShare: "4", Pending: "0", RunningJobs: 2})
				v.Queue(teamB, harness.QueueWant{Allocated: "0", FairShare: "0", Pending: "0"})
				return v.Err()
			},
		},
		{
			title: fmt.Sprintf("Nothing is changed: the re-run gangs finish (%s). Every Job is Complete.", aRunFor),
			lines: func() []outcome {
				return []outcome{
					ql("all 6 Jobs", "Complete", fmt.Sprintf("the evicted ones with %d failed (evicted) pods and 2 succeeded", gangSize)),
					ql("Queues team-a, team-b", "allocated 0, pending 0, no jobs", "all work done"),
				}
			},
			within: aRunFor + waitTimeout,
			check: func(s *snapshot) error {
				v := s.check()
				for _, k := range append(slices.Clone(aKeys), bKeys...) {
					failed := 0
					if slices.Contains(evicted, k) {
						failed = gangSize
					}
					v.JobDone(k, int32(failed))
				}
				v.Queue(teamA, harness.QueueWant{Allocated: "0", FairShare: "0", Pending: "0"})
				v.Queue(teamB, harness.QueueWant{Allocated: "0", FairShare: "0", Pending: "0"})
				return v.Err()
			},
		},
	}
}

func jobKeys(jobs []gangJob) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.key())
	}
	return out
}

// ql is a line of what a step of the queues story expects.
func ql(name, want, because string) outcome { return outcome{Name: name, Want: want, Because: because} }

// printQueueStory prints the pods, the Jobs, the nodes and the queues.
func printQueueStory(s *snapshot) {
	harness.WritePods(os.Stdout, s.pods, s.dump, ourScheduler)
	fmt.Println()
	harness.WriteJobs(os.Stdout, s.jobs, s.pods)
	fmt.Println()
	harness.WriteNodeCPU(os.Stdout, s.dump, s.pods)
	fmt.Println()
	harness.WriteQueues(os.Stdout, s.queues)
}
