package register_test

import (
	"slices"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"

	_ "example.com/acme-scheduler/acme/register"
)

// Importing the package puts "acme" next to the built-in "default" in the
// process-wide registry.
func TestRegistered(t *testing.T) {
	names := eventhandlers.Names()
	for _, want := range []string{"acme", "default"} {
		if !slices.Contains(names, want) {
			t.Errorf("registered handlers = %q, want %q among them", names, want)
		}
	}
}
