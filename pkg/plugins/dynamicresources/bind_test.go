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
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// TestBindSharedClaim: the pods of a gang sharing one claim write its
// allocation once and each adds itself to reservedFor; a pod's own claim
// gets the finalizer; when the bindings fail afterwards, Unreserve takes
// the pods out again and drops the allocation with the last one.
func TestBindSharedClaim(t *testing.T) {
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, gpuClass(), slice("n1", 2), claim("shared", "gpu", 2))
	ctx := t.Context()
	state := framework.NewCycleState()
	var pods []*v1.Pod
	for _, name := range []string{"p0", "p1", "p2"} {
		pod := podWith(name, "shared")
		if node, st := e.place(state, pod); node != "n1" {
			t.Fatalf("pod %s: %q %v", name, node, st)
		}
		pods = append(pods, pod)
	}
	for _, pod := range pods {
		if st := e.pl.Bind(ctx, state, pod, "n1"); !st.IsSkip() {
			t.Fatalf("Bind %s = %v, want Skip", pod.Name, st)
		}
		// Binding again (a retried bind) changes nothing.
		if st := e.pl.Bind(ctx, state, pod, "n1"); !st.IsSkip() {
			t.Fatalf("second Bind %s = %v, want Skip", pod.Name, st)
		}
	}
	got, err := e.h.Client.ResourceV1().ResourceClaims(ns).Get(ctx, "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Allocation == nil || len(got.Status.Allocation.Devices.Results) != 2 {
		t.Fatalf("allocation = %+v, want 2 devices", got.Status.Allocation)
	}
	if !slices.Contains(got.Finalizers, resourceapi.Finalizer) {
		t.Errorf("finalizers = %v, want %q", got.Finalizers, resourceapi.Finalizer)
	}
	var names []string
	for _, r := range got.Status.ReservedFor {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"p0", "p1", "p2"}) {
		t.Errorf("reservedFor = %v, want p0, p1, p2", names)
	}
	for i, pod := range pods {
		e.pl.Unreserve(ctx, state, pod, "n1")
		got, err := e.h.Client.ResourceV1().ResourceClaims(ns).Get(ctx, "shared", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(got.Status.ReservedFor); n != len(pods)-i-1 {
			t.Errorf("after unreserving %s: %d consumers", pod.Name, n)
		}
		last := i == len(pods)-1
		if last != (got.Status.Allocation == nil) {
			t.Errorf("after unreserving %s: allocation %v (last: %v)", pod.Name, got.Status.Allocation != nil, last)
		}
		if last && slices.Contains(got.Finalizers, resourceapi.Finalizer) {
			t.Errorf("finalizer left after deallocation")
		}
	}
}

// TestInFlightForgottenOnceWritten: once Bind wrote a claim and the
// informer caught up, the allocation in flight is forgotten, so that the
// claim's devices are free again when it is deallocated (its pod
// finished), even if no cycle ran while the informer showed it allocated.
func TestInFlightForgottenOnceWritten(t *testing.T) {
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, gpuClass(), slice("n1", 8), claim("a", "gpu", 8), claim("b", "gpu", 1))
	ctx := t.Context()
	state := framework.NewCycleState()
	pa := podWith("pa", "a")
	if node, st := e.place(state, pa); node != "n1" {
		t.Fatalf("pa: %q %v", node, st)
	}
	if st := e.pl.Bind(ctx, state, pa, "n1"); !st.IsSkip() {
		t.Fatalf("Bind = %v", st)
	}
	// The claim controller deallocates the claim once pa is done.
	claims := e.h.Client.ResourceV1().ResourceClaims(ns)
	cur, err := claims.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Status = resourceapi.ResourceClaimStatus{}
	if _, err := claims.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		c, err := e.pl.claims.ResourceClaims(ns).Get("a")
		return err == nil && c.Status.Allocation == nil && len(c.Finalizers) > 0, nil
	})
	if err != nil {
		t.Fatalf("the informer never showed the claim deallocated: %v", err)
	}
	if node, st := e.place(framework.NewCycleState(), podWith("pb", "b")); node != "n1" {
		t.Fatalf("after deallocation, pb = %q, %v; the written allocation still holds the devices", node, st)
	}
}
