// Package intree lists the event handlers built into batch-scheduler, as
// pkg/plugins lists the in-tree plugins: an explicit list, no init()
// registration. The command starts from NewRegistry and adds what vendors
// registered process-wide (eventhandlers.RegisterEventHandler) or passed
// as options.
package intree

import (
	"fmt"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/twolevel"
)

// handlers lists the in-tree handlers' factories by name.
var handlers = []struct {
	name    string
	factory eventhandlers.Factory
}{
	{defaulthandler.Name, defaulthandler.Factory},
	{twolevel.Name, twolevel.Factory},
}

// NewRegistry returns a new registry holding every in-tree handler.
// Callers may register more handlers in it, or merge it into their own.
func NewRegistry() *eventhandlers.Registry {
	r := eventhandlers.NewRegistry()
	for _, h := range handlers {
		if err := r.Register(h.name, h.factory); err != nil {
			// The list is fixed: a failure is a programming error.
			panic(fmt.Sprintf("registering in-tree event handler: %v", err))
		}
	}
	return r
}
