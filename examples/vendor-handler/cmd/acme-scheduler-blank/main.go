package main

import (
	"os"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"

	// Registers "acme" in the process-wide registry from its init();
	// see doc.go for when to prefer app.WithEventHandler instead.
	_ "example.com/acme-scheduler/acme/register"
)

func main() {
	os.Exit(app.Execute(app.NewSchedulerCommand()))
}
