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

// Package perfsuite runs kube-scheduler's own benchmark suite,
// test/integration/scheduler_perf of k8s.io/kubernetes, against
// kube-scheduler and batch-scheduler side by side.
//
// The suite's YAML workload configurations and templates are read from the
// Go module cache at run time (make control-plane downloads the module to
// build kube-scheduler); nothing of them is copied into this repository.
// Each workload runs once per scheduler on a fresh etcd and kube-apiserver:
// the scheduler is started as a process, then the workload's operations
// (createNodes, createPods, createPodGroups, createAny, barrier, churn, ...)
// run against the API server as upstream's executor runs them, and each
// window that collects metrics reports pods/s (the mean of once-a-second
// samples, taken and averaged as upstream's SchedulingThroughput is: see
// throughputSampler) and the percentiles of the scheduler's own
// successful-attempt histogram.
//
// Workloads that need a feature batch-scheduler lacks (the Dynamic
// Resource Allocation features its DynamicResources does not enable:
// device compatibility groups, list-typed
// attributes) or a part of upstream's harness the runner lacks
// (PersistentVolume set-up, createResourceClaims) are listed as skipped
// with the reason (Unsupported); see docs/performance.md.
package perfsuite
