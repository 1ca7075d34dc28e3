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

// Package held is the reference allocator's ledger of what each framework
// may still occupy on each node, whatever its grant says now.
//
// A framework learns of a new version of its grant through a watch, a
// little after the allocator publishes it, and its demand report may
// predate its latest placements. So when a grant shrinks (or is revoked,
// or drops to zero), the framework may go on placing work under the
// larger version it last saw. The Ledger keeps, per grant, the versions
// the allocator published and the one the framework's latest synced
// report acknowledged (demand.Report.ObservedGrants), and answers:
//
//   - Believed: the per-resource maximum of the values of every version
//     the framework may still apply: the floor (the latest version at or
//     below the acknowledged one) and every later version; every version
//     when nothing is acknowledged. A version's value is its resources
//     while Active and not expired, and zero when Revoked or expired.
//   - held (the caller's, per framework and node): the per-resource
//     maximum of Believed and what the framework's latest synced report
//     says it uses there.
//
// Clamp enforces the invariant on one node: a new version may raise its
// framework's held capacity only into room that no other framework holds,
// so the sum of held capacity stays within the node's allocatable.
//
// Example: a grant published at resourceVersion 10 with cpu 4 is shrunk
// at 12 to cpu 1. While the framework's reports acknowledge 10 (or
// nothing), Believed is cpu 4. Once a synced report acknowledges 12,
// version 10 is forgotten and Believed is cpu 1; held is then cpu 1 or
// the framework's reported usage if larger.
//
// The package is pure: it does no I/O and reads no clock (callers pass
// the time). A Ledger is not safe for concurrent use; the allocator's
// round goroutine owns it.
package held
