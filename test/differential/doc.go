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

// Package differential runs kube-scheduler v1.37.1 (bin/kube-scheduler,
// built by make control-plane) and batch-scheduler on the same cluster
// state and the same pods, against a real kube-apiserver and etcd (see
// test/controlplane), and compares their verdicts pod by pod: whether the
// pod was placed, and for a pod that was not, the reason (its
// PodScheduled condition's message, normalised).
//
// Its tests are all in _test files. A scenario is data (scenarios_test.go,
// pending_scenarios_test.go): nodes, pods already running on them, other
// objects (storage classes, volumes, claims) and the pods to schedule. Each
// scheduler runs alone, freshly started, in a namespace of its own; see
// runScenario for the steps.
package differential
