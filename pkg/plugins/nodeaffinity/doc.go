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

// Package nodeaffinity implements the NodeAffinity plugin.
//
// PreFilter parses, once per cycle, the node selector and node affinity of
// every pending pod of the job and keeps them in the CycleState; without
// it, Filter and Score parse them per call.
//
// Filter rejects a node that does not match the pod's spec.nodeSelector
// and its required node affinity
// (requiredDuringSchedulingIgnoredDuringExecution), as
// k8s.io/component-helpers evaluates them, with the
// UnschedulableAndUnresolvable reason "node(s) didn't match Pod's node
// affinity/selector". A NodeInfo without a node (a placeholder) is rejected
// with "node(s) not found".
//
// Score sums the weights of the pod's preferred node affinity terms
// (preferredDuringSchedulingIgnoredDuringExecution) that the node matches;
// NormalizeScore scales the sums so that the best node gets 100 and the
// others their proportion of it (all 0 when no node matches any term).
// Preferred terms that cannot be parsed, and a NodeInfo without a node, are
// an Error status.
//
// Args: none; non-empty args are an error.
//
// Events: a new node (Node/Add) and a change of a node's labels
// (Node/UpdateNodeLabel).
package nodeaffinity
