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

// Command vm-manager is the reference VM manager of batch-scheduler: an
// external resource manager that runs VMs on the same hosts as pods and
// publishes each placed VM as an ExternalWorkload, so that
// batch-scheduler counts it against its host.
//
// It keeps its VMs in memory (and, with --state-file, in a file it loads
// again at start-up) and serves, on one HTTP listener (--listen, default
// 127.0.0.1:8091; --address-file writes the bound host:port):
//
//	POST   /vms          {"name":"vm-a","cpu":"2","memory":"4Gi","host":"node-1"}
//	GET    /vms, GET /vms/{name}, DELETE /vms/{name}
//	GET    /apis/batch-scheduler.io/v1alpha1/externalworkloads   (list/watch)
//	GET    /hosts, /demand, /healthz, /metrics
//
// In hybrid mode (the default) a VM goes to the requested host, or to the
// first host by name with room: allocatable minus the requests of the
// bound, non-terminated pods (watched through --kubeconfig) minus the
// manager's VMs. A VM that does not fit is refused with 409. With --ledger
// every placement is committed to the host's NodeLedger first, where
// batch-scheduler commits its binds, so that a pod and a VM never take the
// same capacity; --host-selector limits the hosts VMs may use.
//
// In two-level mode (--framework=NAME --grants-url=URL) the manager is a
// framework under an allocator that serves Grants: a VM must also fit in
// the framework's live grants on the host minus its VMs there. A VM that
// does not fit waits, Pending (202), and is placed when the grants grow.
//
// Usage:
//
//	vm-manager --kubeconfig ~/.kube/config --address-file /tmp/vm-manager.addr
//	vm-manager --kubeconfig ~/.kube/config --framework vms --grants-url http://127.0.0.1:8090
//
// Point batch-scheduler at it with a custom informer:
//
//	customInformers:
//	- name: vm-manager
//	  resource: ExternalWorkload
//	  source:
//	    http:
//	      url: http://127.0.0.1:8091
//
// See README.md next to this file for the API, the ExternalWorkload
// contract and the race window between a placed VM and a bound pod.
package main
