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

// Package interpodaffinity implements the InterPodAffinity plugin: a
// Filter that enforces required pod affinity and pod anti-affinity with
// kube-scheduler's (v1.37) verdicts and reasons, including across the
// pods of one gang placed in the same cycle.
//
// # What is checked
//
// For the incoming pod, on a candidate node:
//
//   - its required pod affinity terms: some pod already accounted in the
//     cluster must match every term at once, and the node must share, for
//     each term, the term's topology domain (the value of the node label
//     named by topologyKey) with such a pod. A node without one of the
//     topology labels never passes. The first pod of a group that has
//     affinity to its own group may go anywhere with all the topology
//     labels when no pod in the cluster matches the terms yet and the pod
//     matches them itself. A failure is UnschedulableAndUnresolvable with
//     "node(s) didn't match pod affinity rules".
//   - its required pod anti-affinity terms: no pod matching a term may run
//     in the node's domain of that term. A failure is Unschedulable with
//     "node(s) didn't match pod anti-affinity rules".
//   - the required anti-affinity terms of the pods already there: no pod
//     whose term matches the incoming pod may run in the node's domain of
//     that term. A failure is Unschedulable with "node(s) didn't satisfy
//     existing pods anti-affinity rules".
//
// A term selects pods by its labelSelector in its namespaces: those listed,
// plus those whose labels match its namespaceSelector; with neither, the
// pod's own namespace; an empty namespaceSelector ({}) selects every
// namespace. matchLabelKeys and mismatchLabelKeys (GA in Kubernetes 1.33)
// are merged into labelSelector by the API server when the pod is created,
// and kube-scheduler reads labelSelector only; so does this plugin.
//
// The pods taken into account are the counted tasks of the nodes
// (framework.TaskInfo.Counted): bound or assumed and not finished,
// terminating ones included, as in kube-scheduler.
//
// # Gangs
//
// The work is done per pod in PreFilterPod, over all nodes of the
// snapshot, which hold the pods the cycle placed before this one. The
// second pod of a gang whose members repel each other therefore sees the
// first, and a gang that attracts itself lands in one domain.
//
// # Cost
//
// framework.NodeInfo counts the pods with required anti-affinity per node.
// PreFilterPod of a pod without pod (anti-)affinity returns Skip after a
// look at those counters when no node holds such a pod, so Filter never
// runs for plain pods.
//
// # Preemption
//
// The plugin implements framework.PodPreFilterExtensions: AddPod and
// RemovePod change the counts of PreFilterPod's state by one pod (the
// existing pods' anti-affinity terms matching the incoming pod, and the
// incoming pod's own terms matching that pod), so preemption's victim
// search updates the state per victim instead of counting the whole
// cluster again. A domain whose count drops to zero is forgotten, as
// PreFilterPod would not have counted it, which keeps the self-affine
// rule above right once the last matching pod is gone. The state's
// Clone copies the counts.
//
// # Score
//
// PreScore sums, per topology domain over all nodes (not only the feasible
// ones: PreFilterPod leaves them in the state), the weights of the pod's
// preferred affinity terms (positive) and anti-affinity terms (negative)
// matching pods there, and of the terms of the pods there that match the
// pod: required affinity (weight 1, kube-scheduler's default
// hardPodAffinityWeight), preferred affinity (positive) and preferred
// anti-affinity (negative). A node scores the sum over its domains;
// NormalizeScore maps the lowest to 0 and the highest to 100. PreScore
// returns Skip when nothing scores, e.g. a plain pod in a cluster without
// pod affinity.
//
// # Namespaces
//
// Namespace labels come from a Namespace lister of the scheduler's shared
// informer factory (framework.Handle.SharedInformerFactory), which the
// scheduler cache starts with its own informers. They are needed only for
// a namespaceSelector that is neither nil nor empty; the lister is read
// only then, and until it has synced such a pod fails with an error and is
// retried, rather than being judged on missing namespaces. As in
// kube-scheduler, no namespace events are registered: a namespace whose
// labels change is seen at the next attempt. A handle without an informer
// factory (some tests) gives no lister: terms that need one fail.
//
// # Events
//
// An assigned pod deleted (or finished) that the pending pod's
// anti-affinity matched, or whose own anti-affinity matched the pending
// pod; an assigned pod added (bound by any scheduler, this one included,
// or created bound) that the pending pod's affinity matches; an assigned
// pod relabelled so that the pending pod's affinity now matches it, or
// its anti-affinity no longer does; a node added, or whose labels
// changed, carrying a topology key of the pending pod's terms. Pods of
// the same gang see each other within the cycle and need no event.
//
// Args: none.
package interpodaffinity
