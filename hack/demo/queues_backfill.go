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

// Act 2 of the queues story: a reservation, and backfill around it
// (docs/queues.md, "Reservations and backfill"). The scheduler's default
// profile lists Reservation first among the PostFilter plugins. On
// the same 4 nodes, once act 1's Jobs are deleted, team-a submits:
//
//	fill-1..3  gangs of 2 one-cpu pods that run fillRunFor and say so
//	           (batch-scheduler.io/expected-runtime): 6 of the 8 cpus
//	big        a gang of 4 two-cpu pods: the whole cluster. It fits only
//	           once every fill pod has ended, so it reserves all 4 nodes
//	           (no room is left that is not held for it), and the start
//	           it is told (T) is the fill pods' start plus fillRunFor
//	short      2 one-cpu pods expected to run shortRunFor, which ends
//	           well before T: they backfill the 2 free cpus at once
//	long       2 one-cpu pods expected to run longRunFor, past T: they wait
//	untimed    2 one-cpu pods that say nothing of their runtime: they wait
//
// team-a is the only queue that asks, so its fair share is the whole
// cluster and big may reserve (a queue above its share may not); T is
// within reclaimAfter (2m), so Reclaim is not asked, and would find no
// other queue to take from. The last steps check that big starts when it was
// told (within startTolerance: the simulated kubelets lag), and that long
// and untimed start only once it has run.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

const (
	// fillRunFor is long enough for big to reserve and short to backfill
	// well before the fill pods end.
	fillRunFor    = 30 * time.Second
	bigRunFor     = 10 * time.Second
	shortRunFor   = 10 * time.Second
	longRunFor    = time.Minute
	untimedRunFor = 10 * time.Second
	// startTolerance is how far from the start it was told big may start:
	// the simulated kubelets end the fill pods and start big's a moment
	// late.
	startTolerance = 10 * time.Second
)

// teamAJob is a Job of act 2: a gang of n pods of cpu in team-a's queue,
// each running runFor and saying it is expected to run expected (nothing
// if zero).
func teamAJob(name string, n int32, cpu string, runFor, expected time.Duration) gangJob {
	return gangJob{namespace: teamA, name: name, n: n, req: res{"cpu": cpu}, runFor: runFor, expected: expected, queue: teamA}
}

var (
	fillJobs = []gangJob{
		teamAJob("fill-1", gangSize, "1", fillRunFor, fillRunFor),
		teamAJob("fill-2", gangSize, "1", fillRunFor, fillRunFor),
		teamAJob("fill-3", gangSize, "1", fillRunFor, fillRunFor),
	}
	bigJob     = teamAJob("big", 4, "2", bigRunFor, bigRunFor)
	shortJob   = teamAJob("short", gangSize, "1", shortRunFor, shortRunFor)
	longJob    = teamAJob("long", gangSize, "1", longRunFor, longRunFor)
	untimedJob = teamAJob("untimed", gangSize, "1", untimedRunFor, 0)
)

// reservationText is the reservation clause of a waiting pod's message
// (reservationMessage in pkg/plugins/capacity): the nodes held, and the
// expected start. Other clauses may come before or after it.
var reservationText = regexp.MustCompile(`reservation: room held on (.+?) until [0-9]+ running pods end; expected to start in \S+ \(at ([^)]+)\)`)

// told is what big's pods say of their reservation.
type told struct {
	// nodes is how many nodes are held; at is the expected start.
	nodes int
	at    time.Time
	// text is the reservation clause as the pods say it.
	text string
}

// heldNodes counts the nodes of a reservation clause, e.g. 4 for
// "node-1, node-2, node-3 and 1 more".
func heldNodes(s string) int {
	more := 0
	if i := strings.Index(s, " and "); i >= 0 {
		more, _ = strconv.Atoi(strings.TrimSuffix(s[i+len(" and "):], " more"))
		s = s[:i]
	}
	return len(strings.Split(s, ", ")) + more
}

// bigWaits checks that every pod of big waits with a reservation of all
// the nodes and an expected start, the same for all, and returns it.
func bigWaits(v *harness.Check) (told, bool) {
	pods := v.CurrentPods(bigJob.key())
	if len(pods) != int(bigJob.n) {
		v.Wait("the Job controller has created %d of the %d pods of Job %s so far", len(pods), bigJob.n, bigJob.key())
		return told{}, false
	}
	var t told
	for _, p := range pods {
		switch {
		case p.Node != "":
			v.Fail("%s is bound to %s before the room it waits for freed", p.Key, p.Node)
			return told{}, false
		case !p.Unschedulable:
			v.Wait("%s has no PodScheduled=False/Unschedulable condition yet", p.Key)
			return told{}, false
		}
		m := reservationText.FindStringSubmatch(p.Message)
		if m == nil {
			v.Wait("%s waits with %q: no reservation with an expected start", p.Key, p.Message)
			return told{}, false
		}
		at, err := time.Parse(time.RFC3339, m[2])
		if err != nil {
			v.Fail("%s: the reservation's start %q: %v", p.Key, m[2], err)
			return told{}, false
		}
		if !t.at.IsZero() && !at.Equal(t.at) {
			v.Wait("the pods of Job %s are told different starts (%s, %s)", bigJob.key(), clock(t.at), clock(at))
			return told{}, false
		}
		t = told{nodes: heldNodes(m[1]), at: at, text: m[0]}
	}
	if t.nodes != len(queueNodeNames) {
		v.Wait("the pods of Job %s say %q: %d nodes held; expected all %d", bigJob.key(), t.text, t.nodes, len(queueNodeNames))
		return told{}, false
	}
	return t, true
}

// waitsBehindBig checks that every pod of Job j exists and is not bound (bound
// is final: it took room held for big), and, if why is set, that it is
// Unschedulable with a message containing why.
func waitsBehindBig(v *harness.Check, j gangJob, why string) {
	pods := v.CurrentPods(j.key())
	if len(pods) != int(j.n) {
		v.Wait("the Job controller has created %d of the %d pods of Job %s so far", len(pods), j.n, j.key())
		return
	}
	for _, p := range pods {
		switch {
		case p.Node != "":
			v.Fail("%s is bound to %s: it took room held for %s", p.Key, p.Node, bigJob.key())
		case why == "":
		case !p.Unschedulable:
			v.Wait("%s has no PodScheduled=False/Unschedulable condition yet", p.Key)
		case !strings.Contains(p.Message, why):
			v.Wait("%s is Unschedulable with %q, which does not contain %q", p.Key, p.Message, why)
		}
	}
}

// started is when the last pod of Job j started; zero until all have.
func started(v *harness.Check, j gangJob) time.Time {
	pods := v.CurrentPods(j.key())
	if len(pods) != int(j.n) {
		return time.Time{}
	}
	var last time.Time
	for _, p := range pods {
		if p.Started.IsZero() {
			return time.Time{}
		}
		if p.Started.After(last) {
			last = p.Started
		}
	}
	return last
}

// clock renders t as a time of day, UTC.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

// deleteJobs deletes jobs; the garbage collector then deletes their pods.
func deleteJobs(jobs ...gangJob) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		return progress(fmt.Sprintf("deleting act 1's %d Jobs", len(jobs)), func() error {
			background := metav1.DeletePropagationBackground
			for _, j := range jobs {
				if err := e.cp.Client.BatchV1().Jobs(j.namespace).Delete(ctx, j.name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
					return fmt.Errorf("deleting Job %s: %w", j.key(), err)
				}
			}
			return nil
		})
	}
}

// backfillSteps is act 2 of the queues story.
func backfillSteps() []step {
	// at is the start big is told in the step it is created; fillStart
	// when the last fill pod started; bigStart when big's last pod did.
	var at, fillStart, bigStart time.Time
	var said string
	act1 := append(jobKeys(aJobs), jobKeys(bJobs)...)
	fills := jobKeys(fillJobs)
	both := func(keys []string) string { return strings.Join(keys, ", ") }
	full := fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu", len(queueNodeNames), len(queueNodeNames))
	return []step{
		{
			title: "Act 2: a reservation, and backfill around it. Act 1's Jobs are deleted. team-a submits 3 Jobs\n" +
				fmt.Sprintf("   (%s): gangs of %d one-cpu pods, each running %s and saying so (annotation\n", both(fills), gangSize, fillRunFor) +
				"   batch-scheduler.io/expected-runtime). 6 of the 8 cpus are busy, 2 are free.",
			apply: func(ctx context.Context, e *env) error {
				if err := deleteJobs(slices.Concat(aJobs, bJobs)...)(ctx, e); err != nil {
					return err
				}
				return createJobs(fillJobs...)(ctx, e)
			},
			lines: func() []outcome {
				return []outcome{
					ql("act 1's 6 Jobs", "gone, with their pods", "deleted; the garbage collector deletes their pods"),
					ql("Jobs "+both(fills), "each 2 pods bound, Running", "6 one-cpu pods on 8 cpus"),
					ql("Queue team-a", "allocated cpu 6, fair share cpu 6", "the only queue that asks"),
				}
			},
			check: func(s *snapshot) error {
				v := s.check()
				for _, k := range act1 {
					if _, ok := s.jobs[k]; ok {
						v.Wait("Job %s is not deleted yet", k)
					}
				}
				for _, p := range s.pods {
					if slices.Contains(act1, p.Job) {
						v.Wait("%s, of act 1's Job %s, is not deleted yet", p.Key, p.Job)
					}
				}
				for _, k := range fills {
					v.JobRuns(k, 0)
				}
				v.Queue(teamA, harness.QueueWant{Allocated: "6", FairShare: "6", Pending: "0", RunningJobs: 3})
				return v.Err()
			},
		},
		{
			title: fmt.Sprintf("team-a submits %s: a gang of %d two-cpu pods (each runs %s), the whole cluster. It does\n", bigJob.name, bigJob.n, bigRunFor) +
				"   not fit. Reservation holds the room for it on the nodes where it fits soonest (all 4), and\n" +
				"   its pods are told when it is expected to start (T): when the last fill pod is expected to end.",
			jobs: []gangJob{bigJob},
			lines: func() []outcome {
				return []outcome{
					ql("Job "+bigJob.key(), "4 pods wait: \"reservation: room held on node-a, node-b, node-c and 1 more",
						"Reservation, first, holds the room that frees"),
					ql("", "until 6 running pods end; expected to start in <s> (at T)\"", "for big, rather than evict"),
					ql("Jobs "+both(fills), "each 2 pods Running", "unchanged: nothing is evicted, waiting is enough"),
					ql("Queue team-a", "allocated cpu 6, fair share cpu 8, pending cpu 8", "its fair share is the whole cluster: it may reserve"),
				}
			},
			check: func(s *snapshot) error {
				v := s.check()
				for _, k := range fills {
					v.JobRuns(k, 0)
				}
				t, ok := bigWaits(v)
				v.Queue(teamA, harness.QueueWant{Allocated: "6", FairShare: "8", Pending: "8", PendingJobs: 1, RunningJobs: 3})
				fillStart = time.Time{}
				for _, j := range fillJobs {
					if st := started(v, j); st.After(fillStart) {
						fillStart = st
					}
				}
				if ok {
					at, said = t.at, t.text
				}
				return v.Err()
			},
			done: func() string {
				return fmt.Sprintf("big's pods say %q:\n   T = %s UTC, the last fill pod's start (%s) plus its expected runtime (%s)", said, clock(at), clock(fillStart), fillRunFor)
			},
		},
		{
			title: fmt.Sprintf("team-a submits 3 more Jobs of %d one-cpu pods: %s (expected-runtime %s), %s (%s) and %s\n", gangSize, shortJob.name, shortRunFor, longJob.name, longRunFor, untimedJob.name) +
				"   (no runtime). The 2 free cpus are held for big; short, which ends well before T, may use them\n" +
				"   meanwhile (backfill). long would end after T, and nothing says when untimed would: they wait.",
			jobs: []gangJob{shortJob, longJob, untimedJob},
			lines: func() []outcome {
				return []outcome{
					ql("Job "+shortJob.key(), "2 pods bound, Running, at once", "backfill: it ends before T, so big starts no later"),
					ql("Jobs "+longJob.key()+", "+untimedJob.key(), "2 pods each, not bound", fmt.Sprintf("%q: the free room is held for big", full)),
					ql("Job "+bigJob.key(), "4 pods wait, told the same T", "short's pods end before the fill pods"),
					ql("Jobs "+both(fills), "each 2 pods Running", "unchanged"),
					ql("Queue team-a", "allocated cpu 8", "every cpu is busy"),
				}
			},
			check: func(s *snapshot) error {
				v := s.check()
				if !time.Now().Before(at) {
					v.Fail("T (%s) has passed: too late to show backfill", clock(at))
				}
				v.JobRuns(shortJob.key(), 0)
				waitsBehindBig(v, longJob, full)
				waitsBehindBig(v, untimedJob, full)
				if t, ok := bigWaits(v); ok && !t.at.Equal(at) {
					v.Wait("big's pods are told %s now, not the T of the step before (%s)", clock(t.at), clock(at))
				}
				for _, k := range fills {
					v.JobRuns(k, 0)
				}
				v.Queue(teamA, harness.QueueWant{Allocated: "8", FairShare: "8", PendingJobs: 3, RunningJobs: 4})
				return v.Err()
			},
		},
		{
			title: fmt.Sprintf("Nothing is changed: short ends (%s), the fill pods end at T, and big starts on the room held\n", shortRunFor) +
				"   for it. long and untimed still wait.",
			lines: func() []outcome {
				return []outcome{
					ql("Jobs "+both(fills)+", "+shortJob.key(), "Complete", "ran their expected runtime; none evicted"),
					ql("Job "+bigJob.key(), "4 pods bound, Running", fmt.Sprintf("from T on, within %s (the simulated kubelets lag)", startTolerance)),
					ql("Jobs "+longJob.key()+", "+untimedJob.key(), "2 pods each, not bound", "big takes all 8 cpus"),
					ql("Queue team-a", "allocated cpu 8, 1 running job", "big"),
				}
			},
			within: fillRunFor + waitTimeout,
			check: func(s *snapshot) error {
				v := s.check()
				for _, k := range append(slices.Clone(fills), shortJob.key()) {
					v.JobDone(k, 0)
				}
				v.JobRuns(bigJob.key(), 0)
				waitsBehindBig(v, longJob, "")
				waitsBehindBig(v, untimedJob, "")
				v.Queue(teamA, harness.QueueWant{Allocated: "8", FairShare: "8", PendingJobs: 2, RunningJobs: 1})
				if bigStart = started(v, bigJob); bigStart.IsZero() {
					v.Wait("big's pods have not all started")
				} else if d := bigStart.Sub(at); d < -startTolerance || d > startTolerance {
					v.Fail("big started at %s, %s from the T it was told (%s); expected within %s", clock(bigStart), d, clock(at), startTolerance)
				}
				return v.Err()
			},
			done: func() string {
				return fmt.Sprintf("big started at %s UTC, %s after the T it was told (%s UTC; tolerance %s)", clock(bigStart), bigStart.Sub(at), clock(at), startTolerance)
			},
		},
		{
			title: fmt.Sprintf("Nothing is changed: big finishes (%s); long and untimed start.", bigRunFor),
			lines: func() []outcome {
				return []outcome{
					ql("Job "+bigJob.key(), "Complete", "ran "+bigRunFor.String()),
					ql("Jobs "+longJob.key()+", "+untimedJob.key(), "each 2 pods bound, Running", "the room is free again"),
					ql("Queue team-a", "allocated cpu 4, 2 running jobs", "long and untimed"),
				}
			},
			within: bigRunFor + waitTimeout,
			check: func(s *snapshot) error {
				v := s.check()
				v.JobDone(bigJob.key(), 0)
				v.JobRuns(longJob.key(), 0)
				v.JobRuns(untimedJob.key(), 0)
				v.Queue(teamA, harness.QueueWant{Allocated: "4", Pending: "0", PendingJobs: 0, RunningJobs: 2})
				return v.Err()
			},
		},
	}
}
