package runtime

import (
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/registry"
)

// Registry maps plugin names to their factories. Build one with
// NewRegistry and fill it with Register; NewFramework looks up the
// plugins a profile enables in it. An unknown name is an error that lists
// the registered ones.
type Registry = registry.Registry[framework.PluginFactory]

// NewRegistry returns an empty plugin registry.
func NewRegistry() *Registry { return registry.New[framework.PluginFactory]("plugin") }
