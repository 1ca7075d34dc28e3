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

// Package prioritysort implements the PrioritySort plugin, the default
// QueueSort plugin: it pops the job with the highest priority (the highest
// spec.priority among its pending pods) first, and among jobs of equal
// priority the one that entered the queue first (FIFO). Jobs that tie on
// both are ordered by namespace, then name, then single pods before gangs,
// so that the order never depends on the heap's history.
//
// Args: none; non-empty args are an error.
//
// Events: none. QueueSort never rejects a job, so it registers for no
// cluster event.
package prioritysort
