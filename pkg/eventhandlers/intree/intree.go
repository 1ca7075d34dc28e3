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
