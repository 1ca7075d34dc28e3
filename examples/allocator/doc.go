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

// Command allocator is batch-scheduler's reference Mesos-like allocator
// for two-level scheduling. It watches the cluster's Nodes and divides
// each node's allocatable among registered frameworks (batch-scheduler
// instances, the VM manager, ...) by weighted Dominant Resource Fairness,
// reads each framework's demand report (pkg/demand) to move capacity left
// idle toward frameworks whose work waits, and publishes the result as
// Grant objects that batch-scheduler's two-level handler reads through a
// custom informer. Like Mesos, it never hands out capacity a framework
// still holds: capacity a grant gives up moves to another framework only
// once the framework's synced demand report acknowledges the smaller
// version and no longer uses it (package internal/held); a framework that
// does not report keeps what it holds.
//
// Usage:
//
//	go build -o bin/allocator ./examples/allocator
//	bin/allocator --kubeconfig ~/.kube/config --config frameworks.yaml \
//	    --state-file /var/lib/allocator/state.yaml --listen 127.0.0.1:8090
//
// One listener serves the grants (list and watch at
// /apis/batch-scheduler.io/v1alpha1/grants), the admin API (/frameworks,
// /allocation, /grants/{name}/revoke), /healthz and /metrics. SIGTERM or
// SIGINT stops it gracefully. examples/allocator/README.md documents the
// flags, the API, the acknowledgment protocol and the allocation rules
// (package internal/drf).
package main
