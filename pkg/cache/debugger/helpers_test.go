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

package debugger

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// epoch is the fake clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newTestCache builds a cache on a fake clock (unless opts has a clock).
func newTestCache(t *testing.T, opts cache.Options) (*cache.SchedulerCache, *testingclock.FakeClock) {
	t.Helper()
	fakeClock := testingclock.NewFakeClock(epoch)
	if opts.Clock == nil {
		opts.Clock = fakeClock
	}
	c, err := cache.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, fakeClock
}

func mustNoErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

type res = map[v1.ResourceName]string

func bigNode(name string) *v1.Node {
	return st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: "10", v1.ResourceMemory: "10Gi", v1.ResourcePods: "110"}).Obj()
}
