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

package kueue

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// scheduler is one of the two schedulers a Job is run under.
type scheduler struct {
	// name names it in messages, namespaces and nodes.
	name string
	// schedulerName is the spec.schedulerName it serves.
	schedulerName string
	// start runs it until the test ends; stop stops it sooner.
	start func(t *testing.T) (stop func())
}

var (
	kubeScheduler  = scheduler{name: "kube-scheduler", schedulerName: v1.DefaultSchedulerName, start: startKubeScheduler}
	batchScheduler = scheduler{name: "batch-scheduler", schedulerName: "batch-scheduler", start: startBatchScheduler}
)

// startKubeScheduler runs bin/kube-scheduler (v1.37.1) as a child process,
// with its default client limits; its log is shown if the test fails.
func startKubeScheduler(t *testing.T) (stop func()) {
	t.Helper()
	return cp.StartKubeScheduler(t, 50)
}

// startBatchScheduler runs the batch-scheduler command in this process,
// with its default profile.
func startBatchScheduler(t *testing.T) (stop func()) {
	t.Helper()
	return harness.InProcess(t, cp.KubeconfigPath)
}
