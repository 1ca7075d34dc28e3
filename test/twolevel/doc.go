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

// Package twolevel holds the end-to-end tests of two-level scheduling
// (issue 10): batch-scheduler with the two-level event handler, the
// reference allocator (examples/allocator) and the reference VM manager
// (examples/vm-manager), against a real etcd and kube-apiserver (see
// test/controlplane).
//
// The allocator and the VM manager run as separate processes, built once
// per package run by TestMain; batch-scheduler runs in-process through
// app.NewSchedulerCommand, as in test/e2e. Each test labels its own nodes
// and starts its schedulers with --node-selector on that label, so the
// tests do not see each other's nodes; the allocator and the VM manager
// see every node of the cluster, so the tests do not run in parallel and
// delete their nodes when they end.
//
// TestTwoFrameworksChurn and TestHybridChurn are randomized runs of two
// placers on the same hosts, with each component killed (SIGKILL) once
// mid-run: 30 seconds each in make test, 2 minutes with
// TWOLEVEL_CHURN=full (make test-chaos, several seeds);
// TWOLEVEL_CHURN_SEED replays a run. The batch-scheduler they kill runs as
// a child process, built by TestMain like the managers.
package twolevel
