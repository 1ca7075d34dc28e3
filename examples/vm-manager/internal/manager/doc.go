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

// Package manager is the core of the reference VM manager
// (examples/vm-manager): it keeps VMs, places them on hosts, publishes
// every placed VM as an ExternalWorkload in a resourcemanager.Store, and
// serves the admin API, the demand report and the metrics.
//
// A host's free capacity is its allocatable minus the requests of the
// non-terminated pods bound to it (read from a pod indexer filled by a
// client-go informer) minus the VMs this manager placed there. In
// two-level mode (Config.Framework set) a VM must also fit in the sum of
// the framework's live Grants on the host minus its VMs there; a VM that
// fits nowhere then waits, Pending, and is placed as soon as something
// changes (Kick) or at the next retry.
//
// In ledger mode (Config.Ledger, hybrid only; ledger.go) every placement
// is first committed to the host's NodeLedger, where batch-scheduler
// commits its binds, so that a pod and a VM placed at the same instant
// never take the same capacity.
//
// With a State (state.go) the VMs survive a restart of the manager:
// every change is saved before it shows (a VM is saved Running before its
// ExternalWorkload is published; a deletion is saved after the
// ExternalWorkload is removed), and New loads them and publishes the
// Running ones again.
//
// The locks and their order are documented on Manager.
package manager
