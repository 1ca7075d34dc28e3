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
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
)

// Cache is what the scheduling loop needs of the scheduler cache
// (pkg/cache implements it): a snapshot of the nodes, the jobs' tasks, and
// the assumptions of placements whose bind is in flight.
type Cache interface {
	UpdateSnapshot(s *cache.Snapshot) error
	// CycleJob is what a cycle of the job works on (see
	// cache.SchedulerCache.CycleJob); Job the job's whole record, a copy;
	// TaskState the job and status of one task, without a copy.
	CycleJob(id framework.JobID) (*framework.Job, bool)
	Job(id framework.JobID) (*framework.JobInfo, bool)
	TaskState(uid types.UID) (framework.JobID, framework.TaskStatus, bool)
	AssumePods(pods []*v1.Pod, placements map[string]string, seen func(node string) *framework.NodeInfo) error
	FinishBinding(pod *v1.Pod) error
	ForgetPod(pod *v1.Pod) error
}

// Queue is what the scheduling loop needs of the scheduling queue
// (pkg/schedulingqueue implements it).
type Queue interface {
	Pop(ctx context.Context) (*framework.QueuedJob, error)
	Done(id framework.JobID)
	AddUnschedulable(job *framework.QueuedJob, attempt schedulingqueue.Attempt) error
	MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, oldObj, newObj any)
}

var (
	_ Cache = &cache.SchedulerCache{}
	_ Queue = &schedulingqueue.SchedulingQueue{}
)
