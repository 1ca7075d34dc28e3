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
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// compareJobs checks that every task is in its job's record and every
// record holds only current tasks, and that the tasks the cache keeps
// without a record (cache.KeepsJobRecord) are in none and are indexed
// under their job.
func (v *verifier) compareJobs(ds *diffs, tr *truth, cv *cache.View) {
	// Each task a job holds is checked; if fewer check out than there are
	// tasks with records, some task is missing from its job, and only
	// then are the tasks searched for it.
	valid, recorded := 0, 0
	for id, job := range cv.Jobs {
		tasks := job.Tasks
		sub := subject{podNamespace: id.Namespace, custom: true}
		if len(tasks) == 0 {
			ds.add(Difference{Kind: DiffJob, Name: id.String(), Field: "tasks", Cache: "empty job", Truth: "no job",
				Message: "a job without tasks was not deleted", subject: sub})
			continue
		}
		for _, t := range tasks {
			if cur := cv.Tasks[t.GetUID()]; cur != t || t.Job != id {
				ds.add(Difference{Kind: DiffJob, Name: id.String(), Field: "tasks", Cache: "holds " + t.Key() + " " + taskState(t),
					Truth:   "the pod is " + taskState(cur) + " in job " + jobOf(cur),
					Message: "a job holds a task that is not the cache's current task of the pod", subject: sub})
				continue
			}
			if !cache.KeepsJobRecord(t) {
				ds.add(Difference{Kind: DiffJob, Name: id.String(), Field: "record", Cache: "holds " + t.Key(), Truth: "no record",
					Message: "a job record is kept for another scheduler's bound pod outside any gang", subject: sub})
				continue
			}
			valid++
		}
	}
	for _, t := range cv.Tasks {
		if cache.KeepsJobRecord(t) {
			recorded++
			continue
		}
		if cv.Jobless[t.Job] != t {
			ds.add(Difference{Kind: DiffJob, Name: t.Job.String(), Field: "jobless", Cache: "not indexed", Truth: "indexed " + t.Key(),
				Message: "a task kept without a job record is missing from their index", subject: subject{podNamespace: t.Job.Namespace, custom: true}})
		}
	}
	for id, t := range cv.Jobless {
		if cur := cv.Tasks[t.GetUID()]; cur != t || t.Job != id || cache.KeepsJobRecord(t) {
			ds.add(Difference{Kind: DiffJob, Name: id.String(), Field: "jobless", Cache: "indexes " + t.Key() + " " + taskState(t),
				Truth:   "the pod is " + taskState(cur) + " in job " + jobOf(cur),
				Message: "the index of tasks without a job record holds one that is not the cache's current task of a pod without one", subject: subject{podNamespace: id.Namespace, custom: true}})
		}
	}
	if valid == recorded {
		return
	}
	inJob := make(map[*framework.TaskInfo]bool, len(cv.Tasks))
	for _, job := range cv.Jobs {
		for _, t := range job.Tasks {
			inJob[t] = true
		}
	}
	for _, t := range cv.Tasks {
		if !inJob[t] && cache.KeepsJobRecord(t) {
			ds.add(Difference{Kind: DiffJob, Name: t.Job.String(), Field: "tasks", Cache: "without " + t.Key(), Truth: "with " + t.Key(),
				Message: "a task is missing from its job", subject: subject{podNamespace: t.Job.Namespace, custom: true}})
		}
	}
}

func jobOf(t *framework.TaskInfo) string {
	if t == nil {
		return "none"
	}
	return t.Job.String()
}
