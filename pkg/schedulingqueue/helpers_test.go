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

package schedulingqueue

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// epoch is the fake clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type res = map[v1.ResourceName]string

func mustNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func podNames(pods []*v1.Pod) []string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return names
}

func TestLocationString(t *testing.T) {
	for l, want := range map[location]string{
		inActive: "active", inBackoff: "backoff", inUnschedulable: "unschedulable",
		inFlight: "inFlight", awaitingBinding: "awaitingBinding", location(42): "location(42)",
	} {
		if got := l.String(); got != want {
			t.Errorf("location(%d).String() = %q, want %q", int(l), got, want)
		}
	}
}
