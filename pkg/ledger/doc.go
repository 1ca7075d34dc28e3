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

// Package ledger commits placements on shared nodes through their
// NodeLedger (pkg/apis/batchscheduler/v1alpha1), the one arbiter of a node
// on which two placers decide: batch-scheduler binding pods and a VM
// manager starting VMs.
//
// A placer commits a placement by changing the node's ledger and writing
// it back with the resourceVersion it read. When another placer wrote in
// between, the API server refuses the write with a conflict; the placer
// reads the ledger again and decides again. This is optimistic concurrency
// over shared state, as Google's Omega commits its schedulers' placements:
// placements on one node are serialised by the API server, so two placers
// can never both take the last free CPU of a host.
//
// Ledgers is what a placer process uses. Commit takes a Change, a function
// that edits the ledger (checks that a placement fits and adds its entry,
// say) and may reject it; concurrent commits to the same node are written
// together in one update (a group commit), so a burst of binds to one
// node costs one write, not one conflict after another:
//
//	l := ledger.New(client.BatchSchedulerV1alpha1().NodeLedgers())
//	err := l.Commit(ctx, "node-1", ledger.Create, func(nl *v1alpha1.NodeLedger) error {
//		if !ledger.Joined(nl, "batch-scheduler") {
//			return errors.New("batch-scheduler has not joined")
//		}
//		if short := ledger.Short(allocatable, ledger.Usage(nl), vm); len(short) > 0 {
//			return fmt.Errorf("no room: %v", short)
//		}
//		ledger.Put(nl, entry)
//		return nil
//	})
//
// A Change runs again on every attempt, against the ledger as it is then,
// so it must decide from its arguments alone; it never runs concurrently
// with another Change of the same node. A change that rejects leaves the
// ledger as it was, and the others of its batch are written without it.
//
// Entries (see Put, Remove, Usage) record what a placement uses; Joined
// and Join record which placers record every placement they make on the
// node. The rules of a placer (which entries it may remove, what counts
// besides the entries) are the caller's: pkg/plugins/nodeledger is
// batch-scheduler's, examples/vm-manager the reference VM manager's.
//
// The lock of a Ledgers (Ledgers.mu) guards its table of nodes: each
// node's queue of changes, whether a batch is being written and the last
// ledger seen. It is never held during an API call or a Change.
package ledger
