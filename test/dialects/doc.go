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

// Package dialects runs batch-scheduler against a real kube-apiserver that
// serves every gang dialect: the native scheduling.k8s.io/v1beta1 PodGroup
// (feature gate GenericWorkload), and the scheduler-plugins and Volcano
// PodGroups through the CRDs in config/crds/third-party. It also serves,
// through the minimal CRDs there, the owners gangs are inferred from
// (RayCluster, JobSet, LeaderWorkerSet, MPIJob; the PyTorchJob CRD is
// installed by a test while the scheduler runs, to exercise rediscovery).
// No operator runs, nor the Job controller or the garbage collector (the
// other controllers of test/controlplane do): tests create the owner
// objects and the pods with the owner references and labels the operators
// would set; test/workloads and test/operators run the real ones. Each
// test starts its own scheduler in-process, in its own namespace with its
// own nodes.
package dialects
