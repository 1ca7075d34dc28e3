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

// Package nodeports implements the NodePorts plugin: a Filter that keeps a
// pod off a node where a pod already bound or assumed there holds a host
// port the pod asks for, with kube-scheduler's semantics.
//
// The host ports of a pod are the ports with a positive hostPort of its
// containers and of its restartable (sidecar) init containers, those with
// restartPolicy Always, which run as long as the pod does; ordinary init
// containers have finished before the pod runs and are ignored. An empty
// protocol means TCP and an empty hostIP means 0.0.0.0. Two host ports
// conflict when their port numbers and protocols are equal and their host
// IPs are equal or either is 0.0.0.0. As in kube-scheduler, only 0.0.0.0
// is the wildcard (not "::").
//
// The node's ports in use are those of the pods accounted to it
// (framework.NodeInfo.Pods) that have not finished. Pods placed earlier in
// the same cycle are on the snapshot's NodeInfo, so two tasks of one gang
// that ask for the same host port never share a node.
//
// PreFilter computes the host ports of the job's pending pods once per
// cycle and keeps them in the CycleState; it returns Skip when no pending
// pod asks for a host port, so Filter does not run at all that cycle.
// Filter rejects a conflicting node with Unschedulable and kube-scheduler's
// reason "node(s) didn't have free ports for the requested pod ports"
// (Unschedulable, not UnschedulableAndUnresolvable: removing the holder
// frees the port). A NodeInfo without a node (a placeholder) is
// UnschedulableAndUnresolvable with "node(s) not found".
//
// Args: none; non-empty args are an error.
//
// Events: an assigned pod deleted or finished (AssignedPodDelete), with a
// queueing hint that retries the job only when the pod that went away held
// a host port conflicting with one a pending pod of the job asks for; and
// a new node (NodeAdd), always retried.
package nodeports
