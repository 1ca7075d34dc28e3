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
