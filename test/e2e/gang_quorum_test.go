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

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// quorumWatcher sees every transition of the pods of a namespace and
// records each gang that runs below its quorum: some of its pods bound but
// fewer than its min-available. The binds of one gang are separate API
// calls, so a gang passes through such states on its way up; settle is how
// long it may stay in one before that counts. A gang whose quorum is not
// usable, and any gang listed in never, must never have a pod bound at all.
type quorumWatcher struct {
	settle time.Duration
	never  map[string]bool

	mu sync.Mutex
	// pods maps gang -> pod name -> bound.
	pods map[string]map[string]bool
	// quorum maps gang -> its min-available, 0 when unusable.
	quorum map[string]int
	// below maps gang -> since when it is partially bound.
	below      map[string]time.Time
	violations []string
	maxBound   map[string]int
}

func watchQuorums(t *testing.T, ns string, settle time.Duration, never ...string) *quorumWatcher {
	t.Helper()
	w := &quorumWatcher{settle: settle, never: map[string]bool{}, pods: map[string]map[string]bool{},
		quorum: map[string]int{}, below: map[string]time.Time{}, maxBound: map[string]int{}}
	for _, g := range never {
		w.never[g] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := cp.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatalf("watching pods of %s: %v", ns, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(settle / 4)
		defer ticker.Stop()
		for {
			select {
			case ev, ok := <-watcher.ResultChan():
				if !ok {
					return
				}
				if pod, isPod := ev.Object.(*v1.Pod); isPod {
					w.observe(pod, ev.Type == watch.Deleted)
				}
			case <-ticker.C:
				w.check(time.Now())
			}
		}
	}()
	t.Cleanup(func() {
		watcher.Stop()
		cancel()
		<-done
	})
	return w
}

func (w *quorumWatcher) observe(pod *v1.Pod, deleted bool) {
	gang := pod.Annotations[framework.GroupNameAnnotation]
	if gang == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods[gang] == nil {
		w.pods[gang] = map[string]bool{}
	}
	if deleted {
		delete(w.pods[gang], pod.Name)
	} else {
		w.pods[gang][pod.Name] = pod.Spec.NodeName != ""
	}
	q, err := strconv.Atoi(pod.Annotations[framework.MinAvailableAnnotation])
	if err != nil || q < 1 {
		q = 0
	}
	w.quorum[gang] = q
	bound := 0
	for _, b := range w.pods[gang] {
		if b {
			bound++
		}
	}
	w.maxBound[gang] = max(w.maxBound[gang], bound)
	switch {
	case bound > 0 && (q == 0 || w.never[gang]):
		w.violations = append(w.violations, fmt.Sprintf("gang %s, which must not start, has %d pods bound", gang, bound))
	case bound > 0 && bound < q:
		if _, ok := w.below[gang]; !ok {
			w.below[gang] = time.Now()
		}
	default:
		delete(w.below, gang)
	}
}

func (w *quorumWatcher) check(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for gang, since := range w.below {
		if now.Sub(since) > w.settle {
			w.violations = append(w.violations, fmt.Sprintf("gang %s ran below its quorum %d for over %v", gang, w.quorum[gang], w.settle))
			delete(w.below, gang)
		}
	}
}

// result returns the violations seen, checking the gangs still below
// their quorum now, and the most pods each gang ever had bound at once.
func (w *quorumWatcher) result() ([]string, map[string]int) {
	w.check(time.Now().Add(w.settle + time.Nanosecond))
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.violations...), w.maxBound
}

// A gang never starts below its quorum, also when its pods are created one
// at a time, each placed (as far as it goes) before the next exists. A gang
// that declares no quorum, or an invalid one, never starts at all: its pods
// say what to declare, in their condition and in a Warning event.
func TestGangNeverStartsBelowItsQuorum(t *testing.T) {
	ns := createNamespace(t)
	// Room for two 1-cpu pods.
	mustNode(t, poolNode(t, "quorum-n1", res{"cpu": "2", "memory": "4Gi", "pods": "10"}).Obj())
	w := watchQuorums(t, ns, 5*time.Second, "three-on-two")
	startPoolScheduler(t)

	create := func(gang, minAvailable string, n int) {
		for i := range n {
			p := st.MakePod().Namespace(ns).Name(fmt.Sprintf("%s-%d", gang, i)).Group(gang).Req(res{"cpu": "1"})
			if minAvailable != "" {
				p = p.MinAvailable(minAvailable)
			}
			mustPod(t, p.Obj())
			// Give the scheduler a full cycle on what exists so far.
			time.Sleep(700 * time.Millisecond)
		}
	}

	// Nobody can know the size of a group that nobody declared.
	create("undeclared", "", 3)
	for i := range 3 {
		waitUnschedulable(t, ns, fmt.Sprintf("undeclared-%d", i), "declares no quorum", "scheduling.k8s.io/min-available")
	}
	waitEvent(t, ns, "undeclared-0", "FailedScheduling", "declares no quorum")
	// An invalid quorum is no quorum either.
	create("invalid", "two", 2)
	waitUnschedulable(t, ns, "invalid-1", `min-available="two" must be an integer >= 1`)
	// A declared quorum of 3 where only 2 fit: nothing starts, whatever
	// order the pods come in, and the pods say it never can.
	create("three-on-two", "3", 3)
	waitUnschedulable(t, ns, "three-on-two-2", "can never start: its quorum (min-available 3) needs cpu 3 but this scheduler could use cpu 2")

	// The control: a gang of 2 created one at a time starts, whole.
	create("two", "2", 2)
	waitForPods(t, ns, "gang two bound", func(n map[string]string) bool { return n["two-0"] != "" && n["two-1"] != "" })

	// Declaring the quorum on the waiting gang's pods, one at a time, makes
	// it schedulable once they agree and there is room.
	zero := int64(0)
	for _, name := range []string{"two-0", "two-1"} {
		if err := cp.Client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		patch := []byte(`{"metadata":{"annotations":{"` + framework.MinAvailableAnnotation + `":"2"}}}`)
		if _, err := cp.Client.CoreV1().Pods(ns).Patch(t.Context(), fmt.Sprintf("undeclared-%d", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
	}
	got := waitForPods(t, ns, "two of the undeclared gang bound", func(n map[string]string) bool {
		bound := 0
		for i := range 3 {
			if n[fmt.Sprintf("undeclared-%d", i)] != "" {
				bound++
			}
		}
		return bound == 2
	})

	violations, maxBound := w.result()
	for _, v := range violations {
		t.Error(v)
	}
	if maxBound["two"] != 2 {
		t.Errorf("gang two had at most %d pods bound, want 2 (the watcher must see binds)", maxBound["two"])
	}
	if maxBound["undeclared"] != 2 {
		t.Errorf("the undeclared gang had at most %d pods bound, want 2 once it declared a quorum of 2", maxBound["undeclared"])
	}
	for name, node := range got {
		if node != "" && !strings.HasPrefix(name, "undeclared-") {
			t.Errorf("%s is bound to %s", name, node)
		}
	}
}
