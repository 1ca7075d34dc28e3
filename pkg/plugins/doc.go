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
