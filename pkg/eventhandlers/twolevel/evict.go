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

package twolevel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/eviction"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// This file is evictOnRevoke: what the watcher evicts when use exceeds
// a shrunk or revoked grant (whole gangs or single pods, chosen to give
// back enough with the least lost), and the drains that finish a gang's
// eviction.

// unitKind says what evicting a unit takes.
type unitKind int

const (
	// podUnit is one pod whose eviction leaves no gang below its quorum:
	// a pod of no gang, or a member of a gang that runs more members than
	// its quorum.
	podUnit unitKind = iota
	// gangUnit is a gang evicted whole: every running member, on every
	// node.
	gangUnit
)

// unit is what evictAbove evicts at a time.
type unit struct {
	kind unitKind
	// job is the pod's job (podUnit) or the gang (gangUnit).
	job framework.JobID
	// victims are the pods evicted: the pod, or the gang's running
	// members wherever they run.
	victims []*framework.TaskInfo
	// frees is what the eviction frees on the node being checked.
	frees resources.Resource
	// priority is the pod's, or the highest of the gang's members.
	priority int32
	// created orders units among equals, newest first: the pod's
	// creation, or the gang's oldest member's.
	created time.Time
	// quorum and spare describe a gang (gangUnit): its quorum and how
	// many of its members run above it.
	quorum int32
	spare  int
	// spares are the podUnits of a gang's members on the node above its
	// quorum (gangUnit): what choose falls back to when they suffice.
	spares []*unit
}

// key names u for a stable order and for messages.
func (u *unit) key() string {
	if u.kind == gangUnit {
		return u.job.String()
	}
	return u.victims[0].Key()
}

// before orders units by what evicting them costs: the lowest priority
// first; among equal priorities single pods (of no gang, or above their
// gang's quorum) before whole gangs, gangs of fewer running members first;
// then the newest first.
func before(a, b *unit) bool {
	if a.priority != b.priority {
		return a.priority < b.priority
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.kind == gangUnit && len(a.victims) != len(b.victims) {
		return len(a.victims) < len(b.victims)
	}
	if !a.created.Equal(b.created) {
		return a.created.After(b.created)
	}
	return a.key() < b.key()
}

// evictAbove gives back the capacity by which this scheduler's pods exceed
// the cap on e's node, never leaving a gang running below its quorum:
//
//   - pods already asked to be evicted (evicting) and terminating pods
//     count as gone;
//   - a pod of no gang is evicted on its own;
//   - a bound member of a gang that runs (bound, not terminating, not
//     being evicted) more members than its quorum may be evicted on its
//     own, the newest first, as long as the gang keeps its quorum;
//   - when the node needs more of a gang than that, the gang is evicted
//     whole: every running member, on every node (see drain);
//   - units go the lowest priority first, then by before, until what is
//     left fits the cap; then each chosen unit is given back, the last
//     chosen first, if what is left still fits without evicting it, so no
//     unit is evicted that the others make unnecessary, and a whole gang
//     gives way to its members above quorum when those suffice (choose).
//
// An assumed pod (its bind in flight) is never evicted on its own; it is
// judged once bound. A gang whose members the cache cannot list is left
// alone for this check.
func (w *watcher) evictAbove(ctx context.Context, e eventhandlers.CapExceeded) {
	if w.h.client == nil {
		return
	}
	left := e.Used.Clone()
	var candidates []*framework.TaskInfo
	for _, t := range tasksOf(e, framework.GroupResolver{Matcher: w.h.Dialects()}) {
		if w.going(t) {
			left.Sub(t.Requests)
			continue
		}
		candidates = append(candidates, t)
	}
	if withinCap(left, e.Cap) {
		return
	}
	for _, u := range choose(w.units(ctx, candidates), left, e.Cap) {
		if u.kind == gangUnit {
			w.evictGang(ctx, e.Node, u)
			continue
		}
		why := fmt.Sprintf("above the grant of framework %s", w.h.framework)
		if u.job.Gang {
			why += fmt.Sprintf("; gang %s keeps its quorum", u.job)
		}
		w.evictPod(ctx, e.Node, u.victims[0], why)
	}
}

// tasksOf returns e's tasks: the cache's, or, from a Cache that gives
// none, tasks built from the pods with the jobs r resolves (the groups
// they name explicitly in the handler's dialects).
func tasksOf(e eventhandlers.CapExceeded, r framework.GroupResolver) []*framework.TaskInfo {
	if len(e.Tasks) == len(e.Pods) {
		return e.Tasks
	}
	out := make([]*framework.TaskInfo, len(e.Pods))
	for i, pod := range e.Pods {
		t := framework.NewTaskInfo(pod, r)
		t.Own = true
		out[i] = t
	}
	return out
}

// going reports whether t's pod counts as gone: terminating, or asked to
// be evicted less than evictionRetry ago.
func (w *watcher) going(t *framework.TaskInfo) bool {
	if t.GetDeletionTimestamp() != nil {
		return true
	}
	_, asked := w.evicting[t.GetUID()]
	return asked
}

// job returns the cache's job id, read once per check; nil when the cache
// has none or cannot list jobs.
func (w *watcher) job(id framework.JobID) *framework.JobInfo {
	if j, ok := w.looked[id]; ok {
		return j
	}
	var j *framework.JobInfo
	if w.jobs != nil {
		if got, ok := w.jobs.Job(id); ok {
			j = got
		}
	}
	w.looked[id] = j
	return j
}

// running counts the members of job that hold its quorum: bound, not
// finished, not terminating and not being evicted.
func (w *watcher) running(job *framework.JobInfo) int {
	n := 0
	for _, t := range job.Tasks {
		if t.Status == framework.TaskBound && t.Counted && !w.going(t) {
			n++
		}
	}
	return n
}

// members returns what evicting job whole takes: its pods of this
// scheduler on a node (bound or assumed) that are not finished,
// terminating or being evicted, and those of here not among them, by node
// and name.
func (w *watcher) members(job *framework.JobInfo, here []*framework.TaskInfo) []*framework.TaskInfo {
	var out []*framework.TaskInfo
	in := map[types.UID]bool{}
	for _, t := range job.Tasks {
		if t.OnNode() && t.Counted && t.Own && !w.going(t) {
			out = append(out, t)
			in[t.GetUID()] = true
		}
	}
	for _, t := range here {
		if !in[t.GetUID()] {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].NodeName != out[j].NodeName {
			return out[i].NodeName < out[j].NodeName
		}
		return out[i].Key() < out[j].Key()
	})
	return out
}

// units returns the ways of freeing room among candidates, the pods on
// one node that are not going: a podUnit per pod of no gang and per
// member above its gang's quorum, and a gangUnit per gang.
func (w *watcher) units(ctx context.Context, candidates []*framework.TaskInfo) []*unit {
	var out []*unit
	byGang := map[framework.JobID][]*framework.TaskInfo{}
	var gangs []framework.JobID
	for _, t := range candidates {
		if !t.Job.Gang {
			if t.Status == framework.TaskBound {
				out = append(out, podUnitOf(t))
			}
			continue
		}
		if _, ok := byGang[t.Job]; !ok {
			gangs = append(gangs, t.Job)
		}
		byGang[t.Job] = append(byGang[t.Job], t)
	}
	for _, id := range gangs {
		here := byGang[id]
		job := w.job(id)
		if job == nil {
			klog.FromContext(ctx).V(2).Info("Cannot list a gang's members; its pods are not evicted for now",
				"gang", id.String(), "pods", len(here))
			continue
		}
		quorum := job.MinAvailable()
		spare := 0
		if quorum > 0 {
			// A gang without a usable quorum has no spare member: it goes
			// whole or not at all.
			spare = max(w.running(job)-int(quorum), 0)
		}
		var bound []*framework.TaskInfo
		for _, t := range here {
			if t.Status == framework.TaskBound {
				bound = append(bound, t)
			}
		}
		sort.SliceStable(bound, func(i, j int) bool {
			return bound[j].GetCreationTimestamp().Time.Before(bound[i].GetCreationTimestamp().Time)
		})
		var spares []*unit
		for _, t := range bound[:min(spare, len(bound))] {
			spares = append(spares, podUnitOf(t))
		}
		out = append(out, spares...)
		if len(spares) == len(here) {
			// Evicting the gang whole would free nothing more here.
			continue
		}
		g := &unit{kind: gangUnit, job: id, victims: w.members(job, here), quorum: quorum, spare: spare, spares: spares}
		for _, t := range here {
			g.frees.Add(t.Requests)
		}
		for i, t := range g.victims {
			if p := t.Priority(); i == 0 || p > g.priority {
				g.priority = p
			}
			if c := t.GetCreationTimestamp().Time; i == 0 || c.Before(g.created) {
				g.created = c
			}
		}
		out = append(out, g)
	}
	return out
}

func podUnitOf(t *framework.TaskInfo) *unit {
	return &unit{kind: podUnit, job: t.Job, victims: []*framework.TaskInfo{t}, frees: t.Requests,
		priority: t.Priority(), created: t.GetCreationTimestamp().Time}
}

// choose picks, from units, what to evict so that left (what stays on the
// node) fits limit: units in the order of before until it fits (a whole
// gang replaces its members chosen before it), then each chosen unit,
// the last first, is kept if the rest suffice without it, and a whole
// gang is replaced by its members above quorum if those suffice. When
// even every unit does not suffice, all are chosen.
func choose(units []*unit, left, limit resources.Resource) []*unit {
	sort.SliceStable(units, func(i, j int) bool { return before(units[i], units[j]) })
	left = left.Clone()
	var chosen []*unit
	for _, u := range units {
		if withinCap(left, limit) {
			break
		}
		if u.kind == gangUnit {
			chosen = slices.DeleteFunc(chosen, func(c *unit) bool {
				if c.kind == podUnit && c.job == u.job {
					left.Add(c.frees)
					return true
				}
				return false
			})
		}
		chosen = append(chosen, u)
		left.Sub(u.frees)
	}
	for i := len(chosen) - 1; i >= 0; i-- {
		u := chosen[i]
		without := left.Clone()
		without.Add(u.frees)
		if withinCap(without, limit) {
			left = without
			chosen = slices.Delete(chosen, i, i+1)
			continue
		}
		if u.kind != gangUnit || len(u.spares) == 0 {
			continue
		}
		withSpares := without
		for _, s := range u.spares {
			withSpares.Sub(s.frees)
		}
		if withinCap(withSpares, limit) {
			// The spares take the gang's place, and are given back in
			// turn, the oldest first, if fewer of them suffice.
			left = withSpares
			chosen = slices.Replace(chosen, i, i+1, u.spares...)
			i += len(u.spares)
		}
	}
	return chosen
}

// evictGang evicts the gang of u whole, on every node, and remembers it
// (draining) so that members whose eviction is refused are asked again.
func (w *watcher) evictGang(ctx context.Context, node *v1.Node, u *unit) {
	nodes := map[string]bool{}
	for _, t := range u.victims {
		nodes[t.NodeName] = true
	}
	klog.FromContext(ctx).Info("Evicting a gang whole: freeing the node needs more of it than it runs above its quorum",
		"gang", u.job.String(), "node", klog.KObj(node), "pods", len(u.victims), "nodes", len(nodes),
		"quorum", u.quorum, "aboveQuorum", u.spare, "priority", u.priority)
	w.event(node, v1.EventTypeNormal, ReasonGrantGangEviction,
		fmt.Sprintf("evicting gang %s whole, %d pod(s) on %d node(s), to give back capacity above the grant of framework %s: the node needs more of the gang than the %d pod(s) it runs above its quorum of %d",
			u.job, len(u.victims), len(nodes), w.h.framework, u.spare, u.quorum))
	d := &drain{node: node, since: w.h.clock.Now()}
	w.draining[u.job] = d
	w.evictMembers(ctx, d, u.job, u.victims)
}

// continueDrains asks again to evict the members of gangs being evicted
// whole whose earlier eviction was refused or failed, once evictionRetry
// has passed, and forgets the gangs of which nothing runs any more.
func (w *watcher) continueDrains(ctx context.Context, now time.Time) {
	logger := klog.FromContext(ctx)
	ids := make([]framework.JobID, 0, len(w.draining))
	for id := range w.draining {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].String() < ids[j].String() })
	for _, id := range ids {
		d := w.draining[id]
		var left, retry []*framework.TaskInfo
		if job := w.job(id); job != nil {
			for _, t := range job.Tasks {
				if t.OnNode() && t.Counted && t.Own && t.GetDeletionTimestamp() == nil {
					left = append(left, t)
					if _, asked := w.evicting[t.GetUID()]; !asked {
						retry = append(retry, t)
					}
				}
			}
		}
		switch {
		case len(left) == 0:
			delete(w.draining, id)
			logger.Info("Gang evicted whole", "gang", id.String(), "node", klog.KObj(d.node))
		case !d.begun:
			if now.Sub(d.since) >= evictionRetry {
				delete(w.draining, id)
				logger.Info("No member of the gang could be evicted; whether it must go is decided again",
					"gang", id.String(), "node", klog.KObj(d.node))
			}
		case len(retry) > 0:
			sort.Slice(retry, func(i, j int) bool { return retry[i].Key() < retry[j].Key() })
			logger.Info("Finishing the eviction of a gang begun earlier", "gang", id.String(), "node", klog.KObj(d.node), "pods", len(retry))
			w.evictMembers(ctx, d, id, retry)
		}
	}
}

// evictMembers evicts members of the gang id being evicted whole for d,
// and reports those that could not be evicted yet.
func (w *watcher) evictMembers(ctx context.Context, d *drain, id framework.JobID, members []*framework.TaskInfo) {
	why := fmt.Sprintf("gang %s is evicted whole, above the grant of framework %s", id, w.h.framework)
	var notYet []string
	for _, t := range members {
		if w.evictPod(ctx, d.node, t, why) {
			d.begun = true
		} else {
			notYet = append(notYet, t.Key())
		}
	}
	if len(notYet) == 0 {
		return
	}
	klog.FromContext(ctx).Info("Some members of a gang being evicted whole could not be evicted yet; asking again later",
		"gang", id.String(), "node", klog.KObj(d.node), "pods", notYet, "retryAfter", evictionRetry)
	w.event(d.node, v1.EventTypeWarning, ReasonGrantEvictionRefused,
		fmt.Sprintf("could not evict %d of the pods of gang %s yet (a PodDisruptionBudget, or the API server); asking again in %s",
			len(notYet), id, evictionRetry))
}

// evictPod asks to evict t's pod, to give back capacity above the grant on
// node, and reports whether it is gone or going: the eviction was
// accepted, or the pod no longer exists. Either way the pod counts as
// gone until evictionRetry has passed.
func (w *watcher) evictPod(ctx context.Context, node *v1.Node, t *framework.TaskInfo, why string) bool {
	logger := klog.FromContext(ctx)
	pod := t.PodObject()
	w.evicting[pod.UID] = w.h.clock.Now()
	err := eviction.Evict(ctx, w.h.client, pod)
	switch {
	case err == nil:
		logger.Info("Evicted a pod above its framework's grant", "pod", klog.KObj(t), "node", t.NodeName,
			"grantNode", node.Name, "job", t.Job.String(), "priority", t.Priority())
		where := ""
		if t.NodeName != node.Name {
			where = " on node " + t.NodeName
		}
		w.event(node, v1.EventTypeNormal, ReasonGrantEviction, fmt.Sprintf("evicted %s%s: %s", t.Key(), where, why))
		return true
	case errors.Is(err, eviction.ErrGone):
		// Gone already, or replaced by a pod of the same name.
		return true
	case eviction.IsRefused(err):
		logger.V(2).Info("Eviction refused for now (a PodDisruptionBudget, or the API server is busy); retrying later",
			"pod", klog.KObj(pod), "node", t.NodeName, "job", t.Job.String(), "err", err)
	default:
		logger.Error(err, "Evicting a pod above its framework's grant", "pod", klog.KObj(pod), "node", t.NodeName, "job", t.Job.String())
	}
	return false
}

// withinCap reports whether used fits cap in every capped resource (all but
// the pod count).
func withinCap(used, limit resources.Resource) bool {
	used = used.Clone()
	used.Pods = 0
	return limit.Fits(used)
}
