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

// Package runtime runs a profile's plugins: it resolves and validates a
// profile (which plugins run at which extension point, their weights and
// args), builds the plugins from a Registry, and runs them at each point of
// a scheduling cycle, filtering and scoring nodes in parallel.
//
// The plugin interfaces and the types plugins see (NodeInfo, Job,
// ClusterEvent, ...) live in the parent package framework, which imports
// nothing of this project but pkg/resources; this package and the
// scheduler build on it. Importers usually name this package
// frameworkruntime.
package runtime
