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

package cache

import (
	"errors"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// groupKey names a group object: its kind, namespace and name.
type groupKey struct {
	kind      framework.GroupKind
	namespace string
	name      string
}

// isExplicitGroupKindLocked reports whether kind is a kind of group object
// pods name explicitly (by the cache's matcher): the job of such an object
// has the object's name. The caller holds mu.
func (c *SchedulerCache) isExplicitGroupKindLocked(kind framework.GroupKind) bool {
	return slices.Contains(c.matcher.ExplicitKinds(), kind)
}

// SetGroupMatcher implements eventhandlers.GroupMatcherCache: pods are put
// in gangs by m's rules (the default handler gives its table of gang
// dialects) instead of those of dialects.Builtin. It fails once the cache
// runs or holds pods.
func (c *SchedulerCache) SetGroupMatcher(m framework.GroupMatcher) error {
	if m == nil {
		return errors.New("setting the rules of the gang dialects: no rules given")
	}
	// The host's lock and mu never nest (see doc.go), as in SetOwnerGangs.
	if c.host.Running() {
		return errors.New("setting the rules of the gang dialects: the cache is already running")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tasks) > 0 {
		return errors.New("setting the rules of the gang dialects: the cache already holds pods")
	}
	c.matcher = m
	klog.V(2).InfoS("Reading gang dialects", "explicitKinds", m.ExplicitKinds())
	return nil
}

// SetOwnerGangs implements eventhandlers.OwnerGangCache: pods that name no
// group explicitly are put in the gang of their owner when its kind is in
// kinds. It fails once the cache runs.
func (c *SchedulerCache) SetOwnerGangs(kinds framework.OwnerKinds) error {
	// The host's lock and mu never nest (see doc.go): Run and
	// SetOwnerGangs are both called while the scheduler is set up, one
	// after the other.
	if c.host.Running() {
		return errors.New("setting the owner kinds of inferred gangs: the cache is already running")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tasks) > 0 {
		return errors.New("setting the owner kinds of inferred gangs: the cache already holds pods")
	}
	c.ownerKinds = kinds
	klog.V(2).InfoS("Inferring gangs from pod owners", "kinds", kinds.String())
	return nil
}

// resolverLocked returns the rule that puts pods in jobs: the explicit
// signals of the matcher's dialects (a native PodGroup standing for its
// parent composite, see parentLocked), then the owner kinds of
// SetOwnerGangs, whose policies may make an owner's pods independent. The
// caller holds mu (for reading at least) while it uses the resolver.
func (c *SchedulerCache) resolverLocked() framework.GroupResolver {
	r := framework.GroupResolver{Matcher: c.matcher}
	if len(c.children) > 0 {
		r.Parent = c.parentLocked
	}
	if owners := c.inferredKindsLocked(); owners != 0 {
		r.Owners, r.Independent = owners, c.independentLocked
	}
	return r
}

// inferredKindsLocked returns the owner kinds gangs are inferred from
// now: those of SetOwnerGangs whose resource the scheduler may list. The
// caller holds mu.
func (c *SchedulerCache) inferredKindsLocked() framework.OwnerKinds {
	return c.ownerKinds &^ c.unlistedOwners
}

// setOwnerKindUnavailable records whether the resource of the owner kind
// is served but may not be listed (unavailable), found by discovery. No
// gang is inferred from such a kind: its owners could never be read, and
// its pods would wait for them forever, so they are scheduled as they
// were before owners were inferred, on their own (the discovery logs the
// missing permission). A change moves the kind's pods between their
// owners' gangs and jobs of their own. Kinds that are not owner kinds, or
// not inferred, are ignored.
func (c *SchedulerCache) setOwnerKindUnavailable(kind framework.GroupKind, unavailable bool) {
	if !framework.IsOwnerKind(kind) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ownerKinds.Has(kind) || c.unlistedOwners.Has(kind) == unavailable {
		return
	}
	if unavailable {
		c.unlistedOwners = c.unlistedOwners.With(kind)
	} else {
		c.unlistedOwners = c.unlistedOwners.Without(kind)
	}
	klog.V(2).InfoS("Gangs inferred from an owner kind", "kind", kind, "inferred", !unavailable)
	var keys []groupKey
	for key := range c.ownerTasks {
		if key.kind == kind {
			keys = append(keys, key)
		}
	}
	for _, key := range keys {
		c.rekeyOwnerLocked(key)
	}
}

// independentLocked reports whether the policy of an owner object makes
// its pods independent. The caller holds mu.
func (c *SchedulerCache) independentLocked(kind framework.GroupKind, namespace, object string) bool {
	p := c.groupPolicies[groupKey{kind: kind, namespace: namespace, name: object}]
	return p != nil && p.Err == nil && p.Independent
}

// membershipLocked resolves pod's group. The caller holds mu.
func (c *SchedulerCache) membershipLocked(pod *v1.Pod) framework.Membership {
	return c.resolverLocked().Resolve(pod)
}

// JobIDForPod returns the job the cache files pod under (its gang, its
// inferred owner gang, or a job of its own), for the
// consistency checker. It takes mu for reading only when the pod's gang
// is inferred from an owner, whose policy may make its pods independent,
// or names a native PodGroup while some name a parent composite.
func (c *SchedulerCache) JobIDForPod(pod *v1.Pod) framework.JobID {
	c.mu.RLock()
	kinds, m, parents := c.inferredKindsLocked(), c.matcher, len(c.children) > 0
	c.mu.RUnlock()
	explicit := framework.GroupResolver{Matcher: m}
	if refs := m.Explicit(pod); len(refs) > 0 {
		if !parents || refs[0].Kind != framework.GroupKindNative {
			return explicit.JobID(pod)
		}
		// The PodGroup may stand for its parent composite.
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.resolverLocked().JobID(pod)
	}
	if kinds == 0 {
		return explicit.JobID(pod)
	}
	if _, ok := m.Inferred(pod, kinds); !ok {
		return explicit.JobID(pod)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.resolverLocked().JobID(pod)
}

// ownerKeyLocked returns the owner object a gang of t's pod is, or would
// be, inferred from: set for a pod without explicit signals whose owner's
// kind is inferred, whether or not the owner's policy makes its pods
// independent. It reads t's job (built by the cache's rule) so as to look
// at the pod's signals again only for a pod on its own. The caller holds
// mu.
func (c *SchedulerCache) ownerKeyLocked(t *framework.TaskInfo) (groupKey, bool) {
	switch {
	case c.ownerKinds == 0, t.Job.Owner == framework.GroupKindComposite:
		// A composite's job is named explicitly, through its children.
		return groupKey{}, false
	case t.Job.Owner != "":
		return groupKey{kind: t.Job.Owner, namespace: t.Job.Namespace, name: t.GroupObject()}, true
	case t.Job.Gang:
		// Named explicitly: no owner is looked at.
		return groupKey{}, false
	}
	ref, ok := c.inferredLocked(t)
	if !ok {
		return groupKey{}, false
	}
	return groupKey{kind: ref.Kind, namespace: t.GetNamespace(), name: ref.Object}, true
}

// inferredLocked asks the matcher which gang the owner of t's pod defines.
// Of a bound task's record it makes no pod (most of a cluster's pods, and
// each made one was a kilobyte or two of garbage at every change): the
// matcher reads only metadata (framework.GroupMatcher.Inferred), which
// metaPod lends it. The caller holds mu for writing.
func (c *SchedulerCache) inferredLocked(t *framework.TaskInfo) (framework.GroupRef, bool) {
	rec := t.Record()
	if t.Pod != nil || rec == nil {
		return c.matcher.Inferred(t.PodObject(), c.ownerKinds)
	}
	meta := &c.metaPod.ObjectMeta
	meta.Name, meta.Namespace, meta.UID = rec.GetName(), rec.GetNamespace(), rec.GetUID()
	meta.Labels, meta.Annotations, meta.OwnerReferences = rec.GetLabels(), rec.GetAnnotations(), rec.GetOwnerReferences()
	ref, ok := c.matcher.Inferred(&c.metaPod, c.ownerKinds)
	// Nothing of the record stays reachable from the cache.
	*meta = metav1.ObjectMeta{}
	return ref, ok
}

// indexOwnerLocked keeps ownerTasks (and taskOwner) in step when the
// cache's task of the pod with uid becomes t (nil: the pod is gone). The
// caller holds mu.
func (c *SchedulerCache) indexOwnerLocked(uid types.UID, t *framework.TaskInfo) {
	if c.ownerKinds == 0 {
		return
	}
	oldKey, hadOld := c.taskOwner[uid]
	var newKey groupKey
	var hasNew bool
	if t != nil {
		newKey, hasNew = c.ownerKeyLocked(t)
	}
	if hadOld == hasNew && oldKey == newKey {
		return
	}
	if hadOld {
		delete(c.taskOwner, uid)
		if set := c.ownerTasks[oldKey]; set != nil {
			delete(set, uid)
			if len(set) == 0 {
				delete(c.ownerTasks, oldKey)
			}
		}
	}
	if hasNew {
		c.taskOwner[uid] = newKey
		set := c.ownerTasks[newKey]
		if set == nil {
			set = map[types.UID]struct{}{}
			c.ownerTasks[newKey] = set
		}
		set[uid] = struct{}{}
	}
}

// indexOwnerJobLocked adds (or removes) the job of t, a gang inferred
// from an owner, to ownerJobs, when the job is created (or deleted). The
// caller holds mu.
func (c *SchedulerCache) indexOwnerJobLocked(t *framework.TaskInfo, add bool) {
	if t.Job.Owner == "" || t.Job.Owner == framework.GroupKindComposite {
		return
	}
	key := groupKey{kind: t.Job.Owner, namespace: t.Job.Namespace, name: t.GroupObject()}
	set := c.ownerJobs[key]
	switch {
	case add && set == nil:
		c.ownerJobs[key] = map[framework.JobID]struct{}{t.Job: {}}
	case add:
		set[t.Job] = struct{}{}
	case set != nil:
		delete(set, t.Job)
		if len(set) == 0 {
			delete(c.ownerJobs, key)
		}
	}
}

// SetRuntimeBound implements eventhandlers.RuntimeBoundCache. The bound
// reaches the estimates of the Job's pods at once, whether the cache has
// them yet or not: their tasks read it when asked (TaskInfo.ExpectedEnd).
// When the estimates change, the Job's pending pods are retried as if
// they had changed (a pod that may now backfill would otherwise wait for
// another event): those of the gang inferred from the Job or of its
// gang named explicitly (the Job dialect), which the cache indexes.
func (c *SchedulerCache) SetRuntimeBound(namespace, name string, b *framework.RuntimeBound) {
	if !c.runtimeBounds.Set(namespace, name, b) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	retry := func(t *framework.TaskInfo) {
		if t != nil && t.Status == framework.TaskPending {
			c.queue.PodChanged(t.Job, t.PodObject(), true)
		}
	}
	for uid := range c.ownerTasks[groupKey{kind: framework.GroupKindJob, namespace: namespace, name: name}] {
		retry(c.tasks[uid])
	}
	if job, ok := c.jobs[framework.JobID{Namespace: namespace, Name: name, Gang: true}]; ok && job.GroupKind() == framework.GroupKindJob {
		for _, t := range job.Tasks {
			retry(t)
		}
	}
}

// SetGroupPolicy implements eventhandlers.GroupPolicyCache: it records
// what the group object of kind named name in namespace says about its
// gangs (nil: the object is gone), re-validates them, and raises
// framework.EventGangGroupChange for each, so that they are retried.
//
// The gangs of an object are the job of its name, for the kinds pods name
// explicitly, and the jobs inferred from it as the owner of their pods
// (see SetOwnerGangs). A change of
// GroupPolicy.Independent moves the owner's pods between its gang and
// jobs of their own. The gangs of a composite
// (framework.GroupKindComposite) are those of its children's pods, whose
// quorums it takes (see composites.go).
func (c *SchedulerCache) SetGroupPolicy(kind framework.GroupKind, namespace, name string, p *framework.GroupPolicy) {
	key := groupKey{kind: kind, namespace: namespace, name: name}
	c.mu.Lock()
	old, had := c.groupPolicies[key]
	if (!had && p == nil) || (had && p != nil && samePolicy(old, p)) {
		// Nothing the jobs see changed (a status update, say, or a Job
		// that does not opt in): no event.
		c.mu.Unlock()
		return
	}
	wasIndependent := c.independentLocked(kind, namespace, name)
	if p == nil {
		delete(c.groupPolicies, key)
	} else {
		c.groupPolicies[key] = p
	}
	var changed []framework.JobID
	switch kind {
	case framework.GroupKindNative:
		changed = c.nativeChangedLocked(namespace, name, old, p)
	case framework.GroupKindComposite:
		changed = c.compositeChangedLocked(namespace, name, old, p)
	}
	if c.isExplicitGroupKindLocked(kind) {
		id := framework.JobID{Namespace: namespace, Name: name, Gang: true}
		if job, ok := c.jobs[id]; ok {
			c.changeJobLocked(job, "", func() { job.SetGroupPolicy(kind, p) })
		}
		changed = append(changed, id)
	}
	if framework.IsOwnerKind(kind) {
		if c.independentLocked(kind, namespace, name) != wasIndependent {
			c.rekeyOwnerLocked(key)
		}
		for id := range c.ownerJobs[key] {
			if job, ok := c.jobs[id]; ok {
				c.changeJobLocked(job, "", func() { job.SetGroupPolicy(kind, p) })
				changed = append(changed, id)
			}
		}
	}
	c.mu.Unlock()
	for _, id := range changed {
		c.queue.MoveAllToActiveOrBackoffQueue(framework.EventGangGroupChange, nil, &framework.GangGroupChange{Job: id})
	}
}

// rekeyOwnerLocked puts every task of the owner key's pods in the job the
// cache's rule now gives it, after the owner's policy started or stopped
// making its pods independent, or the owner's kind started or stopped
// being inferred. The caller holds mu.
func (c *SchedulerCache) rekeyOwnerLocked(key groupKey) {
	uids := make([]types.UID, 0, len(c.ownerTasks[key]))
	for uid := range c.ownerTasks[key] {
		uids = append(uids, uid)
	}
	if moved := c.rekeyTasksLocked(uids); moved > 0 {
		klog.V(2).InfoS("Owner's pods changed jobs: they are now independent of it, or no longer",
			"kind", key.kind, "owner", klog.KRef(key.namespace, key.name), "pods", moved)
	}
}

// rekeyTasksLocked puts the tasks of uids (unknown ones are skipped) in
// the jobs the cache's rule now gives them, and returns how many moved.
// The caller holds mu.
func (c *SchedulerCache) rekeyTasksLocked(uids []types.UID) int {
	moved := 0
	for _, uid := range uids {
		t := c.tasks[uid]
		if t == nil || c.membershipLocked(t.PodObject()).JobID(t.GetNamespace(), t.GetName()) == t.Job {
			continue
		}
		moved++
		switch t.Status {
		case framework.TaskAssumed:
			if a := c.assumed[uid]; a.pending != nil {
				c.updateAssumedLocked(t, a.pending)
			} else {
				c.moveAssumedLocked(t)
			}
		default:
			c.setTaskLocked(c.ownTask(t.PodObject()))
		}
	}
	return moved
}

// moveAssumedLocked moves the assumed task t, whose pod the informer no
// longer reports pending, to the job the cache's rule gives it, keeping
// the assumption. The caller holds mu.
func (c *SchedulerCache) moveAssumedLocked(t *framework.TaskInfo) {
	uid := t.GetUID()
	nt := framework.NewAssumedTaskInfoInGroup(t.PodObject(), t.NodeName, t.Requests, c.membershipLocked(t.PodObject()))
	nt.RuntimeBounds = c.runtimeBounds
	nt.ClaimDevices = t.ClaimDevices
	c.removeFromJobLocked(t)
	c.tasks[uid] = nt
	c.indexOwnerLocked(uid, nt)
	c.setJobTaskLocked(c.jobForTaskLocked(nt), nt)
	info, item := c.accountedNodeLocked(nt.NodeName)
	if info == nil || !info.RemoveTask(uid) {
		klog.ErrorS(nil, "Assumed pod missing from the node the cache accounted it to", "pod", klog.KObj(nt), "node", nt.NodeName)
		info, item = c.accountingNodeLocked(nt.NodeName, usageOwner{pod: nt})
	}
	info.AddTask(nt)
	c.releaseNodeLocked(info, item)
}

// applyGroupPoliciesLocked gives a new job, whose first task is t, the
// policies recorded for it: those of the objects of its name for a gang
// named explicitly, that of its owner for an inferred one, the one
// assembled from a composite and its children for a composite's.
func (c *SchedulerCache) applyGroupPoliciesLocked(job *framework.JobInfo, t *framework.TaskInfo) {
	if !job.ID.Gang || len(c.groupPolicies) == 0 {
		return
	}
	switch kind := job.ID.Owner; kind {
	case framework.GroupKindComposite:
		if p := c.compositePolicyLocked(job.ID.Namespace, t.GroupObject()); p != nil {
			job.SetGroupPolicy(kind, p)
		}
		return
	case "":
	default:
		if p, ok := c.groupPolicies[groupKey{kind: kind, namespace: job.ID.Namespace, name: t.GroupObject()}]; ok {
			job.SetGroupPolicy(kind, p)
		}
		return
	}
	for _, kind := range c.matcher.ExplicitKinds() {
		if p, ok := c.groupPolicies[groupKey{kind: kind, namespace: job.ID.Namespace, name: job.ID.Name}]; ok {
			job.SetGroupPolicy(kind, p)
		}
	}
}

// samePolicy reports whether a and b say the same about their gang.
func samePolicy(a, b *framework.GroupPolicy) bool {
	errText := func(p *framework.GroupPolicy) string {
		if p.Err == nil {
			return ""
		}
		return p.Err.Error()
	}
	return a.MinMember == b.MinMember && a.Source == b.Source && a.Independent == b.Independent &&
		a.ScheduleTimeoutSeconds == b.ScheduleTimeoutSeconds && a.Queue == b.Queue && errText(a) == errText(b) &&
		a.Parent == b.Parent && a.Disruption == b.Disruption &&
		sameTopology(a.Topology, b.Topology) && sameSubGroups(a.SubGroups, b.SubGroups)
}

// sameSubGroups reports whether two policies split their gangs alike.
func sameSubGroups(a, b []framework.SubGroupRule) bool {
	return slices.EqualFunc(a, b, func(x, y framework.SubGroupRule) bool {
		return x.Name == y.Name && x.KeyAnnotation == y.KeyAnnotation && slices.Equal(x.KeyLabels, y.KeyLabels) &&
			x.KeyPodGroup == y.KeyPodGroup && maps.Equal(x.Quorums, y.Quorums) &&
			maps.EqualFunc(x.Topologies, y.Topologies, sameTopology) &&
			x.MinMember == y.MinMember && x.MinSubGroups == y.MinSubGroups && x.Source == y.Source &&
			sameTopology(x.Topology, y.Topology) && selectorString(x.Selector) == selectorString(y.Selector)
	})
}

// selectorString renders a sub-group rule's selector, "" for none.
func selectorString(s labels.Selector) string {
	if s == nil {
		return ""
	}
	return s.String()
}

// sameTopology reports whether a and b are the same constraint (both nil
// included).
func sameTopology(a, b *framework.TopologyConstraint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
