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

package debugger

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// podWant is where the cache should hold a pod, by the rules of the
// default event handler.
type podWant int

const (
	// wantAbsent: not tracked (another scheduler's pending pod, a pod that
	// finished unscheduled, a gated pod).
	wantAbsent podWant = iota
	wantPending
	wantBound
)

// wantOf says where the cache should hold pod, by the framework's rule
// (framework.ClassifyPod), which the default handler follows.
func (v *verifier) wantOf(pod *v1.Pod) (podWant, string) {
	switch framework.ClassifyPod(pod, v.c.IsResponsibleFor) {
	case framework.PodAssigned:
		return wantBound, "bound to " + pod.Spec.NodeName
	case framework.PodPending:
		return wantPending, "pending"
	case framework.PodGated:
		return wantAbsent, "gated"
	}
	if framework.PodFinished(pod) {
		return wantAbsent, "finished before it was bound (" + string(pod.Status.Phase) + ")"
	}
	return wantAbsent, "another scheduler's pending pod (" + pod.Spec.SchedulerName + ")"
}

// taskState renders where the cache holds t.
func taskState(t *framework.TaskInfo) string {
	switch {
	case t == nil:
		return "absent"
	case t.Status == framework.TaskPending:
		return "pending"
	case t.Status == framework.TaskAssumed:
		return "assumed on " + t.NodeName
	}
	return "bound to " + t.NodeName
}

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// sameAmounts reports whether a and b hold the same amounts.
func sameAmounts(a, b resources.Resource) bool {
	d := a.Clone()
	d.Sub(b)
	return d.IsZero()
}

// diffs collects the differences of one comparison.
type diffs struct {
	out []Difference
}

func (ds *diffs) add(d Difference) { ds.out = append(ds.out, d) }

// compare finds every difference between tr and cv. It is deterministic
// in what it finds, so that re-checks can match their findings by kind,
// name and field.
func (v *verifier) compare(tr *truth, cv *cache.View) []Difference {
	ds := &diffs{}
	v.comparePods(ds, tr, cv)
	v.compareNodes(ds, tr, cv)
	v.compareExternal(ds, tr, cv)
	v.compareAccounting(ds, cv)
	v.compareCaps(ds, cv)
	v.compareJobs(ds, tr, cv)
	v.compareQueue(ds, tr, cv)
	return ds.out
}

func (v *verifier) comparePods(ds *diffs, tr *truth, cv *cache.View) {
	for uid, p := range tr.pods {
		want, truthState := v.wantOf(p)
		t := cv.Tasks[uid]
		// Built only for a difference: most pods have none.
		key := func() string { return podKey(p) }
		sub := func() subject { return subject{pod: podKey(p), custom: tr.podOrigin[uid] != apiServer} }
		state := func(msg string) {
			ds.add(Difference{Kind: DiffPod, Name: key(), Field: "state", Cache: taskState(t), Truth: truthState, Message: msg, subject: sub()})
		}
		switch want {
		case wantBound:
			switch {
			case t == nil:
				state("a bound pod is missing from the cache")
				continue
			case t.Status == framework.TaskPending:
				state("a bound pod is still pending in the cache")
				continue
			case t.NodeName != p.Spec.NodeName:
				ds.add(Difference{Kind: DiffPod, Name: key(), Field: "node", Cache: taskState(t), Truth: truthState,
					Message: "the pod is accounted on the wrong node", subject: sub()})
				continue
			case t.Status == framework.TaskAssumed:
				state("the pod is bound but the cache still has it assumed")
				continue
			}
			if t.Counted != framework.PodCountedOnNode(p) {
				ds.add(Difference{Kind: DiffPod, Name: key(), Field: "counted", Cache: strconv.FormatBool(t.Counted),
					Truth:   strconv.FormatBool(framework.PodCountedOnNode(p)) + " (phase " + string(p.Status.Phase) + ")",
					Message: "a finished pod must not count on its node, any other bound pod must", subject: sub()})
			}
			if own := v.c.IsResponsibleFor(p); t.Own != own {
				ds.add(Difference{Kind: DiffPod, Name: key(), Field: "own", Cache: strconv.FormatBool(t.Own), Truth: strconv.FormatBool(own),
					Message: "whether the pod is this scheduler's (what a node's cap bounds)", subject: sub()})
			}
		case wantPending:
			if t == nil {
				state("a pending pod of this scheduler is missing from the cache")
				continue
			}
			if t.Status == framework.TaskBound {
				state("a pending pod is bound in the cache")
				continue
			}
			// Pending, or assumed: its bind is in flight.
		case wantAbsent:
			if t == nil {
				continue
			}
			if t.Status == framework.TaskAssumed && !cv.Assumed[uid].InformerPending {
				// The assumption is kept until its bind is settled or
				// expires (see RemovePendingPod).
				continue
			}
			state("the cache holds a pod it should not track")
			continue
		}
		if t.GetResourceVersion() == p.ResourceVersion && p.ResourceVersion != "" {
			// The task was built from this very version of the pod:
			// its requests and job are the pod's.
			continue
		}
		if req := resources.PodRequests(p); !sameAmounts(t.Requests, req) {
			ds.add(Difference{Kind: DiffPod, Name: key(), Field: "requests", Cache: t.Requests.String(), Truth: req.String(),
				Message: "the pod's requests differ", subject: sub()})
		}
		if job := v.c.JobIDForPod(p); t.Job != job {
			ds.add(Difference{Kind: DiffPod, Name: key(), Field: "job", Cache: t.Job.String(), Truth: job.String(),
				Message: "the pod is in the wrong job", subject: sub()})
		}
	}
	for uid, t := range cv.Tasks {
		if _, ok := tr.pods[uid]; ok {
			continue
		}
		ds.add(Difference{Kind: DiffPod, Name: t.Key(), Field: "state", Cache: taskState(t), Truth: "absent",
			Message: "the cache holds a pod that does not exist", subject: subject{pod: t.Key(), custom: true}})
	}

	// Every task on a node is the cache's task of that pod, for that node,
	// and every task bound or assumed is on its node exactly once: the
	// tasks on a node are checked, and counted against the tasks that
	// name it; only a node where the counts differ is searched for the
	// culprit.
	valid := map[string]int{}
	check := func(n *framework.NodeInfo) {
		seen := make(map[types.UID]bool, len(n.Pods))
		for _, t := range n.Pods {
			uid := t.GetUID()
			cur, ok := cv.Tasks[uid]
			if !ok || cur != t || t.NodeName != n.Name() || seen[uid] {
				ds.add(Difference{Kind: DiffPod, Name: t.Key(), Field: "accountedOn", Cache: "on " + n.Name() + " as " + taskState(t),
					Truth: taskState(cur), Message: "a node holds a task that is not the cache's current task of the pod there, or holds it twice",
					subject: subject{pod: t.Key(), podsOnNode: n.Name(), custom: true}})
				continue
			}
			seen[uid] = true
			valid[n.Name()]++
		}
	}
	for _, n := range cv.Nodes {
		check(n)
	}
	for _, n := range cv.Outside {
		check(n)
	}
	naming := map[string]int{}
	for _, t := range cv.Tasks {
		if t.OnNode() {
			naming[t.NodeName]++
		}
	}
	for name, want := range naming {
		if valid[name] == want {
			continue
		}
		n := cv.Nodes[name]
		if n == nil {
			n = cv.Outside[name]
		}
		onNode := map[types.UID]bool{}
		if n != nil {
			for _, t := range n.Pods {
				onNode[t.GetUID()] = true
			}
		}
		for _, t := range cv.Tasks {
			if t.OnNode() && t.NodeName == name && !onNode[t.GetUID()] {
				ds.add(Difference{Kind: DiffPod, Name: t.Key(), Field: "accountedOn", Cache: "not on " + name,
					Truth: taskState(t), Message: "a bound or assumed pod is not counted on its node", subject: subject{pod: t.Key(), custom: true}})
			}
		}
	}
	for _, t := range cv.Tasks {
		if !t.OnNode() && valid[t.NodeName] > 0 && t.NodeName != "" {
			ds.add(Difference{Kind: DiffPod, Name: t.Key(), Field: "accountedOn", Cache: "pending with node " + t.NodeName,
				Truth: "pending", Message: "a pending task names a node", subject: subject{pod: t.Key(), custom: true}})
		}
	}
}

func (v *verifier) compareNodes(ds *diffs, tr *truth, cv *cache.View) {
	sel := v.c.Options().NodeSelector
	selected := func(n *v1.Node) bool { return sel == nil || sel.Matches(labels.Set(n.Labels)) }
	where := func(name string) string {
		if n, ok := cv.Nodes[name]; ok {
			if n.Placeholder {
				return "placeholder"
			}
			return "node"
		}
		if _, ok := cv.Outside[name]; ok {
			return "kept aside (outside the node selector)"
		}
		return "absent"
	}
	for name, n := range tr.nodes {
		sub := subject{node: name, custom: tr.nodeOrigin[name] != apiServer}
		if selected(n) {
			cn, ok := cv.Nodes[name]
			if !ok || cn.Placeholder {
				ds.add(Difference{Kind: DiffNode, Name: name, Field: "presence", Cache: where(name), Truth: "node",
					Message: "a node is missing from the cache", subject: sub})
				continue
			}
			if want := resources.FromList(n.Status.Allocatable); !sameAmounts(cn.Schedulable, want) {
				ds.add(Difference{Kind: DiffNode, Name: name, Field: "allocatable", Cache: cn.Schedulable.String(), Truth: want.String(),
					Message: "the node's allocatable differs", subject: sub})
			}
			continue
		}
		if _, ok := cv.Nodes[name]; ok {
			ds.add(Difference{Kind: DiffNode, Name: name, Field: "presence", Cache: where(name), Truth: "outside the node selector",
				Message: "a node outside the node selector is listed", subject: sub})
		}
		if !cv.Excluded[name] {
			ds.add(Difference{Kind: DiffNode, Name: name, Field: "excluded", Cache: "false", Truth: "true",
				Message: "the cache does not know that the node is outside the node selector", subject: sub})
		}
	}
	for name := range cv.Excluded {
		if n, ok := tr.nodes[name]; !ok || selected(n) {
			ds.add(Difference{Kind: DiffNode, Name: name, Field: "excluded", Cache: "true", Truth: "false (" + where2(n) + ")",
				Message: "the cache records a node as outside the node selector that is not", subject: subject{node: name, custom: true}})
		}
	}
	for name, cn := range cv.Nodes {
		tn, ok := tr.nodes[name]
		switch {
		case !cn.Placeholder && !ok:
			ds.add(Difference{Kind: DiffNode, Name: name, Field: "presence", Cache: "node", Truth: "absent",
				Message: "the cache holds a node that does not exist", subject: subject{node: name, custom: true}})
		case cn.Placeholder && len(cn.Pods) == 0 && len(cn.ExternalKeys) == 0:
			ds.add(Difference{Kind: DiffNode, Name: name, Field: "presence", Cache: "unused placeholder", Truth: where2(tn),
				Message: "a placeholder with nothing accounted to it was not deleted", subject: subject{node: name, custom: true}})
		}
	}
	for name, cn := range cv.Outside {
		tn, ok := tr.nodes[name]
		switch {
		case !ok || selected(tn):
			ds.add(Difference{Kind: DiffNode, Name: name, Field: "presence", Cache: "kept aside (outside the node selector)", Truth: where2(tn),
				Message: "usage is kept aside for a node that is not outside the node selector", subject: subject{node: name, custom: true}})
		case len(cn.Pods) == 0 && len(cn.ExternalKeys) == 0:
			ds.add(Difference{Kind: DiffNode, Name: name, Field: "presence", Cache: "unused entry kept aside", Truth: "outside the node selector",
				Message: "an entry with nothing accounted to it was not deleted", subject: subject{node: name, custom: true}})
		}
	}
}

func where2(n *v1.Node) string {
	if n == nil {
		return "absent"
	}
	return "node"
}

// footprint is what the default event handler accounts for w.
func (v *verifier) footprint(w *v1alpha1.ExternalWorkload) (node string, usage resources.Resource, ok bool) {
	if w.Status.Phase == v1alpha1.ExternalWorkloadStopped {
		return "", resources.Resource{}, false
	}
	node = w.Spec.NodeName
	if l := v.opts.ExternalWorkloadNodeLabel; l != "" && w.Labels[l] != "" {
		node = w.Labels[l]
	}
	if node == "" {
		return "", resources.Resource{}, false
	}
	return node, resources.FromList(w.Spec.Resources), true
}

func (v *verifier) compareExternal(ds *diffs, tr *truth, cv *cache.View) {
	sub := func(node string) subject { return subject{custom: true, node: node} }
	for key, w := range tr.workloads {
		node, usage, ok := v.footprint(w)
		cur, has := cv.External[key]
		switch {
		case !ok && has:
			ds.add(Difference{Kind: DiffExternalWorkload, Name: key, Field: "presence", Cache: "on " + cur.Node, Truth: "not counted (stopped or on no node)",
				Message: "usage of an external workload that uses nothing is counted", subject: sub(cur.Node)})
		case !ok:
		case !has:
			ds.add(Difference{Kind: DiffExternalWorkload, Name: key, Field: "presence", Cache: "absent", Truth: "on " + node,
				Message: "an external workload's usage is missing from the cache", subject: sub(node)})
		case cur.Node != node:
			ds.add(Difference{Kind: DiffExternalWorkload, Name: key, Field: "node", Cache: cur.Node, Truth: node,
				Message: "an external workload's usage is on the wrong node", subject: sub(node)})
		case !sameAmounts(cur.Usage, usage):
			ds.add(Difference{Kind: DiffExternalWorkload, Name: key, Field: "usage", Cache: cur.Usage.String(), Truth: usage.String(),
				Message: "an external workload's usage differs", subject: sub(node)})
		}
	}
	for key, cur := range cv.External {
		if !strings.HasPrefix(key, externalWorkloadKeyPrefix) {
			// Another handler's usage: no source to compare with.
			continue
		}
		if _, ok := tr.workloads[key]; !ok {
			ds.add(Difference{Kind: DiffExternalWorkload, Name: key, Field: "presence", Cache: "on " + cur.Node, Truth: "absent",
				Message: "the cache counts usage of an external workload that does not exist", subject: sub(cur.Node)})
		}
	}
}

// compareAccounting checks each node's totals against what is accounted
// to it: its tasks (each copied with the node, under one hold of the lock,
// so that this needs no re-check to be exact) and the external usage.
func (v *verifier) compareAccounting(ds *diffs, cv *cache.View) {
	keysOn := map[string][]string{}
	usageOn := map[string]*resources.Resource{}
	for key, u := range cv.External {
		keysOn[u.Node] = append(keysOn[u.Node], key)
		sum := usageOn[u.Node]
		if sum == nil {
			sum = &resources.Resource{}
			usageOn[u.Node] = sum
		}
		sum.Add(u.Usage)
		if _, ok := cv.Nodes[u.Node]; !ok {
			if _, ok := cv.Outside[u.Node]; !ok {
				ds.add(Difference{Kind: DiffAccounting, Name: u.Node, Field: "externalKeys", Cache: "no node for " + key, Truth: "node with " + key,
					Message: "external usage is recorded for a node that nothing accounts it to", subject: subject{node: u.Node, custom: true}})
			}
		}
	}
	check := func(n *framework.NodeInfo) {
		var req, own resources.Resource
		for _, t := range n.Pods {
			if t.Counted {
				req.Add(t.Requests)
				if t.Own {
					own.Add(t.Requests)
				}
			}
		}
		sub := subject{node: n.Name(), podsOnNode: n.Name(), custom: true}
		if !sameAmounts(n.Requested, req) {
			ds.add(Difference{Kind: DiffAccounting, Name: n.Name(), Field: "requested", Cache: n.Requested.String(), Truth: req.String(),
				Message: "the node's requested is not the sum of the requests of its counted pods", subject: sub})
		}
		if !sameAmounts(n.OwnRequested, own) {
			ds.add(Difference{Kind: DiffAccounting, Name: n.Name(), Field: "ownRequested", Cache: n.OwnRequested.String(), Truth: own.String(),
				Message: "the node's ownRequested is not the sum of the requests of this scheduler's counted pods", subject: sub})
		}
		var ext resources.Resource
		if s := usageOn[n.Name()]; s != nil {
			ext = *s
		}
		if !sameAmounts(n.External, ext) {
			ds.add(Difference{Kind: DiffAccounting, Name: n.Name(), Field: "external", Cache: n.External.String(), Truth: ext.String(),
				Message: "the node's external usage is not the sum of the usage accounted to it", subject: sub})
		}
		keys := keysOn[n.Name()]
		sort.Strings(keys)
		if !slices.Equal(keys, n.ExternalKeys) && (len(keys) > 0 || len(n.ExternalKeys) > 0) {
			ds.add(Difference{Kind: DiffAccounting, Name: n.Name(), Field: "externalKeys", Cache: strings.Join(n.ExternalKeys, ","), Truth: strings.Join(keys, ","),
				Message: "the node's external usage keys differ from the usage accounted to it", subject: sub})
		}
	}
	for _, n := range cv.Nodes {
		check(n)
	}
	for _, n := range cv.Outside {
		check(n)
	}
}

// compareCaps checks each listed node's cap against the caps set
// (SetNodeCap, RequireNodeCaps) and whether it is exceeded.
func (v *verifier) compareCaps(ds *diffs, cv *cache.View) {
	render := func(r *resources.Resource) string {
		if r == nil {
			return "uncapped"
		}
		return r.String()
	}
	for name, n := range cv.Nodes {
		if n.Placeholder {
			continue
		}
		want := cv.WantCap(name)
		sub := subject{node: name, podsOnNode: name, custom: true}
		if (want == nil) != (n.Cap == nil) || (want != nil && !sameAmounts(*want, *n.Cap)) {
			ds.add(Difference{Kind: DiffCap, Name: name, Field: "cap", Cache: render(n.Cap), Truth: render(want),
				Message: "the node's cap is not the one set for it", subject: sub})
		}
		exceeded := n.CapExceeded()
		if exceeded != cv.CapExceeded[name] {
			ds.add(Difference{Kind: DiffCap, Name: name, Field: "exceeded", Cache: strconv.FormatBool(cv.CapExceeded[name]), Truth: strconv.FormatBool(exceeded),
				Message: "whether this scheduler's pods exceed the node's cap", subject: sub})
		}
	}
	for name := range cv.CapExceeded {
		if n, ok := cv.Nodes[name]; !ok || n.Placeholder {
			ds.add(Difference{Kind: DiffCap, Name: name, Field: "exceeded", Cache: "true", Truth: "no such node",
				Message: "a node that is not listed is recorded as exceeding its cap", subject: subject{node: name, custom: true}})
		}
	}
}

// compareQueue checks the scheduling queue against the pending pods of
// the sources: a job is queued exactly when it has pending pods, with
// exactly those.
func (v *verifier) compareQueue(ds *diffs, tr *truth, cv *cache.View) {
	want := map[framework.JobID]map[types.UID]string{}
	for uid, p := range tr.pods {
		if w, _ := v.wantOf(p); w != wantPending {
			continue
		}
		id := v.c.JobIDForPod(p)
		if want[id] == nil {
			want[id] = map[types.UID]string{}
		}
		want[id][uid] = podKey(p)
	}
	for id, pods := range want {
		sub := subject{podNamespace: id.Namespace, custom: true}
		m, ok := cv.Queue[id]
		if !ok {
			ds.add(Difference{Kind: DiffQueue, Name: id.String(), Field: "presence", Cache: "not queued", Truth: fmt.Sprintf("%d pending pods", len(pods)),
				Message: "a job with pending pods is in no queue and not in flight", subject: sub})
			continue
		}
		have := make(map[types.UID]bool, len(m.Pods))
		for _, uid := range m.Pods {
			have[uid] = true
		}
		var missing, extra []string
		for uid, key := range pods {
			if !have[uid] {
				missing = append(missing, key)
			}
		}
		for _, uid := range m.Pods {
			if _, ok := pods[uid]; !ok {
				key := string(uid)
				if p := tr.pods[uid]; p != nil {
					key = podKey(p)
				}
				extra = append(extra, key)
			}
		}
		if len(missing) > 0 || len(extra) > 0 {
			ds.add(Difference{Kind: DiffQueue, Name: id.String(), Field: "pods", Cache: fmt.Sprintf("%d pending pods (%s)", len(m.Pods), m.Location),
				Truth:   fmt.Sprintf("%d pending pods", len(pods)),
				Message: "queued pods differ: missing " + listSome(missing) + "; not pending " + listSome(extra), subject: sub})
		}
	}
	for id, m := range cv.Queue {
		sub := subject{podNamespace: id.Namespace, custom: true}
		if _, ok := want[id]; !ok {
			ds.add(Difference{Kind: DiffQueue, Name: id.String(), Field: "presence", Cache: fmt.Sprintf("queued (%s) with %d pods", m.Location, len(m.Pods)),
				Truth: "no pending pods", Message: "a job without pending pods is queued", subject: sub})
		}
		if m.Problem != "" {
			ds.add(Difference{Kind: DiffQueue, Name: id.String(), Field: "records", Cache: m.Problem, Truth: "consistent",
				Message: "the queue's own records of the job disagree", subject: sub})
		}
	}
}

// listSome renders up to 5 names, sorted, and how many more.
func listSome(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}

// counts says how much a run compared.
func (v *verifier) counts(tr *truth, cv *cache.View) VerifyCounts {
	return VerifyCounts{Nodes: len(tr.nodes), Pods: len(tr.pods), ExternalWorkloads: len(tr.workloads),
		Jobs: len(cv.Jobs), QueuedJobs: len(cv.Queue), CustomSources: tr.customSources}
}
