package acme_test

import (
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"

	"example.com/acme-scheduler/acme"
)

// The sample configuration next to go.mod loads and builds the handler,
// as the command does with --config-path=acme.yaml.
func TestSampleConfig(t *testing.T) {
	f, err := config.Load("../acme.yaml")
	if err != nil {
		t.Fatalf("loading ../acme.yaml: %v", err)
	}
	section := f.HandlerArgs(acme.Name)
	if section == nil {
		t.Fatal("../acme.yaml has no args for the acme handler")
	}
	if _, err := acme.Factory(t.Context(), newMemCache(), section, nil); err != nil {
		t.Fatalf("building the handler from ../acme.yaml: %v", err)
	}
}
