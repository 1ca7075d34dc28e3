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
// (GrantExceeded) until it clears.
//
// With evictOnRevoke the handler also gives the capacity back by evicting,
// whole gangs at a time, never below quorum. Every check it frees each
// exceeded node as follows:
//
//   - pods already asked to be evicted (in the last 30 seconds) and
//     terminating pods count as gone;
//   - a pod of no gang may be evicted on its own;
//   - a member of a gang may be evicted on its own only while the gang
//     keeps at least its quorum (min-available) of running members
//     overall: bound, not terminating, not being evicted. An elastic gang
//     thus gives its members above quorum one by one, the newest first;
//   - when the node needs more of a gang than that, the gang is evicted
//     whole, every running member on every node, so that it can be
//     scheduled again together;
//   - the lowest priority goes first; among equal priorities single pods
//     (of no gang, or above their gang's quorum) go before whole gangs,
//     smaller gangs before larger ones, the newest first; and no more is
//     evicted than the node needs: a pod or gang that the others make
//     unnecessary is kept, and a whole gang gives way to its members above
//     quorum when they suffice.
//
// A pod the scheduler is still binding (assumed) is judged once bound. The
// gang a pod belongs to is the one the cache files it under
// (eventhandlers.CapExceeded.Tasks, gangs inferred from owners included),
// and its members and quorum come from eventhandlers.JobSource; with a
// cache that does not offer it, no gang member is evicted.
//
// Evictions go through the Eviction API, which honours
// PodDisruptionBudgets; the handler never deletes pods. A refused eviction
// is asked again after 30 seconds. Evicting a gang whole is one decision:
// a refusal does not stop the other members, and once any member's
// eviction was accepted the rest are asked again until none runs, even if
// the node no longer needs the room, since a gang left below its quorum is
// worse than one evicted whole; a gang none of whose members could be
// evicted is decided again after 30 seconds. Events on the exceeded Node:
// GrantEviction per pod evicted, GrantGangEviction per gang evicted whole
// (naming it), and a Warning GrantEvictionRefused when members of such a
// gang could not be evicted yet.
//
// The handler's lock (Handler.mu) guards its grant table and the caps it
// last gave the cache, and is held while it hands a cap to the cache, so
// that caps reach the cache in the order they were computed. The cache
// never calls back into the handler. The eviction state (exceeded nodes,
// pods being evicted, gangs being evicted whole) belongs to Run's
// goroutine alone and takes no lock; it reads the cache (CapExceededNodes,
// Job) without holding Handler.mu.
package twolevel
