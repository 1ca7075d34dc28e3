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

// Package workloads runs batch work that software we did not write
// creates, on a cluster that runs it: the real Job controller of
// kube-controller-manager creates the pods, batch-scheduler (the real
// command, in this process) places them, KWOK's simulated kubelets run
// them to completion or failure (test/controlplane), and the controller
// sees them finish. A podwatch.Watcher follows every pod and fails a test
// whose gang ever starts below its quorum.
package workloads
