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

// Package nodeledger is the NodeLedger plugin: batch-scheduler's side of
// the NodeLedger (pkg/apis/batchscheduler/v1alpha1), the one arbiter of a
// node shared with a placer outside Kubernetes (a VM manager). See
// docs/hybrid.md for the design and pkg/ledger for the commit protocol.
//
// Enable it in a profile, with the label selector of the shared nodes:
//
//	profiles:
//	- schedulerName: batch-scheduler
//	  plugins:
//	    reserve: {enabled: [{name: NodeLedger}]}
//	    bind: {enabled: [{name: NodeLedger}]}
//	  pluginConfig:
//	  - name: NodeLedger
//	    args:
//	      nodeSelector: batch-scheduler.io/shared=vms
//	      placer: batch-scheduler
//
// The Bind plugin must come before DefaultBinder; it returns Skip after its
// commit, and DefaultBinder binds. On a node the selector does not match
// it does nothing but remember the placement until its bind is seen
// (Reserve), so nodes without VMs pay no API call.
//
// On a shared node:
//   - Joining: once the pod and node informers have synced, the plugin
//     joins the ledger of every shared node (creating it if needed): it
//     lists its placer there and records every pod of this scheduler on
//     the node, bound or with its bind in flight. From then on every bind
//     there is committed first. The VM manager places nothing on a node
//     before batch-scheduler has joined its ledger, so a node that becomes
//     shared while binds are in flight is never over-committed either.
//   - Bind: the pod is committed to the ledger (pkg/ledger.Commit): the
//     entries, the node's other pods (bound, or placed by this scheduler
//     and not yet committed) and the pod must fit the node's allocatable.
//     If not, another placer took the room since the cycle's snapshot;
//     the bind fails as a conflict and the job is tried again after its
//     backoff, on a view that then includes the other placement.
//   - Release: an entry of this scheduler is removed once its pod is gone:
//     deleted, finished, or bound to another node. A pod whose bind is in
//     flight keeps its entry. Unreserve (a failed bind) removes the entry
//     at once.
//
// The plugin is built once per profile; its state (the placements in
// flight, the ledgers) is shared by all of them through the handle's
// framework.SharedStore, so that several profiles commit as one placer.
// Its lock (placer.mu) guards that state's maps and is never held during
// an API call; a ledger change runs under it only to read them.
package nodeledger
