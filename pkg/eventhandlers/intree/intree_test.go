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

package intree_test

import (
	"slices"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/intree"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/twolevel"
)

func TestNewRegistry(t *testing.T) {
	r := intree.NewRegistry()
	if got, want := r.Names(), []string{defaulthandler.Name, twolevel.Name}; !slices.Equal(got, want) {
		t.Errorf("in-tree handlers %q, want %q", got, want)
	}
	// Each call returns a registry of its own.
	if err := r.Register("acme", defaulthandler.Factory); err != nil {
		t.Fatal(err)
	}
	if intree.NewRegistry().Has("acme") {
		t.Error("a handler added to one in-tree registry appears in another")
	}
	// The built-ins are not registered process-wide: that registry is
	// the vendors'.
	for _, name := range []string{defaulthandler.Name, twolevel.Name} {
		if eventhandlers.GlobalRegistry().Has(name) {
			t.Errorf("the in-tree handler %q is in the process-wide registry", name)
		}
	}
}
