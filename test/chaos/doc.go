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

// Package chaos runs batch-scheduler, built as a binary, against a real
// etcd and kube-apiserver (test/controlplane) while faults are injected
// under continuous load: kube-apiserver killed and restarted, watches cut,
// etcd compacted, an external manager restarted with older state, the
// scheduler SIGKILLed and its leader failed over, event handlers that
// panic or are slow, and API requests answered 429 or 500.
//
// Three observers judge each fault:
//   - a Watcher that sees every transition of the load's pods and records
//     a pod bound twice, a node over-committed, or a gang running below its
//     quorum;
//   - the bind log of the FaultProxy between the scheduler and the API
//     server, which records a second successful bind of a pod;
//   - the scheduler's own consistency checker (GET /debug/cache/verify),
//     polled after the fault until it reports no difference.
//
// The short version (the default, run by hack/test.sh) keeps each fault
// to a few seconds; CHAOS_FULL=1 (make test-chaos) runs each for longer.
// Each test logs its figures, and TestMain prints a summary table.
package chaos
