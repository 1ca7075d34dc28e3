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
