package main

import (
	"os"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"

	"example.com/acme-scheduler/acme"
)

func main() {
	os.Exit(app.Execute(app.NewSchedulerCommand(app.WithEventHandler(acme.Name, acme.Factory))))
}
