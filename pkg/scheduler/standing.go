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

package scheduler

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	"github.com/batch-scheduler/batch-scheduler/pkg/standing"
)

// Placer is what the scheduling queue may offer for the jobs' standing:
// each waiting job's place in its tenant queue (pkg/schedulingqueue
// implements it). Without it, a job's standing has no position and
// counts only its own pods.
type Placer interface {
	Places() map[framework.JobID]schedulingqueue.Place
}

// placesEvery is how often the places and the timeline of running pods'
// ends are recomputed (when a job fails within it, the last ones serve):
// a backlogged cluster fails many attempts a second, and both cost a walk
// over every pending job or running pod.
const placesEvery = time.Second

// standings is where the pending jobs stand (pkg/standing): the places
// and timeline of the last refresh, and the estimate each job was last
// told.
type standings struct {
	placer Placer
	// mu guards the fields below. The loop writes them (a failed
	// attempt, a placement); the debug endpoint reads them. Nothing is
	// called with it held.
	mu        sync.Mutex
	placesAt  time.Time
	places    map[framework.JobID]schedulingqueue.Place
	timeline  *standing.Timeline
	estimates map[framework.JobID]standing.Estimate
}

func newStandings(q Queue) *standings {
	st := &standings{estimates: map[framework.JobID]standing.Estimate{}}
	st.placer, _ = q.(Placer)
	return st
}

// standingOf estimates when c's job starts, records the estimate, and
// words its standing for its pods' condition ("" when there is nothing
// to tell: no queues and no start time). The loop calls it when the
// job's attempt failed, with the cycle's snapshot.
func (s *Scheduler) standingOf(c *cycle) string {
	now := time.Now()
	st := s.standing
	st.mu.Lock()
	stale := now.Sub(st.placesAt) >= placesEvery
	st.mu.Unlock()
	if stale {
		var places map[framework.JobID]schedulingqueue.Place
		if st.placer != nil {
			places = st.placer.Places()
		}
		timeline := standing.NewTimeline(s.snapshot.NodeInfos(), now, func(t *framework.TaskInfo) string { return t.Queue })
		s.metrics.Reservations.Set(float64(len(s.nominated.Reservations())))
		st.mu.Lock()
		st.places, st.timeline, st.placesAt = places, timeline, now
		for id, est := range st.estimates {
			// A job that no longer waits was placed (started dropped
			// it) or deleted; without a Placer, an hour bounds the
			// map.
			if _, waiting := places[id]; !waiting && st.placer != nil || now.Sub(est.Made) > time.Hour {
				delete(st.estimates, id)
			}
		}
		st.mu.Unlock()
	}
	st.mu.Lock()
	place, placed := st.places[c.job.ID]
	timeline := st.timeline
	st.mu.Unlock()

	est := standing.Estimate{Made: now}
	if r, ok := s.nominated.Reservation(c.job.ID); ok {
		est.Basis, est.Start, est.Known = standing.BasisReservation, r.Start, r.StartKnown
		est.Why = "a running pod its reservation waits for gives no expected runtime"
	} else {
		need := standing.Need{Queue: c.job.Queue}
		if placed {
			need.Request = place.Ahead
		} else {
			for _, pod := range c.job.Pending {
				need.Request.Add(resources.PodRequests(pod))
			}
		}
		if path := c.job.Queues.Path(c.job.Queue); len(path) > 0 {
			leaf := path[len(path)-1]
			share, held := amounts(leaf.FairShare), amounts(leaf.Allocated)
			need.Share, need.Held = &share, &held
		}
		est.Basis = standing.BasisCapacity
		est.Start, est.Known = timeline.Start(need)
		switch {
		case est.Known && !est.Start.After(now):
			// The room is idle, summed over the nodes, but the cycle
			// found none its pods can use: fragmentation, or a rule
			// (affinity, topology) the sum does not see.
			est.Known = false
			est.Why = "the room it needs is idle, but not on nodes its pods may use together"
		case est.Known:
		case timeline.Unestimated() > 0:
			est.Why = fmt.Sprintf("the room it needs (with the jobs ahead of it) is held by running pods that give no expected runtime (%d do)", timeline.Unestimated())
		default:
			est.Why = "it needs more room (with the jobs ahead of it) than the cluster, or its queue's share, has"
		}
	}
	st.mu.Lock()
	st.estimates[c.job.ID] = est
	st.mu.Unlock()
	// The place is told when queues are on: without them every job is
	// in one queue, and the pods' message stays as kube-scheduler words
	// it unless there is a start to tell.
	where := ""
	if c.job.Queues != nil {
		if !placed {
			place.Queue = c.job.Queue
		}
		where = standing.Place(place.Queue, place.Position, place.Length)
	}
	return standing.Clause(where, est)
}

// amounts converts queue amounts to a Resource.
func amounts(a framework.ResourceAmounts) resources.Resource {
	return resources.FromList(a.ToList())
}

// started measures, when job id's placement is made at now, how far that
// was from the start it was last told.
func (s *Scheduler) started(id framework.JobID, now time.Time) {
	s.standing.mu.Lock()
	est, ok := s.standing.estimates[id]
	delete(s.standing.estimates, id)
	s.standing.mu.Unlock()
	if !ok || !est.Known {
		return
	}
	off, direction := now.Sub(est.Start), "late"
	if off < 0 {
		off, direction = -off, "early"
	}
	s.metrics.StartEstimateError.WithLabelValues(est.Basis, direction).Observe(off.Seconds())
}

// Standing reports where every waiting job stands (pkg/standing,
// /debug/standing): the places of the last refresh (the last failed
// attempt at most placesEvery after the one before), each job's last
// estimate, and the reservations held now.
func (s *Scheduler) Standing() standing.Report {
	s.standing.mu.Lock()
	rep := standing.Report{Now: time.Now(), PlacesAt: s.standing.placesAt}
	jobs := make([]standing.Job, 0, len(s.standing.places))
	ids := make([]framework.JobID, 0, len(s.standing.places))
	for id, p := range s.standing.places {
		j := standing.Job{Job: id.String(), Gang: id.Gang, Queue: p.Queue, Position: p.Position, QueueLength: p.Length,
			Priority: p.Priority, PendingPods: p.PendingPods}
		if est, ok := s.standing.estimates[id]; ok {
			made := est.Made
			j.EstimateBasis, j.EstimatedAt = est.Basis, &made
			if est.Known {
				start := est.Start
				j.EstimatedStart = &start
			} else {
				j.StartUnknown = est.Why
			}
		}
		jobs = append(jobs, j)
		ids = append(ids, id)
	}
	s.standing.mu.Unlock()
	held := s.nominated.Reservations()
	for i, id := range ids {
		if r, ok := held[id]; ok {
			res := &standing.Reservation{Nodes: r.Nodes, WaitFor: r.WaitFor, HeldSince: r.HeldSince, Made: r.Made}
			if r.StartKnown {
				start := r.Start
				res.Start = &start
			}
			jobs[i].Reservation = res
		}
	}
	sort.Slice(jobs, func(i, j int) bool {
		a, b := jobs[i], jobs[j]
		if a.Queue != b.Queue {
			return a.Queue < b.Queue
		}
		return a.Position < b.Position
	})
	rep.Jobs = jobs
	return rep
}

// withSentence ends msg with s as a sentence of its own, as
// kube-scheduler adds what its PostFilter did to the nodes' verdict.
func withSentence(msg, s string) string {
	if s == "" {
		return msg
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg + " " + strings.ToUpper(s[:1]) + s[1:] + "."
}
