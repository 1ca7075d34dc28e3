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

// Package nodeunschedulable implements the NodeUnschedulable plugin: a
// Filter that rejects a cordoned node (spec.unschedulable) unless the pod
// tolerates the node.kubernetes.io/unschedulable:NoSchedule taint, the
// taint the node controller puts on cordoned nodes. The rejection is
// UnschedulableAndUnresolvable with "node(s) were unschedulable": no other
// pod can change it. A NodeInfo without a node (a placeholder) is rejected
// with "node(s) not found".
//
// Args: none; non-empty args are an error.
//
// Events: a new node (Node/Add), a node that becomes schedulable
// (Node/UpdateNodeSchedulable) and a change of taints (Node/UpdateNodeTaint,
// since cordoning goes with the unschedulable taint).
package nodeunschedulable
