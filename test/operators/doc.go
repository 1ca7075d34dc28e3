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

// Package operators runs real third-party operators, which batch-scheduler's
// authors did not write, against a real control plane (kube-apiserver,
// etcd, kube-controller-manager and KWOK's simulated kubelets, see
// test/controlplane) and checks that the gangs they create are scheduled
// whole by batch-scheduler, run, and give their room back when deleted.
//
// The first is KubeRay's operator (bin/kuberay-operator, built from
// github.com/ray-project/kuberay/ray-operator by hack/build-control-plane.sh),
// run as a process with its batch-scheduler integrations: with
// --batch-scheduler=scheduler-plugins it writes a scheduling.x-k8s.io
// PodGroup per RayCluster and labels the pods, with
// --batch-scheduler=volcano a scheduling.volcano.sh PodGroup and annotates
// them. Its CRDs are read from the Go module cache at test time (the
// version hack/tools/kuberay pins), never copied into this repository.
//
// Each test starts, for each integration, its own operator (watching only
// the test's namespace), its own batch-scheduler in-process (using only
// the test's nodes, by a node label) and a podwatch.Watcher that fails
// the test if a gang ever runs below its quorum, a node is over-committed
// or a pod is bound twice.
package operators
