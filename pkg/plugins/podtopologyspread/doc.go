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

// Package podtopologyspread implements the PodTopologySpread plugin: a
// Filter that enforces the pod's topology spread constraints with
// whenUnsatisfiable DoNotSchedule, with kube-scheduler's (v1.37) verdicts
// and reasons, including across the pods of one gang placed in the same
// cycle.
//
// # Semantics
//
// For each DoNotSchedule constraint, the domains are the values of the
// constraint's topologyKey label on the eligible nodes: nodes that have
// the topology labels of all the pod's DoNotSchedule constraints and that
// the constraint's node inclusion policies admit. nodeAffinityPolicy
// Honor (the default) admits only nodes matching the pod's nodeSelector
// and required node affinity; nodeTaintsPolicy Honor (Ignore is the
// default) admits only nodes whose NoSchedule and NoExecute taints the pod
// tolerates. The pods counted in a domain are the counted tasks
// (framework.TaskInfo.Counted: not finished) on its eligible nodes that
// are in the pod's namespace, are not terminating, and match the
// constraint's selector; as in kube-scheduler, an empty labelSelector
// ({}) counts no pod, while it matches the incoming pod itself. The
// selector is the labelSelector plus, for each key of matchLabelKeys, the
// pod's own value of that label (when it has the label).
//
// The global minimum is the smallest count over the domains, or zero when
// there are fewer domains than minDomains (default 1). A node passes a
// constraint when
//
//	count(node's domain) + (1 if the pod matches the selector) - minimum <= maxSkew
//
// A node without a constraint's topology label fails with
// UnschedulableAndUnresolvable and "node(s) didn't match pod topology
// spread constraints (missing required label)"; a node whose skew is too
// large fails with Unschedulable and "node(s) didn't match pod topology
// spread constraints".
//
// Constraints with whenUnsatisfiable ScheduleAnyway do not filter. A pod
// without constraints of its own gets kube-scheduler's system default
// constraints, which are all ScheduleAnyway, so it is not filtered:
// PreFilterPod returns Skip.
//
// # Score
//
// The pod's own ScheduleAnyway constraints are scored as kube-scheduler
// scores them: the domains are those of the feasible nodes that have all
// the constraints' topology keys (the others score 0), their counts span
// all nodes (PreFilterPod leaves them in the state) under the same rules
// as for filtering, and a node's raw score is the sum over constraints of
// count * ln(domains + 2) + maxSkew - 1, the node's own pods counting for
// a hostname constraint; NormalizeScore turns it into
// 100 * (max + min - raw) / max, so that the emptiest domain scores
// highest. The system default constraints (hostname maxSkew 3, zone
// maxSkew 5, ScheduleAnyway) are not scored: kube-scheduler derives their
// selector from the Services, ReplicaSets, ReplicationControllers and
// StatefulSets selecting the pod, so for a batch pod they matter only when
// a Service selects it (e.g. the headless Service of an MPI job), and only
// for scoring.
//
// # Gangs
//
// PreFilterPod counts, per pod, over all nodes of the snapshot, which hold
// the pods the cycle placed before this one, so a gang of 4 with maxSkew 1
// over 2 zones is placed 2+2 in one cycle.
//
// # Preemption
//
// The plugin implements framework.PodPreFilterExtensions: AddPod and
// RemovePod change the count of the pod's domain for each constraint that
// counts it (under the rules above, the node inclusion policies
// included) and keep the global minimum: a count below it becomes the
// minimum, and a domain that leaves the minimum has the minimum recounted
// over the domains. The domains depend on the nodes only, so none
// appears or goes, and minDomains keeps its meaning. Preemption's victim
// search so updates the state per victim instead of counting the whole
// cluster again. The state's Clone copies the counts.
//
// # Events
//
// An assigned pod deleted (or finished) in the pending pod's namespace
// that matches a constraint's selector; an assigned pod added there (bound
// by any scheduler, this one included, or created bound) that matches
// one, which may raise the global minimum or fill a domain minDomains
// needs; an assigned pod there relabelled so that it starts or stops
// matching one; a node added, or whose labels or taints changed, that has
// all the constraints' topology keys (or had them); a node deleted that
// had them all, which may take away the domain holding the global
// minimum.
//
// Args: none of its own. kube-scheduler's are accepted as it writes them
// by default (defaultingType System, no defaultConstraints) and with
// defaultingType List and no defaultConstraints, which turns default
// spreading off: the same here, since the system default constraints are
// never scored. Explicit defaultConstraints are refused.
package podtopologyspread
