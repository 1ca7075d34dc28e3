package cache

import (
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// groupKey names a group object: its kind and the job it defines.
type groupKey struct {
	kind framework.GroupKind
	job  framework.JobID
}

// groupKinds are the kinds a job's policies are looked up for.
var groupKinds = []framework.GroupKind{framework.GroupKindNative, framework.GroupKindCoscheduling,
	framework.GroupKindVolcano, framework.GroupKindJob}

// SetGroupPolicy implements eventhandlers.GroupPolicyCache: it records
// what the group object of kind named name in namespace says about its
// gang (nil: the object is gone), re-validates the job if it exists, and
// raises framework.EventGangGroupChange so that the job is retried.
func (c *SchedulerCache) SetGroupPolicy(kind framework.GroupKind, namespace, name string, p *framework.GroupPolicy) {
	id := framework.JobID{Namespace: namespace, Name: name, Gang: true}
	key := groupKey{kind: kind, job: id}
	c.mu.Lock()
	old, had := c.groupPolicies[key]
	if (!had && p == nil) || (had && p != nil && samePolicy(old, p)) {
		// Nothing the job sees changed (a status update, say, or a Job
		// that does not opt in): no event.
		c.mu.Unlock()
		return
	}
	if p == nil {
		delete(c.groupPolicies, key)
	} else {
		c.groupPolicies[key] = p
	}
	if job, ok := c.jobs[id]; ok {
		job.SetGroupPolicy(kind, p)
	}
	c.mu.Unlock()
	c.queue.MoveAllToActiveOrBackoffQueue(framework.EventGangGroupChange, nil, &framework.GangGroupChange{Job: id})
}

// applyGroupPoliciesLocked gives a new job the policies recorded for it.
func (c *SchedulerCache) applyGroupPoliciesLocked(job *framework.JobInfo) {
	if !job.ID.Gang || len(c.groupPolicies) == 0 {
		return
	}
	for _, kind := range groupKinds {
		if p, ok := c.groupPolicies[groupKey{kind: kind, job: job.ID}]; ok {
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
	return a.MinMember == b.MinMember && a.Source == b.Source &&
		a.ScheduleTimeoutSeconds == b.ScheduleTimeoutSeconds && errText(a) == errText(b)
}
