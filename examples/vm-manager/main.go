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

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/examples/vm-manager/internal/app"
)

func main() {
	os.Exit(mainWithArgs(os.Args[1:]))
}

// mainWithArgs parses args, sets logging up and runs the manager until
// SIGINT or SIGTERM. It returns the exit code: 0 after a clean stop, 2 for
// bad flags, 1 for any other failure.
func mainWithArgs(args []string) int {
	o := app.NewOptions()
	fs := pflag.NewFlagSet("vm-manager", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "vm-manager:", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "vm-manager: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "vm-manager:", err)
		return 2
	}
	if err := logsapi.ValidateAndApply(o.Logs, nil); err != nil {
		fmt.Fprintln(os.Stderr, "vm-manager: logging flags:", err)
		return 2
	}
	defer klog.Flush()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, o); err != nil {
		klog.ErrorS(err, "VM manager failed")
		return 1
	}
	klog.InfoS("VM manager stopped")
	return 0
}
