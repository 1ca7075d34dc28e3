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

// Package e2e runs batch-scheduler against a real kube-apiserver and etcd
// (see test/controlplane). One control plane serves the whole package; each
// test starts its own scheduler in-process through app.NewSchedulerCommand,
// uses its own namespace and node names, and observes the scheduler only
// through its HTTP endpoints, as an operator would.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// The schedulers the tests run in-process set the process's logging
	// up; do it before any test goroutine logs.
	if err := app.ApplyLogging(); err != nil {
		fmt.Fprintln(os.Stderr, "applying the logging configuration:", err)
		os.Exit(1)
	}
	controlplane.RunTests("e2e", &cp, m.Run)
}
