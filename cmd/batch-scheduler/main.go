// Command batch-scheduler is a Kubernetes batch (gang) scheduler. See the
// README and docs/ for how it works; app holds everything but this line.
package main

import (
	"os"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
)

func main() {
	os.Exit(app.Execute(app.NewSchedulerCommand()))
}
