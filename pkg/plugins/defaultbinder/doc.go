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

// Package defaultbinder implements the DefaultBinder plugin: Bind creates
// the pod's binding subresource (POST pods/<name>/binding) through the
// framework's clientset, which sets spec.nodeName. The binding carries the
// pod's UID, so a pod deleted and recreated under the same name in the
// meantime is not bound by mistake. An API error is an Error status naming
// the pod and the node; the framework then unreserves the pod and retries
// the job.
//
// Args: none; non-empty args are an error.
//
// Events: none; a binder never rejects a pod as unschedulable.
package defaultbinder
