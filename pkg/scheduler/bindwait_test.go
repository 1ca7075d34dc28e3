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

package scheduler

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// A Bind plugin that says the pod is not ready to bind yet
// (framework.BindNotReadyError) has the Bind plugins called again after
// its RetryAfter: the waits count as no failed attempt and no bind error,
// so with one bind attempt allowed the pod is still bound once the plugin
// lets it through; an error after the waits fails the bind as any does.
func TestBindWaitsOutNotReady(t *testing.T) {
	for _, tc := range []struct {
		name      string
		then      *framework.Status // after two not-ready answers
		wantBound bool
	}{
		{name: "ready after two waits", then: framework.NewStatus(framework.Skip), wantBound: true},
		{name: "an error after two waits", then: framework.AsStatus(errors.New("the driver gave up"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			hook := &hookPlugin{bind: func(*v1.Pod, string) *framework.Status {
				if calls.Add(1) <= 2 {
					return framework.AsStatus(&framework.BindNotReadyError{Reason: "device not attached", RetryAfter: time.Millisecond})
				}
				return tc.then
			}}
			h := newHarnessWith(t, harnessConfig{hook: hook, opts: func(o *Options) { o.BindAttempts = 1 }})
			h.addNode("n1", "4")
			pod := st.MakePod().Name("p").Req(res{"cpu": "1"}).Obj()
			h.addPod(pod)
			h.cycle()

			if n := calls.Load(); n != 3 {
				t.Errorf("Bind plugins called %d times, want 3 (two waits, then the answer)", n)
			}
			wantErrors := 0.0
			if !tc.wantBound {
				wantErrors = 1
			}
			if got := metricstest.CounterValue(t, h.metrics.BindErrors); got != wantErrors {
				t.Errorf("BindErrors = %v, want %v: waiting is not an error", got, wantErrors)
			}
			_, bound := h.boundTo()["p"]
			if bound != tc.wantBound {
				t.Errorf("bound = %v, want %v (bindings %v)", bound, tc.wantBound, h.boundTo())
			}
			if !tc.wantBound && h.task(pod).Status != framework.TaskPending {
				t.Errorf("task = %s after the failed bind, want pending", h.task(pod).Status)
			}
		})
	}
}
