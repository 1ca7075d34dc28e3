package register

import (
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"

	"example.com/acme-scheduler/acme"
)

// init panics (through RegisterEventHandler) if another package of the
// binary registered "acme" already: two handlers under one name is a
// build mistake, found at start-up.
func init() {
	eventhandlers.RegisterEventHandler(acme.Name, acme.Factory)
}
