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
