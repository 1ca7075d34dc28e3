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
