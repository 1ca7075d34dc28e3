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

// Package podgroups writes the status of the group objects of the gang
// dialects the way their own schedulers do, so that their tooling keeps
// working: the PodGroupInitiallyScheduled condition of a native
// scheduling.k8s.io PodGroup, and status.phase of scheduler-plugins and
// Volcano PodGroups.
//
// Which kinds are written, and how, is the table of gang dialects'
// (pkg/dialects, Dialect.Status): a StatusRule of this package per kind,
// given to New.
//
// A Writer is fed by the event handler: the group objects it sees, and
// the pods of their gangs as they change. A worker computes each group's
// status from the scheduler cache's job and the pods' own conditions, and
// patches it only when it differs from what the object says and from what
// the Writer last wrote; keys are coalesced and rate limited by a
// workqueue.
package podgroups
