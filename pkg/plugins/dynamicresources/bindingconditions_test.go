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

package dynamicresources

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// preparedSlice publishes on node one device that its driver must
// prepare before a pod using it is bound: condition "attached", or
// "failed" when it cannot.
func preparedSlice(node string) *resourceapi.ResourceSlice {
	s := slice(node, 1)
	s.Spec.Devices[0].BindingConditions = []string{"attached"}
	s.Spec.Devices[0].BindingFailureConditions = []string{"failed"}
	return s
}

// reportDevice writes, as the driver would, condition cond (true) for
// the allocated device of claim name.
func reportDevice(t *testing.T, e *env, name, cond string) {
	t.Helper()
	c, err := e.h.Client.ResourceV1().ResourceClaims(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Status.Allocation.Devices.Results[0]
	c.Status.Devices = []resourceapi.AllocatedDeviceStatus{{Driver: r.Driver, Pool: r.Pool, Device: r.Device,
		Conditions: []metav1.Condition{{Type: cond, Status: metav1.ConditionTrue, Reason: "Driver", LastTransitionTime: metav1.Now()}}}}
	if _, err := e.h.Client.ResourceV1().ResourceClaims(ns).UpdateStatus(t.Context(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestBindWaitsForBindingConditions: Bind writes the allocation of a
// device with binding conditions (with its allocationTimestamp) and says
// the pod is not ready to bind (framework.BindNotReadyError, for the
// scheduler to call it again) until the driver reports the condition
// true; then it lets the pod through. A failure condition, or no report
// within the binding timeout, fails the bind.
func TestBindWaitsForBindingConditions(t *testing.T) {
	for _, tc := range []struct {
		name string
		// report is the condition the driver reports ("" none);
		// late moves the clock past the binding timeout.
		report string
		late   bool
		// deleted deletes the pod instead.
		deleted bool
		want    string // "" for Skip, else part of the error
	}{
		{name: "ready", report: "attached"},
		{name: "failed", report: "failed", want: "binding failure condition is true: failed"},
		{name: "timeout", late: true, want: "not ready within 10m0s"},
		{name: "pod deleted while it waits", deleted: true, want: "waited for its devices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podWith("p", "c")
			e := newEnv(t, []*v1.Node{gpuNode("n1")}, gpuClass(), preparedSlice("n1"), claim("c", "gpu", 1), pod)
			state := framework.NewCycleState()
			if node, st := e.place(state, pod); node != "n1" {
				t.Fatalf("place: %q %v", node, st)
			}
			var notReady *framework.BindNotReadyError
			if st := e.pl.Bind(t.Context(), state, pod, "n1"); !errors.As(st.AsError(), &notReady) {
				t.Fatalf("first Bind = %v, want not ready", st)
			}
			// The allocation is written and stamped; until the informer
			// shows it, and the driver reports, the pod is not ready.
			err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				c, err := e.pl.claims.ResourceClaims(ns).Get("c")
				return err == nil && c.Status.Allocation != nil, nil
			})
			if err != nil {
				t.Fatal("the allocation was never written")
			}
			c, _ := e.pl.claims.ResourceClaims(ns).Get("c")
			if c.Status.Allocation.AllocationTimestamp == nil || len(c.Status.Allocation.Devices.Results[0].BindingConditions) != 1 {
				t.Fatalf("allocation %+v, want a timestamp and the device's binding condition", c.Status.Allocation)
			}
			if st := e.pl.Bind(t.Context(), state, pod, "n1"); !errors.As(st.AsError(), &notReady) || !strings.Contains(notReady.Reason, "attached") {
				t.Fatalf("Bind before the driver reported = %v, want not ready, awaiting attached", st)
			}
			if tc.late {
				e.pl.clock = func() time.Time { return time.Now().Add(11 * time.Minute) }
			}
			if tc.report != "" {
				reportDevice(t, e, "c", tc.report)
			}
			if tc.deleted {
				if err := e.h.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// Called again until the informer shows the report.
			var st *framework.Status
			err = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				st = e.pl.Bind(ctx, state, pod, "n1")
				return !errors.As(st.AsError(), &notReady), nil
			})
			if err != nil {
				t.Fatalf("Bind still not ready: %v", st)
			}
			switch {
			case tc.want == "" && !st.IsSkip():
				t.Fatalf("Bind = %v, want Skip", st)
			case tc.want != "" && (st.IsSuccess() || st.IsSkip() || !strings.Contains(st.Message(), tc.want)):
				t.Fatalf("Bind = %v, want an error containing %q", st, tc.want)
			}
		})
	}
}

// TestBindingReady matches device statuses to results by device and
// share.
func TestBindingReady(t *testing.T) {
	share := "s1"
	c := allocated(claim("c", "gpu", 1), "n1", []string{"gpu-0"})
	c.Status.Allocation.Devices.Results[0].BindingConditions = []string{"attached"}
	c.Status.Allocation.Devices.Results[0].BindingFailureConditions = []string{"failed"}
	cond := func(t string) []metav1.Condition {
		return []metav1.Condition{{Type: t, Status: metav1.ConditionTrue}}
	}
	for _, tc := range []struct {
		name     string
		statuses []resourceapi.AllocatedDeviceStatus
		ready    bool
		failed   bool
	}{
		{name: "no status"},
		{name: "another device", statuses: []resourceapi.AllocatedDeviceStatus{{Driver: driver, Pool: "n1", Device: "gpu-1", Conditions: cond("attached")}}},
		{name: "another share", statuses: []resourceapi.AllocatedDeviceStatus{{Driver: driver, Pool: "n1", Device: "gpu-0", ShareID: &share, Conditions: cond("attached")}}},
		{name: "ready", statuses: []resourceapi.AllocatedDeviceStatus{{Driver: driver, Pool: "n1", Device: "gpu-0", Conditions: cond("attached")}}, ready: true},
		{name: "failed", statuses: []resourceapi.AllocatedDeviceStatus{{Driver: driver, Pool: "n1", Device: "gpu-0", Conditions: cond("failed")}}, failed: true},
	} {
		c := c.DeepCopy()
		c.Status.Devices = tc.statuses
		ready, why, err := bindingReady(c)
		if ready != tc.ready || errors.Is(err, errBindingFailed) != tc.failed || !ready && !tc.failed && why == "" {
			t.Errorf("%s: bindingReady = %v, %q, %v; want ready %v, failed %v", tc.name, ready, why, err, tc.ready, tc.failed)
		}
	}
}
