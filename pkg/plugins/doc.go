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

// Package plugins assembles the in-tree scheduling plugins: NewInTreeRegistry
// registers every one of them under its name, and DefaultProfile says which
// run at each extension point when the configuration file does not say
// otherwise.
//
// The plugins live in their own packages:
//
//	prioritysort       PrioritySort       QueueSort
//	gang               Gang               PreFilter, Permit
//	nodeunschedulable  NodeUnschedulable  Filter
//	nodeaffinity       NodeAffinity       PreFilter, Filter, Score
//	tainttoleration    TaintToleration    Filter, Score
//	noderesources      NodeResourcesFit   PreFilter, Filter, Score
//	capacity           Capacity           PreFilter (and per pod), Reserve
//	capacity           Reclaim            PostFilter
//	defaultpreemption  DefaultPreemption  PostFilter
//	defaultbinder      DefaultBinder      Bind
//
// (and the volume, port, spread and affinity plugins listed in
// docs/scheduling.md).
package plugins
