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

// Package podwatch judges a scheduler from outside, by what the API
// server shows: a Watcher follows every transition of the pods of one
// namespace and records the guarantees it saw broken (a pod bound twice, a
// node over-committed, a gang running below its quorum, a pod it may have
// missed). The chaos suite and the tests of real workloads (Jobs,
// operators) use it; it knows nothing of the scheduler under test, so it
// judges kube-scheduler the same way.
package podwatch
