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

// Package harness is what the end-to-end tests and the demo (hack/demo)
// share to run batch-scheduler and the programs around it, and to judge
// what they did:
//
//   - the control plane: test/controlplane (etcd, kube-apiserver,
//     kube-controller-manager and KWOK from bin/), used as it is;
//   - the scheduler: StartScheduler runs the real command in this
//     process (its endpoints on a TLS port read as the control plane's
//     admin, or on a plain loopback port), StartSchedulerProcess runs a
//     built binary as a child process (for tests that SIGKILL it), and
//     InProcess is the one-line form for a test that needs no endpoint;
//   - the example programs: Build compiles them, StartAllocator and
//     StartVMManager run them as child processes (Process) and return
//     clients of their HTTP APIs;
//   - the pod watcher: test/podwatch, a Watcher of every pod transition
//     that records broken guarantees (double binds, over-commit, gangs
//     below their quorum);
//   - the consistency check: Consistent compares the scheduler's
//     /debug/cache with the pods as the API shows them (every bound pod on
//     its node with its requests, nothing merely assumed, no node
//     over-committed), TwoLevelConsistent holds two-level scheduling to
//     its guarantees (grants, caps, VMs), and Scheduler.Verify runs the
//     scheduler's own checker, /debug/cache/verify;
//   - expected outcomes: Outcome and Compare (pods bound where, in which
//     phase, or unschedulable with which message), Job and CompareJobs,
//     Poll and Final to wait on them, and tables to print what was seen.
//
// Every launcher returns errors rather than failing a test, so that the
// demo (a program) and the tests (through their t.Fatal) use the same
// code; each started thing has a Stop that reports how it ended.
package harness
