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

package standing

import (
	"sort"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Timeline is when the room the running pods hold is expected to free:
// the cluster's idle room now, and each running pod's requests at its
// expected end (framework.TaskInfo.ExpectedEnd: what it or its Job
// says). Pods that give no runtime never
// free their room in it. It is a picture taken once; it is not safe to
// change, but safe to read from several goroutines.
type Timeline struct {
	now  time.Time
	idle resources.Resource
	// releases are sorted by time.
	releases []release
	// unknown counts the running pods that give no runtime.
	unknown int
}

// release is the room a running pod frees when it ends.
type release struct {
	at    time.Time
	queue string
	room  resources.Resource
}

// NewTimeline builds the timeline of nodes at now. queueOf names the
// tenant queue of a running task (framework.DefaultQueue, or "", for the
// default one); nil puts every task in the default queue. Placeholders
// and cordoned nodes add neither idle room nor releases: nothing new
// starts there. A node's idle room is NodeInfo.Idle, so a capped node
// (two-level scheduling) frees no more than its cap allows; an
// over-committed one counts as having none.
func NewTimeline(nodes []*framework.NodeInfo, now time.Time, queueOf func(*framework.TaskInfo) string) *Timeline {
	t := &Timeline{now: now}
	for _, n := range nodes {
		if n.Placeholder || n.Node == nil || n.Node.Spec.Unschedulable {
			continue
		}
		t.idle.Add(clampNegative(n.Idle()))
		for _, task := range n.Pods {
			if !task.Counted {
				continue
			}
			end, ok := task.ExpectedEnd(now)
			if !ok {
				t.unknown++
				continue
			}
			q := framework.DefaultQueue
			if queueOf != nil {
				q = normalQueue(queueOf(task))
			}
			t.releases = append(t.releases, release{at: end, queue: q, room: task.Requests})
		}
	}
	sort.SliceStable(t.releases, func(i, j int) bool { return t.releases[i].at.Before(t.releases[j].at) })
	return t
}

// Now is the time the timeline was taken at.
func (t *Timeline) Now() time.Time { return t.now }

// Idle is the room idle when the timeline was taken, summed over the
// nodes.
func (t *Timeline) Idle() resources.Resource { return t.idle.Clone() }

// Unestimated counts the running pods that give no runtime: their room
// is never counted as freeing.
func (t *Timeline) Unestimated() int { return t.unknown }

// Need is what a start estimate asks of the timeline.
type Need struct {
	// Request is the room needed: what the job's pending pods request,
	// plus what those of the jobs ahead of it in its queue request (they
	// are expected to start first).
	Request resources.Resource
	// Queue is the job's tenant queue (framework.DefaultQueue or "" for
	// the default one).
	Queue string
	// Share, when set, bounds what the queue may hold: the room the job
	// and those ahead take must also fit in Share less what the queue's
	// running pods hold (Held), and only the queue's own pods ending
	// raise that. Nil: no queues, the cluster's idle room alone decides.
	Share, Held *resources.Resource
}

// Start is when need is expected to fit: now if it fits in the idle
// room, else the first moment the running pods' expected ends free
// enough. ok is false when it never does within what the timeline
// knows (the room it needs is held by pods that give no runtime, or is
// more than the cluster has).
//
// It sums room over nodes: it does not see that the room may free on
// different nodes than the job can use together (a pod needs its request
// on one node; a gang's topology), so it is the earliest start the
// cluster's capacity allows, never later than the real one for that
// reason, and later only when the pods ahead take longer or running pods
// overrun their estimates.
func (t *Timeline) Start(need Need) (time.Time, bool) {
	free := t.idle.Clone()
	queue := normalQueue(need.Queue)
	var room resources.Resource
	shared := need.Share != nil
	shareNeed := need.Request.Clone()
	shareNeed.Pods = 0 // a share does not count pods
	if shared {
		room = need.Share.Clone()
		if need.Held != nil {
			room.Sub(*need.Held)
		}
		room.Pods = 0
	}
	fits := func() bool {
		return free.Fits(need.Request) && (!shared || room.Fits(shareNeed))
	}
	if fits() {
		return t.now, true
	}
	for _, r := range t.releases {
		free.Add(r.room)
		if shared && r.queue == queue {
			room.Add(r.room)
			room.Pods = 0
		}
		if fits() {
			if r.at.Before(t.now) {
				return t.now, true // a pod that overran its estimate
			}
			return r.at, true
		}
	}
	return time.Time{}, false
}

// normalQueue names the default queue one way.
func normalQueue(q string) string {
	if q == "" {
		return framework.DefaultQueue
	}
	return q
}

// clampNegative sets the negative amounts of r to zero.
func clampNegative(r resources.Resource) resources.Resource {
	r.MilliCPU = max(r.MilliCPU, 0)
	r.Memory = max(r.Memory, 0)
	r.EphemeralStorage = max(r.EphemeralStorage, 0)
	r.Pods = max(r.Pods, 0)
	for k, v := range r.Scalar {
		if v < 0 {
			r.Scalar[k] = 0
		}
	}
	return r
}
