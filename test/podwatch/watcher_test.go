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

package podwatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func watchedPod(name, uid, node, cpu, gang string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	if gang != "" {
		p.Annotations = map[string]string{framework.GroupNameAnnotation: gang, framework.MinAvailableAnnotation: "2"}
	}
	return p
}

func phase(p *v1.Pod, phase v1.PodPhase) *v1.Pod {
	p.Status.Phase = phase
	return p
}

// patience bounds the waits for the watcher to make progress (see the
// pods, open its watch). It is only a ceiling: the waits end as soon as the
// progress is there, and a loaded CI machine can hold a -race binary up
// for seconds.
const patience = 30 * time.Second

// testClock is a clock that moves only when the test says.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// onTestClock makes w read the time from a testClock and run its quorum
// checks on the ticks the test sends on the returned channel, which holds
// up to buffered of them like a time.Ticker's channel holds one. Call it
// before Start.
func onTestClock(w *Watcher, buffered int) (*testClock, chan time.Time) {
	clock := &testClock{t: time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)}
	ticks := make(chan time.Time, buffered)
	w.now = clock.Now
	w.newTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	return clock, ticks
}

// check sends a tick at now and returns once the watcher has finished the
// quorum checks of it and of every earlier tick. The channel holds
// cap(ticks) waiting ticks, so the last of cap+1 sends after that tick
// goes through only once the loop took one of them, that is after it had
// come back from the check of the tick.
func check(t *testing.T, ticks chan time.Time, now time.Time) {
	t.Helper()
	for range 1 + cap(ticks) + 1 {
		select {
		case ticks <- now:
		case <-time.After(patience):
			t.Fatal("the watcher stopped taking ticks")
		}
	}
}

// waitEvents waits until w has applied n pod states.
func waitEvents(ctx context.Context, t *testing.T, w *Watcher, n int) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, patience, true, func(context.Context) (bool, error) {
		return w.Stats().Events >= n, nil
	}); err != nil {
		t.Fatalf("the watcher applied %d of the %d pod states", w.Stats().Events, n)
	}
}

// The watcher reports each broken guarantee, and nothing for a sound
// sequence.
//
// The steps all happen at one instant of the watcher's clock, and the
// verdict is a quorum check made once that clock has moved past Settle:
// "bound together" means at the same moment for the watcher, as the gang
// cases intend. On the wall clock the steps were API calls of the fake
// clientset, each tens of milliseconds under -race and far more on a
// loaded machine, so a gang bound in two steps could really run below its
// quorum for longer than Settle, and restart_whole or gang_whole would
// then get a below-quorum they do not deserve.
func TestWatcherReportsViolations(t *testing.T) {
	tests := []struct {
		name string
		// steps are pod states applied in order (nil Spec.NodeName
		// change = update); deleted names are deleted.
		steps    []*v1.Pod
		external Capacity
		// evictions sets Watcher.Evictions.
		evictions bool
		want      string // violation kind, "" for none
	}{
		{name: "sound", steps: []*v1.Pod{watchedPod("a", "1", "", "1", ""), watchedPod("a", "1", "n1", "1", "")}},
		{name: "moved", steps: []*v1.Pod{watchedPod("a", "1", "n1", "1", ""), watchedPod("a", "1", "n2", "1", "")}, want: "double-bind"},
		{name: "overcommit", steps: []*v1.Pod{watchedPod("a", "1", "n1", "1500m", ""), watchedPod("b", "2", "n1", "1", "")}, want: "overcommit"},
		{name: "external", steps: []*v1.Pod{watchedPod("a", "1", "n1", "1500m", "")}, external: Capacity{MilliCPU: 1000}, want: "overcommit"},
		{name: "below quorum", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "", "100m", "g")}, want: "below-quorum"},
		{name: "gang whole", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g")}},
		// A member of a whole gang that fails is not a start below quorum.
		{name: "member ends", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g"),
			phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodFailed)}},
		// With Evictions, a member that fails while the other runs is a
		// gang evicted in part; both failing together is a whole one.
		{name: "partial eviction", evictions: true, steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g"),
			phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodFailed)}, want: "below-quorum"},
		{name: "whole eviction", evictions: true, steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g"),
			phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodFailed), phase(watchedPod("g-0", "1", "n1", "100m", "g"), v1.PodFailed)}},
		{name: "members succeed", evictions: true, steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g"),
			phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodSucceeded)}},
		// Its replacement bound while the others of the gang are gone is.
		{name: "restart below quorum", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g"),
			phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodFailed), phase(watchedPod("g-0", "1", "n1", "100m", "g"), v1.PodSucceeded),
			watchedPod("g-2", "3", "n2", "100m", "g")}, want: "below-quorum"},
		// Both replacements bound together are a whole gang again.
		{name: "restart whole", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g"),
			phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodFailed), phase(watchedPod("g-0", "1", "n1", "100m", "g"), v1.PodFailed),
			watchedPod("g-2", "3", "n2", "100m", "g"), watchedPod("g-3", "4", "n1", "100m", "g")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			ext := func(string, time.Time) Capacity { return tc.external }
			w := New(client, "ns", map[string]Capacity{"n1": {MilliCPU: 2000, Memory: 1 << 30, Pods: 10}, "n2": {MilliCPU: 2000, Memory: 1 << 30, Pods: 10}}, ext)
			w.Settle = 200 * time.Millisecond
			w.Evictions = tc.evictions
			clock, ticks := onTestClock(w, 0)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, patience, true, func(context.Context) (bool, error) { return w.Live(), nil }); err != nil {
				t.Fatal("the watcher never watched")
			}
			pods := client.CoreV1().Pods("ns")
			for _, p := range tc.steps {
				var err error
				if _, getErr := pods.Get(ctx, p.Name, metav1.GetOptions{}); getErr == nil {
					_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
				} else {
					_, err = pods.Create(ctx, p, metav1.CreateOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			// Judge once the watcher has applied every step and a quorum
			// check has run past Settle.
			waitEvents(ctx, t, w, len(tc.steps))
			clock.Advance(2 * w.Settle)
			check(t, ticks, clock.Now())
			got := w.Violations(nil)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("violations %v, want none", got)
			case tc.want != "" && (len(got) == 0 || got[0].Kind != tc.want):
				t.Errorf("violations %v, want one of kind %s", got, tc.want)
			}
		})
	}
}

// A pod the load created and the watcher never saw is reported.
func TestWatcherReportsUnseenPods(t *testing.T) {
	w := New(fake.NewClientset(), "ns", nil, nil)
	got := w.Violations([]types.UID{"never-seen"})
	if len(got) != 1 || got[0].Kind != "missed" || !strings.Contains(got[0].Message, "never-seen") {
		t.Errorf("Violations = %v, want one missed pod never-seen", got)
	}
}

// Gangs reports each gang's peak and time below quorum, with the gang
// rule the test gives.
func TestWatcherGangStats(t *testing.T) {
	client := fake.NewClientset()
	w := New(client, "ns", nil, nil)
	w.Settle = time.Hour
	w.GangOf = ControllerGang("Job", func(string) int { return 3 })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, patience, true, func(context.Context) (bool, error) { return w.Live(), nil }); err != nil {
		t.Fatal("the watcher never watched")
	}
	for i, node := range []string{"n1", "n2"} {
		p := watchedPod(fmt.Sprintf("j-%d", i), fmt.Sprint(i), node, "100m", "")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "j-uid", Controller: new(true)}}
		if _, err := client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var got GangStats
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, patience, true, func(context.Context) (bool, error) {
		got = w.Gangs()["j"]
		return got.Running == 2 && got.BelowQuorum > 0, nil
	})
	if err != nil || got.Quorum != 3 || got.Peak != 2 {
		t.Errorf("Gangs()[j] = %+v, want quorum 3, 2 running, peak 2, some time below quorum", got)
	}
}

// A quorum check applies the events the watch already delivered before it
// judges. Each round plays restart_whole up to the bind of the first
// replacement, then holds the watcher up (it waits on its lock while
// applying an unrelated pod) while the clock moves an hour, the bind that
// makes the gang whole arrives and a tick comes due: when the watcher
// resumes, both are waiting. A check that ran first would see the gang
// below its quorum for an hour; select picks at random, so the rounds
// catch that with near certainty.
func TestWatcherChecksAfterDeliveredEvents(t *testing.T) {
	for round := range 20 {
		w := New(fake.NewClientset(), "ns", nil, nil)
		w.Settle = 200 * time.Millisecond
		clock, ticks := onTestClock(w, 1)
		wi := watch.NewFakeWithChanSize(10, false)
		ctx, cancel := context.WithCancel(t.Context())
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			w.consume(ctx, wi, ticks)
		}()

		wi.Add(watchedPod("g-0", "1", "n1", "100m", "g"))
		wi.Add(watchedPod("g-1", "2", "n2", "100m", "g"))
		wi.Modify(phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodFailed))
		wi.Modify(phase(watchedPod("g-0", "1", "n1", "100m", "g"), v1.PodFailed))
		wi.Add(watchedPod("g-2", "3", "n2", "100m", "g"))
		waitEvents(ctx, t, w, 5) // g-2 alone: a window is open

		w.mu.Lock()
		wi.Add(watchedPod("other", "9", "", "100m", ""))
		// The watcher took the pod once the channel is empty, and then
		// waits for the lock.
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, patience, true, func(context.Context) (bool, error) {
			return len(wi.ResultChan()) == 0, nil
		}); err != nil {
			w.mu.Unlock()
			t.Fatal("the watcher never took the event")
		}
		wi.Add(watchedPod("g-3", "4", "n1", "100m", "g"))
		clock.Advance(time.Hour)
		ticks <- clock.Now()
		w.mu.Unlock()

		check(t, ticks, clock.Now())
		if got := w.Violations(nil); len(got) > 0 {
			t.Errorf("round %d: violations %v, want none", round, got)
		}
		if g := w.Gangs()["g"]; g.Running != 2 {
			t.Errorf("round %d: gang g runs %d pods, want 2", round, g.Running)
		}
		cancel()
		<-ended
	}
}

// On the wall clock and its own ticker, the watcher reports a gang left
// below its quorum once Settle has passed.
func TestWatcherReportsBelowQuorumInRealTime(t *testing.T) {
	client := fake.NewClientset()
	w := New(client, "ns", nil, nil)
	w.Settle = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, patience, true, func(context.Context) (bool, error) { return w.Live(), nil }); err != nil {
		t.Fatal("the watcher never watched")
	}
	for _, p := range []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "", "100m", "g")} {
		if _, err := client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var got []Violation
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, patience, true, func(context.Context) (bool, error) {
		got = w.Violations(nil)
		return len(got) > 0, nil
	})
	if len(got) == 0 || got[0].Kind != "below-quorum" {
		t.Errorf("violations %v, want one of kind below-quorum", got)
	}
}
