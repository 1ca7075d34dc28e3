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

package tenancy

import (
	"maps"

	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Usage is what the jobs of one tenant queue use and wait for. Tenants
// keeps one for every tenant queue name jobs name, whether or not a
// Queue of that name exists, in step with every task change (ChangeJob),
// so that a cycle reads it in O(tenant queues), not O(pods).
type Usage struct {
	// Allocated sums what the tasks that use the tenant queue's share
	// (framework.TaskInfo.UsesShare) count against it (their requests and
	// claim devices, framework.TaskInfo.QueueRequests); Pending that of
	// its pending tasks; Releasing the part of Allocated of terminating
	// tasks.
	Allocated, Pending, Releasing resources.Resource
	// PendingJobs and RunningJobs count the jobs with at least one
	// pending task, and at least one task that uses the share.
	PendingJobs, RunningJobs int
}

// Empty reports whether no job of the tenant queue uses or waits for
// anything.
func (u *Usage) Empty() bool {
	return u.PendingJobs == 0 && u.RunningJobs == 0 && u.Allocated.IsZero() && u.Pending.IsZero()
}

// AddTask adds (sign 1) or removes (sign -1) what t uses or waits for.
func (u *Usage) AddTask(t *framework.TaskInfo, sign int) {
	if t == nil {
		return
	}
	var to *resources.Resource
	switch {
	case t.UsesShare():
		to = &u.Allocated
	case t.Status == framework.TaskPending:
		to = &u.Pending
	default:
		return
	}
	req := t.QueueRequests()
	add := func(to *resources.Resource) {
		if sign > 0 {
			to.Add(req)
		} else {
			to.Sub(req)
		}
	}
	add(to)
	if to == &u.Allocated && t.GetDeletionTimestamp() != nil {
		add(&u.Releasing)
	}
}

// AddJob counts (sign 1) or uncounts (sign -1) a job that has pending
// tasks, and one that has tasks using the share.
func (u *Usage) AddJob(pending, running bool, sign int) {
	if pending {
		u.PendingJobs += sign
	}
	if running {
		u.RunningJobs += sign
	}
}

// ChangeJob runs change, a change of job's task uid (or of its group
// policy, uid ""), and keeps the tenant queues' usage in step: the task's
// old and new contribution, the job's pending and running counts and,
// when the job's tenant queue changed (or the job is new, or gone), the
// whole job moved from one tenant queue to the other, which the
// scheduling queue is told (SchedulingQueue.SetJobTenantQueue). It sets
// job.QueueAccount. The caller holds the lock that guards job (the
// cache's, for writing); change runs before Tenants' own lock is taken
// and must not call Tenants.
func (t *Tenants) ChangeJob(job *framework.JobInfo, uid types.UID, change func()) {
	before := job.QueueAccount
	hadPending, hadRunning := job.PendingTasks() > 0, job.RunningShareTasks() > 0
	old := job.Tasks[uid]
	change()
	now := ""
	if len(job.Tasks) > 0 {
		now, _ = job.Queue()
	}
	isPending, isRunning := job.PendingTasks() > 0, job.RunningShareTasks() > 0
	if now == before && now == "" {
		return
	}
	cur := job.Tasks[uid]
	t.mu.Lock()
	defer t.mu.Unlock()
	if now == before {
		u := t.usageLocked(now)
		if !sameDemand(old, cur) {
			t.demandGen++
			if u.Allocated.IsZero() && u.Pending.IsZero() {
				// The tenant queue starts asking: its share, zero until
				// now, must be there for the cycle of this job.
				t.askGen++
			}
		}
		u.AddTask(old, -1)
		u.AddTask(cur, 1)
		u.AddJob(hadPending, hadRunning, -1)
		u.AddJob(isPending, isRunning, 1)
		t.dropUsageLocked(now, u)
		return
	}
	if before != "" {
		u := t.usageLocked(before)
		for id, task := range job.Tasks {
			if id != uid {
				u.AddTask(task, -1)
			}
		}
		u.AddTask(old, -1)
		u.AddJob(hadPending, hadRunning, -1)
		t.dropUsageLocked(before, u)
	}
	if now != "" {
		u := t.usageLocked(now)
		for _, task := range job.Tasks {
			u.AddTask(task, 1)
		}
		u.AddJob(isPending, isRunning, 1)
	}
	job.QueueAccount = now
	t.demandGen++
	t.askGen++
	t.queue.SetJobTenantQueue(job.ID, now)
}

// sameDemand reports whether a and b ask the same of their tenant queue:
// nothing, or the same requests and claim devices, pending or running
// alike (placing a pod changes no demand).
func sameDemand(a, b *framework.TaskInfo) bool {
	asks := func(t *framework.TaskInfo) bool {
		return t != nil && (t.UsesShare() || t.Status == framework.TaskPending)
	}
	if asks(a) != asks(b) {
		return false
	}
	if !asks(a) {
		return true
	}
	x, y := &a.Requests, &b.Requests
	return x.MilliCPU == y.MilliCPU && x.Memory == y.Memory && x.EphemeralStorage == y.EphemeralStorage &&
		maps.Equal(x.Scalar, y.Scalar) && maps.Equal(a.ClaimDevices, b.ClaimDevices)
}

// usageLocked returns the usage of the tenant queue name, created empty.
// The caller holds mu.
func (t *Tenants) usageLocked(name string) *Usage {
	u, ok := t.usage[name]
	if !ok {
		u = &Usage{}
		t.usage[name] = u
	}
	return u
}

// dropUsageLocked forgets the usage of a tenant queue no job names any
// more. The caller holds mu.
func (t *Tenants) dropUsageLocked(name string, u *Usage) {
	if u.Empty() {
		delete(t.usage, name)
	}
}

// Usage returns a copy of the usage of every tenant queue jobs name.
func (t *Tenants) Usage() map[string]Usage {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]Usage, len(t.usage))
	for name, u := range t.usage {
		out[name] = Usage{Allocated: u.Allocated.Clone(), Pending: u.Pending.Clone(), Releasing: u.Releasing.Clone(),
			PendingJobs: u.PendingJobs, RunningJobs: u.RunningJobs}
	}
	return out
}
