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

// Package allocator is the reference allocator's engine: it watches Nodes
// through a shared informer, keeps the registry of frameworks and revoked
// grants (persisting it to a state file on every admin change), reads each
// framework's demand report, runs drf.Allocate on every round, and
// publishes the resulting Grants in a resourcemanager.Store that
// batch-scheduler's custom informers list and watch. Handler serves that
// store, the admin API, /healthz and /metrics on one listener.
//
// Capacity a framework holds never goes to another (package held). A
// framework holds, per node, the most any version of its grant it may
// still apply gives, or what it reports to use if more. Its synced demand
// reports (demand.Report.Synced) acknowledge versions
// (ObservedGrants); a version below the acknowledged one no longer counts.
// So each round:
//
//  1. reads the reports; a synced one replaces the framework's
//     acknowledgments and usage, one that is not synced only adds demand
//     (and usage above what is known);
//  2. computes what each framework holds and gives it to drf.Allocate
//     (Input.Held), whose result is the wanted allocation;
//  3. publishes it, except that no grant rises into room another framework
//     holds (held.Clamp, frameworks by name): a shrink is published at
//     once, the matching grow once the shrink is acknowledged and the
//     usage it covered is gone. A grant no longer wanted drops to a zero
//     version (Active, no resources) and is deleted once acknowledged;
//  4. keeps what it published as drf's carry-over for the next round.
//
// Fail closed: a framework whose report cannot be read, that never sends a
// synced one, or that is unregistered, keeps all it holds until a synced
// report says otherwise.
//
// Restarts: with a state file, what each framework holds is saved in it,
// before any grant grows beyond what the file holds (a failed save defers
// the grow) and after each round when it changed. On start each saved
// value is a pseudo-version 0 of its grant, held until the framework
// acknowledges a version of the new run, and the carry-over of the first
// round.
//
// Concurrency: Allocator.mu guards the registry, the held capacity last
// saved, the state file and the status; the round goroutine owns
// everything else (reports, the ledger, the published grants).
package allocator
