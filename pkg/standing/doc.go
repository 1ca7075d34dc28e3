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

// Package standing says where a pending job stands: its place in its
// tenant queue and when it is expected to start.
//
// A job that holds a reservation (the Reservation plugin) is expected to
// start when its reservation says: the nodes are chosen, and the start is
// when the last running pod it waits for is expected to end. Any other
// pending job gets an estimate from a Timeline, the room the running pods
// free as they end by their expected runtimes (TaskInfo.ExpectedEnd):
// the first moment the cluster, and with queues the job's fair share,
// holds what the job and the jobs ahead of it in its queue ask for. That
// estimate ignores on which nodes the room frees, so it is a lower bound
// of what capacity allows; docs/queues.md ("Where a pending job stands")
// gives its measured error.
//
// The scheduler (pkg/scheduler) computes both when a job's attempt
// fails, writes them into the pods' PodScheduled condition (and so into
// the job's PodGroup condition), serves every pending job's at
// /debug/standing, and measures how far the estimates were off when jobs
// start (batch_scheduler_start_estimate_error_seconds).
package standing
