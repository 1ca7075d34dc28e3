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

// Package drf is the reference allocator's allocation rule as one pure,
// deterministic function: Allocate takes the nodes, the frameworks and
// their weights, what each framework last reported (pkg/demand), the
// previous grants and how long each has been idle, and returns the grants
// per framework and node. It does no I/O and reads no clock; the same
// Input always gives the same Result.
//
// The rules, in the order Allocate applies them on every node:
//
//  1. Carry over: previous grants stay, except on nodes or for frameworks
//     that are gone and for revoked (framework, node) pairs, which get
//     nothing. A node whose allocatable shrank below the sum of its grants
//     is brought back within it, idle capacity first.
//  2. Usage is never revoked: a framework's grant is raised to what its
//     report says it uses on the node, as far as free capacity allows.
//  3. Rebalancing by weighted Dominant Resource Fairness (Ghodsi et al.,
//     NSDI 2011): frameworks whose report has unmet demand are hungry.
//     Unallocated capacity, plus the capacity that non-hungry frameworks
//     have been granted but left unused for longer than the idle timeout,
//     is handed out by progressive filling: the hungry framework with the
//     lowest weighted dominant share gets one unit (its largest waiting
//     unit, or what is free up to its unmet demand) on the first node
//     where it fits, preferring nodes where its largest gang could fit
//     whole, until its demand is covered or nothing fits.
//  4. Baseline: what is still unallocated on a node is divided among the
//     frameworks in proportion to their weights. On a fresh start every
//     node is unallocated, so the first grants are the weighted split of
//     each node's allocatable left after reported usage; a restart
//     rebuilds them deterministically.
//
// What is "unallocated" or "free" on a node is its allocatable less, for
// every framework, the largest of its grant, its reported usage and its
// held capacity (Input.Held: what the allocator knows it may still
// occupy, such as a larger grant version it has not yet acknowledged
// giving up). So no rule ever plans to give held capacity to another
// framework, except by lending, which only shrinks the lender's grant
// here; the allocator publishes the borrower's share once the lender no
// longer holds it.
//
// A report's usage counts only when it is synced (demand.Report.Synced);
// a framework without a synced report may be hungry, but its usage is
// unknown: it lends nothing and its grants are never shed or raised
// according to usage.
//
// A framework whose report could not be read keeps its grants unchanged:
// it is neither hungry, nor a lender, nor given more.
package drf
