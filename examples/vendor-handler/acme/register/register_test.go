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

package register_test

import (
	"slices"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"

	_ "example.com/acme-scheduler/acme/register"
)

// Importing the package puts "acme" in the process-wide registry, which
// holds the vendors' handlers only: the command adds the built-in ones
// (pkg/eventhandlers/intree), so "default" is not there.
func TestRegistered(t *testing.T) {
	names := eventhandlers.Names()
	if !slices.Contains(names, "acme") {
		t.Errorf("registered handlers = %q, want acme among them", names)
	}
	if slices.Contains(names, "default") {
		t.Errorf("registered handlers = %q: the built-in default handler is registered process-wide", names)
	}
}
