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

// Package fairshare computes the fair share of every queue in a tree of
// queues: the tenants that share one scheduler's capacity. It implements
// hierarchical, weighted Dominant Resource Fairness (DRF) with guarantees,
// limits, borrowing and lending. It is pure computation: Compute takes the
// capacity and the queues with their demands and returns a Share per
// queue; it keeps no state, takes no locks and does no I/O.
//
// # Model
//
// The root's share is the capacity. Every parent divides its share P
// among its children, and a child's FairShare is the share that its own
// children divide in turn. A child first gets its base: its guarantee
// (capped at its limit, and scaled down proportionally on a resource where
// the siblings' guarantees together exceed P), or, if the child lends, the
// part of that guarantee which it demands. A child that does not lend
// keeps its whole guarantee even when idle, so its siblings cannot use it.
//
// What the bases leave of P is then divided by weighted progressive
// filling over the children's residuals, what each still demands beyond
// its base. Every child grows along its residual's direction with a
// dominant share (relative to P) of weight*t, and stops when it has its
// whole residual or when a resource that its residual needs runs out; a
// residual needing a resource of which nothing is left gets nothing. A
// child that may not borrow has its residual capped first so that it
// never exceeds its Entitlement: its guarantee plus its weighted part of
// what the siblings' guarantees leave of P, the share it would get if
// every sibling wanted everything. Demands are those of whole subtrees,
// each queue's capped at its limit.
//
// Amounts are integers in base units; the filling runs in float64 and its
// results are rounded down, so shares can be a unit or so below the exact
// values but never add up to more than the parent's share.
//
// # Example
//
// The example of the DRF paper (Ghodsi et al., "Dominant Resource
// Fairness: Fair Allocation of Multiple Resource Types", NSDI 2011): 9
// CPUs and 18 GB are shared by user A, whose tasks need <1 CPU, 4 GB>
// each, and user B, whose tasks need <3 CPU, 1 GB>. Memory is A's dominant
// resource and CPU is B's. DRF equalises the dominant shares: A gets 3
// tasks (3 CPU, 12 GB, 2/3 of the memory) and B 2 tasks (6 CPU, 2 GB, 2/3
// of the CPUs). As two queues of equal weight, each demanding many such
// tasks, progressive filling yields exactly that although it knows nothing
// of tasks: both grow along their demands until the CPUs run out, with A
// at 3 CPU and 12 GB and B at 6 CPU and 2 GB.
//
// # Guarantees of the result
//
// For every valid queue, with P its parent's share:
//   - FairShare never exceeds Limit, and the children's FairShares never
//     add up to more than P on any resource.
//   - A queue gets at least the part of its honoured Guarantee that it
//     demands, and the whole honoured Guarantee if it does not lend.
//   - A queue gets nothing beyond its Demand, except the idle reserve of a
//     queue that does not lend: FairShare <= max(Demand, Guarantee).
//   - A queue that may not borrow gets at most the larger of its base and
//     its Entitlement.
//   - The division is work conserving: a queue below what it may take
//     (its Demand, or for a queue that may not borrow its Entitlement) is
//     held back by a resource it needs that its parent has handed out
//     entirely, up to rounding (one unit per child).
//
// Lending and borrowing act between siblings. A reserve does not raise
// its parent's Demand, so the reserve of a queue under a parent that
// lends holds only within the share that parent gets.
//
// # Complexity
//
// Validation is linear in the number of queues. Dividing a parent's share
// takes O(children^2 * resources) time, which is cheap for hundreds of
// queues; BenchmarkCompute measures trees of 10 and 200 queues.
package fairshare
