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

package eventhandlers

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/pkg/registry"
)

// Factory builds an event handler.
//
//   - ctx bounds the factory's own start-up work; handlers that need a
//     lifetime implement Runner instead of keeping ctx.
//   - c is the cache the handler updates.
//   - config is the handler's own section of the --config-path file, as
//     YAML, or nil when the file has none. Decode it with
//     config.DecodeStrict so that an unknown field is an error that names
//     the file and line. For a built-in handler whose args the
//     configuration API types (default, two-level) the reader also holds
//     them typed, as the file's loading decoded and validated them, and
//     its factory reads them with config.DecodeHandlerArgs.
//   - restConfig reaches the cluster, for handlers that need a client of
//     their own. It may be nil in tests.
//
// A factory returns an error, never panics, for bad configuration.
type Factory func(ctx context.Context, c Cache, config io.Reader, restConfig *rest.Config) (Interface, error)

// Registry is a set of named factories. The built-in handlers are listed
// in pkg/eventhandlers/intree (intree.NewRegistry); the package-level
// functions use a process-wide registry that out-of-tree handler packages
// fill from init(), which the command merges with the built-in one.
type Registry = registry.Registry[Factory]

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return registry.New[Factory]("event handler") }

// globalRegistry is filled by RegisterEventHandler, normally from init()
// functions of vendors' handler packages. It holds no built-in handler.
var globalRegistry = NewRegistry()

// RegisterEventHandler makes factory available under name to --event-handler,
// for out-of-tree handlers. It panics if name is empty or already
// registered, as database/sql's Register does: both are programming errors
// found at start-up. A name that a built-in handler has is refused when
// the command merges the two registries (exit code 2).
func RegisterEventHandler(name string, factory Factory) {
	if factory == nil {
		panic(fmt.Sprintf("eventhandlers: RegisterEventHandler(%q) with a nil factory", name))
	}
	if err := globalRegistry.Register(name, factory); err != nil {
		panic("eventhandlers: " + err.Error())
	}
}

// GlobalRegistry returns the process-wide registry that RegisterEventHandler
// fills. Callers that add to it should Clone it first.
func GlobalRegistry() *Registry { return globalRegistry }

// Names returns the names registered with RegisterEventHandler, sorted.
func Names() []string { return globalRegistry.Names() }

// GetEventHandler builds the handler registered under name in the global
// registry. See NewEventHandler.
func GetEventHandler(ctx context.Context, name string, c Cache, config io.Reader, restConfig *rest.Config) (Interface, error) {
	return NewEventHandler(ctx, globalRegistry, name, c, config, restConfig)
}

// NewEventHandler looks name up in reg and runs its factory. The registry's
// lock is not held while the factory runs, so a factory may use reg. An
// unknown name is an error that lists the registered names; a factory error
// (or panic) is wrapped with the handler's name.
func NewEventHandler(ctx context.Context, reg *Registry, name string, c Cache, config io.Reader, restConfig *rest.Config) (h Interface, err error) {
	factory, err := reg.Lookup(name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("initializing event handler %q: factory panicked: %v", name, r)
		}
	}()
	h, err = factory(ctx, c, config, restConfig)
	if err != nil {
		return nil, fmt.Errorf("initializing event handler %q: %w", name, err)
	}
	if registry.IsNil(h) {
		return nil, fmt.Errorf("initializing event handler %q: factory returned no handler and no error", name)
	}
	return h, nil
}
