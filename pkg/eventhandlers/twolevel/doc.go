// Package twolevel is the "two-level" event handler: batch-scheduler as
// one framework under a Mesos-like allocator that grants each framework
// capacity per node.
//
// It behaves as the default handler for every object and adds Grants
// (pkg/apis/batchscheduler/v1alpha1), read from a custom informer. Its
// configuration section:
//
//	eventHandlers:
//	- name: two-level
//	  args:
//	    framework: batch        # required: grants for other frameworks are ignored
//	    evictOnRevoke: false    # evict pods above a shrunken grant
//	    # ...and any argument of the default handler
//
// The cap on a node (eventhandlers.NodeCapCache) is the sum of this
// framework's live grants there: phase Active (or not yet set) and
// spec.expiresAt not passed. A timer enforces expiry. Revoked, expired and
// deleted grants count as zero, and a node with no live grant has no
// capacity for this scheduler at all ("No grant on node"). A grant that
// grows raises framework.EventGrantIncrease, so waiting jobs retry at once.
//
// When a grant shrinks below what this scheduler's pods there request,
// nothing new goes there, the node is counted in
// batch_scheduler_grant_overcommitted_nodes and gets a Warning Event
// (GrantExceeded) until it clears. With evictOnRevoke the handler also
// evicts pods there, lowest priority first (the newest first among equals),
// through the Eviction API, which honours PodDisruptionBudgets; it never
// deletes pods.
//
// The handler's lock (Handler.mu) guards its grant table and the caps it
// last gave the cache, and is held while it hands a cap to the cache, so
// that caps reach the cache in the order they were computed. The cache
// never calls back into the handler.
package twolevel
