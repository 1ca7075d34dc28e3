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
