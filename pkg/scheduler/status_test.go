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
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func unschedulableCond(msg string) v1.PodCondition {
	return v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: msg}
}

func TestConditionSays(t *testing.T) {
	want := unschedulableCond("0/1 nodes are available: 1 Insufficient cpu.")
	ready := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: want.Message}
	tests := []struct {
		name       string
		conditions []v1.PodCondition
		want       bool
	}{
		{"no conditions", nil, false},
		{"same", []v1.PodCondition{ready, want}, true},
		{"same, whatever the times", []v1.PodCondition{func() v1.PodCondition {
			c := want
			c.LastTransitionTime = metav1.Now()
			return c
		}()}, true},
		{"other message", []v1.PodCondition{unschedulableCond("0/2 nodes are available: 2 Insufficient cpu.")}, false},
		{"other status", []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}, false},
		{"other reason", []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "SchedulerError", Message: want.Message}}, false},
		{"only another type says it", []v1.PodCondition{ready}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := st.MakePod().Name("p").Obj()
			pod.Status.Conditions = tt.conditions
			if got := conditionSays(podScheduledCondition(pod), want); got != tt.want {
				t.Errorf("conditionSays = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPatchCondition(t *testing.T) {
	old := metav1.NewTime(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))
	ready := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: old}
	tests := []struct {
		name       string
		conditions []v1.PodCondition
		// keepsTime: the new condition keeps the old transition time.
		keepsTime bool
	}{
		{name: "added"},
		{name: "added next to others, which stay", conditions: []v1.PodCondition{ready}},
		{
			name:       "transition from True",
			conditions: []v1.PodCondition{ready, {Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: old}},
		},
		{
			name:       "new message, same status",
			conditions: []v1.PodCondition{func() v1.PodCondition { c := unschedulableCond("old"); c.LastTransitionTime = old; return c }(), ready},
			keepsTime:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			pod := st.MakePod().Name("p").Obj()
			pod.Status.Conditions = tt.conditions
			h.addPod(pod)
			start := metav1.Now().Rfc3339Copy()

			if _, err := h.sched.patchCondition(t.Context(), pod, podScheduledCondition(pod), unschedulableCond("new")); err != nil {
				t.Fatalf("patchCondition: %v", err)
			}

			got := h.apiPod(pod)
			var others int
			for _, c := range got.Status.Conditions {
				if c.Type == v1.PodReady {
					others++
					if c.Status != ready.Status || c.Reason != ready.Reason || !c.LastTransitionTime.Equal(&ready.LastTransitionTime) {
						t.Errorf("the Ready condition changed: %+v", c)
					}
				}
			}
			if wantOthers := countType(tt.conditions, v1.PodReady); others != wantOthers {
				t.Errorf("%d Ready conditions, want %d", others, wantOthers)
			}
			c := podScheduledCondition(got)
			if c == nil || c.Status != v1.ConditionFalse || c.Reason != v1.PodReasonUnschedulable || c.Message != "new" {
				t.Fatalf("PodScheduled = %+v, want False/Unschedulable \"new\"", c)
			}
			if n := countType(got.Status.Conditions, v1.PodScheduled); n != 1 {
				t.Errorf("%d PodScheduled conditions, want 1", n)
			}
			if tt.keepsTime {
				if !c.LastTransitionTime.Equal(&old) {
					t.Errorf("LastTransitionTime = %v, want it kept at %v", c.LastTransitionTime, old)
				}
			} else if c.LastTransitionTime.Before(&start) {
				t.Errorf("LastTransitionTime = %v, want now (after %v)", c.LastTransitionTime, start)
			}
		})
	}
}

func countType(conds []v1.PodCondition, t v1.PodConditionType) int {
	n := 0
	for _, c := range conds {
		if c.Type == t {
			n++
		}
	}
	return n
}

func TestPatchConditionOfDeletedPod(t *testing.T) {
	h := newHarness(t)
	pod := st.MakePod().Name("gone").Obj()
	_, err := h.sched.patchCondition(t.Context(), pod, nil, unschedulableCond("x"))
	if err == nil || !strings.Contains(err.Error(), "patching the status of pod default/gone") {
		t.Errorf("err = %v, want a patch error naming the pod", err)
	}
}

func TestPodMessage(t *testing.T) {
	gang := framework.JobID{Namespace: "ns", Name: "g", Gang: true}
	single := framework.JobID{Namespace: "ns", Name: "p"}
	invalid := errors.New("job ns/g: bad min-available")
	tests := []struct {
		name       string
		job        framework.JobID
		jobErr     error
		own        string
		jobMessage string
		want       string
	}{
		{name: "gang: both", job: gang, own: "0/3 nodes are available: 3 Insufficient cpu.", jobMessage: "gang ns/g: 3 of 4 tasks could be placed, min-available 4",
			want: "gang ns/g: 3 of 4 tasks could be placed, min-available 4; 0/3 nodes are available: 3 Insufficient cpu."},
		{name: "gang: own only", job: gang, own: "0/3 nodes are available: 3 Insufficient cpu.", want: "0/3 nodes are available: 3 Insufficient cpu."},
		{name: "gang: job only", job: gang, jobMessage: "waiting for tasks: 2 of min-available 3 exist", want: "waiting for tasks: 2 of min-available 3 exist"},
		{name: "gang: neither", job: gang, want: "no node could be chosen"},
		{name: "gang: validation error with a verdict", job: gang, jobErr: invalid, jobMessage: "waiting for tasks: 2 of min-available 3 exist",
			want: "waiting for tasks: 2 of min-available 3 exist (job ns/g: bad min-available)"},
		{name: "gang: validation error alone", job: gang, jobErr: invalid, want: "(job ns/g: bad min-available)"},
		{name: "gang: validation error and own", job: gang, jobErr: invalid, own: "no nodes available to schedule pods",
			want: "(job ns/g: bad min-available); no nodes available to schedule pods"},
		{name: "single pod: the job's verdict is left out", job: single, own: "0/1 nodes are available: 1 Insufficient cpu.", jobMessage: "job ns/pod:p: 0 of 1 tasks could be placed, min-available 1",
			want: "0/1 nodes are available: 1 Insufficient cpu."},
		{name: "single pod: job only", job: single, jobMessage: "not now", want: "not now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := st.MakePod().Namespace("ns").Name("p").Obj()
			c := &cycle{job: &framework.Job{ID: tt.job, Err: tt.jobErr}, failures: map[string]string{}}
			if tt.own != "" {
				c.failures["ns/p"] = tt.own
			}
			if got := podMessage(c, pod, tt.jobMessage); got != tt.want {
				t.Errorf("podMessage = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCacheAttemptForBindError(t *testing.T) {
	err := errors.New("boom")
	a := cacheAttemptForBindError(err)
	if a.Reason != "binding failed: boom" || !errors.Is(a.Err, err) || len(a.Events) != 0 {
		t.Errorf("attempt = %+v, want an error attempt for boom", a)
	}
}

// statusPatches records the messages of the PodScheduled conditions the
// scheduler patches, in order; the first patch waits for unblock when
// that is set.
type statusPatches struct {
	mu       sync.Mutex
	messages []string
	unblock  chan struct{}
	started  chan struct{}
}

func watchStatusPatches(h *harness, block bool) *statusPatches {
	p := &statusPatches{started: make(chan struct{}, 100)}
	if block {
		p.unblock = make(chan struct{})
	}
	h.client.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		patch := a.(clienttesting.PatchAction)
		if patch.GetSubresource() != "status" {
			return false, nil, nil
		}
		var body struct {
			Status v1.PodStatus `json:"status"`
		}
		if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
			return true, nil, err
		}
		p.mu.Lock()
		first := len(p.messages) == 0
		for _, c := range body.Status.Conditions {
			p.messages = append(p.messages, c.Message)
		}
		p.mu.Unlock()
		p.started <- struct{}{}
		if first && p.unblock != nil {
			<-p.unblock
		}
		return false, nil, nil
	})
	return p
}

func (p *statusPatches) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.messages...)
}

// withCondition returns a copy of pod whose PodScheduled condition says
// msg: the pod as the informer's cache may hold it.
func withCondition(pod *v1.Pod, msg string) *v1.Pod {
	pod = pod.DeepCopy()
	pod.Status.Conditions = []v1.PodCondition{unschedulableCond(msg)}
	return pod
}

// Conditions wanted while a write of the same pod is in flight follow it
// in order, and only the latest of them is written: the API ends with
// the last word, however the writes were scheduled.
func TestConditionWriterLastWordWins(t *testing.T) {
	h := newHarness(t)
	patches := watchStatusPatches(h, true)
	pod := st.MakePod().Name("p").UID("p").Obj()
	h.addPod(pod)

	h.sched.conditions.set(t.Context(), pod, unschedulableCond("waiting for tasks: 3 of min-available 4 exist"))
	<-patches.started
	h.sched.conditions.set(t.Context(), pod, unschedulableCond("superseded"))
	h.sched.conditions.set(t.Context(), pod, unschedulableCond("3 of 4 tasks could be placed"))
	close(patches.unblock)
	h.sched.bindWG.Wait()

	want := []string{"waiting for tasks: 3 of min-available 4 exist", "3 of 4 tasks could be placed"}
	if got := patches.seen(); !slices.Equal(got, want) {
		t.Errorf("patched messages %q, want %q", got, want)
	}
	if c := podScheduledCondition(h.apiPod(pod)); c == nil || c.Message != want[1] {
		t.Errorf("the API holds %+v, want the last message %q", c, want[1])
	}
}

// The pod a cycle passes in may not show the writer's last write yet: a
// message it shows is written again when the writer wrote another since,
// and not when the writer's last write already says it.
func TestConditionWriterDoesNotTrustAStaleCache(t *testing.T) {
	h := newHarness(t)
	patches := watchStatusPatches(h, false)
	pod := st.MakePod().Name("p").UID("p").Obj()
	h.addPod(pod)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h.sched.conditions.now = func() time.Time { return now }
	set := func(cached *v1.Pod, msg string) {
		h.sched.conditions.set(t.Context(), cached, unschedulableCond(msg))
		h.sched.bindWG.Wait()
	}

	set(pod, "A")
	set(withCondition(pod, "A"), "B")
	// The cache still shows A; the API holds B.
	set(withCondition(pod, "A"), "A")
	if c := podScheduledCondition(h.apiPod(pod)); c == nil || c.Message != "A" {
		t.Fatalf("the API holds %+v, want A", c)
	}
	// The cache still shows B; the writer wrote A last.
	set(withCondition(pod, "B"), "A")
	if got, want := patches.seen(), []string{"A", "B", "A"}; !slices.Equal(got, want) {
		t.Fatalf("patched messages %q, want %q", got, want)
	}

	// Long after its write, the writer trusts the cache again and forgets
	// the pod.
	now = now.Add(writtenTrust)
	set(withCondition(pod, "A"), "A")
	if got := patches.seen(); len(got) != 3 {
		t.Errorf("patched messages %q after a write the cache already shows, want no new one", got)
	}
	if n := h.sched.conditions.tracked(); n != 0 {
		t.Errorf("the writer tracks %d pods, want 0", n)
	}
}

// A failed write leaves nothing behind that would skip the next one.
func TestConditionWriterForgetsAFailedWrite(t *testing.T) {
	h := newHarness(t)
	pod := st.MakePod().Name("gone").UID("gone").Obj()
	h.sched.conditions.set(t.Context(), pod, unschedulableCond("A"))
	h.sched.bindWG.Wait()
	if n := h.sched.conditions.tracked(); n != 0 {
		t.Errorf("the writer tracks %d pods after a failed write, want 0", n)
	}
	h.addPod(pod)
	patches := watchStatusPatches(h, false)
	h.sched.conditions.set(t.Context(), pod, unschedulableCond("A"))
	h.sched.bindWG.Wait()
	if got := patches.seen(); !slices.Equal(got, []string{"A"}) {
		t.Errorf("patched messages %q, want A written again", got)
	}
}

// The writer sweeps its idle entries once it holds many; a sweep started
// by a new pod's write must not drop that pod's own entry, which the write
// it starts needs (it once did, and the write crashed the scheduler).
func TestConditionWriterSweepKeepsTheNewEntry(t *testing.T) {
	h := newHarness(t)
	patches := watchStatusPatches(h, false)
	h.sched.conditions.sweepAt = 1
	for i := range 3 {
		pod := st.MakePod().Name(fmt.Sprintf("p%d", i)).UID(fmt.Sprintf("p%d", i)).Obj()
		h.addPod(pod)
		h.sched.conditions.set(t.Context(), pod, unschedulableCond("A"))
		h.sched.bindWG.Wait()
	}
	if got := patches.seen(); len(got) != 3 {
		t.Errorf("patched messages %q, want one per pod", got)
	}
}
