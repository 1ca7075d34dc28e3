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

package perfsuite

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestSteadyStateReactsToEvents runs the steady-state op against a fake
// API server whose "scheduler" binds each new pod at once: every pod seen
// scheduled is deleted and replaced, so the pods created grow with the
// binds and never exceed the pods in flight, and the rate is not held to
// a poll's period (upstream's runner reacts to events too).
func TestSteadyStateReactsToEvents(t *testing.T) {
	const ns, inFlight = "test", 1
	client := fake.NewClientset()
	var mu sync.Mutex
	deletes := 0
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		deletes++
		mu.Unlock()
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tracker, err := newPodTracker(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	// Bind every pod created, as a scheduler would.
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type != watch.Added || pod.Spec.NodeName != "" {
				continue
			}
			bound := pod.DeepCopy()
			bound.Spec.NodeName = "node-1"
			if _, err := client.CoreV1().Pods(ns).Update(ctx, bound, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
				t.Errorf("binding %s: %v", pod.Name, err)
			}
		}
	}()
	e := &executor{client: client, tracker: tracker}
	create := func(i int) error {
		_, err := client.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: ns}}, metav1.CreateOptions{})
		return err
	}
	for i := range inFlight {
		if err := create(i); err != nil {
			t.Fatal(err)
		}
	}
	const d = 500 * time.Millisecond
	if err := e.steadyState(ctx, ns, inFlight, d, create); err != nil {
		t.Fatalf("steadyState: %v", err)
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pods.Items) > inFlight {
		t.Errorf("%d pods left, want at most the %d in flight: scheduled pods were not deleted", len(pods.Items), inFlight)
	}
	// Polling every 50 ms would delete at most inFlight pods per poll:
	// 10 polls in 500 ms, 10 pods with one in flight. Reacting to events
	// lets the fake's instant binds go much faster.
	t.Logf("%d pods deleted and replaced in %v", deletes, d)
	if deletes <= 10*inFlight {
		t.Errorf("%d pods deleted and replaced in %v, want more than %d (a poll's rate)", deletes, d, 10*inFlight)
	}
}
