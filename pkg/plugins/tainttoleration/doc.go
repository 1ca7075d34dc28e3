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

// Package tainttoleration implements the TaintToleration plugin.
//
// Filter rejects a node with a NoSchedule or NoExecute taint the pod does
// not tolerate, as k8s.io/component-helpers matches them, with the
// UnschedulableAndUnresolvable reason "node(s) had untolerated taint(s)",
// kube-scheduler's wording, which names no taint (the first untolerated one
// is logged at -v=5). A NodeInfo without a node (a
// placeholder) is rejected with "node(s) not found". Tolerations with the
// Lt and Gt operators (alpha feature gate TaintTolerationComparisonOperators,
// off by default) never match.
//
// Score counts the node's PreferNoSchedule taints the pod does not
// tolerate; NormalizeScore reverses and scales the counts, so that nodes
// without such taints get 100 and the node with the most gets 0. Scoring a
// NodeInfo without a node is an Error status.
//
// Args: none; non-empty args are an error.
//
// Events: a new node (Node/Add) and a change of a node's taints
// (Node/UpdateNodeTaint).
package tainttoleration
