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
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// reportUnschedulable sets PodScheduled=False/Unschedulable with msg on
// pod and records a FailedScheduling event. The status write happens in
// the background (conditionWriter) and is skipped when the pod already
// says the same.
//
// Both messages are bounded (framework.MaxEventNote,
// framework.MaxConditionMessage): they quote what users wrote.
func (s *Scheduler) reportUnschedulable(ctx context.Context, pod *v1.Pod, msg string) {
	if s.events.allow(pod.UID, msg) {
		s.opts.Recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", framework.TruncateMessage(msg, framework.MaxEventNote))
	}
	s.conditions.set(ctx, pod, v1.PodCondition{
		Type:    v1.PodScheduled,
		Status:  v1.ConditionFalse,
		Reason:  v1.PodReasonUnschedulable,
		Message: framework.TruncateMessage(msg, framework.MaxConditionMessage),
	})
}

// writtenTrust is how long the condition writer trusts what it wrote over
// the cache's copy of a pod: longer than the informer ever lags behind a
// write it made.
const writtenTrust = 30 * time.Second

// messageRewrite is the least time between two writes of a pod's
// condition that differ only in the numbers of the message ("0 of 8 tasks
// could be placed", then "1 of 8"; "0/500 nodes are available: 497
// Insufficient cpu", then "498"): a backlogged gang fails many cycles a
// second, and each would rewrite all its pods. The last message wanted is
// written when the interval ends. Any other change (of status, reason, or
// of the rule the message names) is written at once.
const messageRewrite = 5 * time.Second

// conditionWriter writes the PodScheduled condition of pending pods. One
// pod's writes never overlap and the latest wanted condition wins: two
// cycles of a job in quick succession (the gang's fourth pod arrives
// while the first three are being told that only three exist) must leave
// the second cycle's message, which concurrent writes could reorder.
//
// It also remembers, for writtenTrust, the condition it last wrote to
// each pod: the pod a cycle passes in comes from the informer's cache and
// may not show that write yet, so judging "already says the same" from it
// alone could skip a write the API still needs (A written and seen, B
// written but not yet seen, A wanted again).
type conditionWriter struct {
	s *Scheduler
	// now is time.Now; tests replace it.
	now func() time.Time
	// minRewrite is messageRewrite; tests change it.
	minRewrite time.Duration

	// mu guards pods and every podCondition in it. It is never held
	// during an API call.
	mu   sync.Mutex
	pods map[types.UID]*podCondition
	// sweepAt is the size of pods at which the next sweep of entries
	// that hold nothing runs.
	sweepAt int
}

// podCondition is the writer's state for one pod.
type podCondition struct {
	// writing is true while a goroutine writes this pod's condition;
	// want, when set, is the condition it writes next, to pod.
	writing bool
	want    *v1.PodCondition
	pod     *v1.Pod
	// written is the condition the API server last accepted from the
	// writer, at writtenAt; nil when unknown.
	written   *v1.PodCondition
	writtenAt time.Time
}

const minConditionSweep = 1024

func newConditionWriter(s *Scheduler) *conditionWriter {
	return &conditionWriter{s: s, now: time.Now, minRewrite: messageRewrite, pods: map[types.UID]*podCondition{}, sweepAt: minConditionSweep}
}

// set makes cond pod's PodScheduled condition, in the background.
func (w *conditionWriter) set(ctx context.Context, pod *v1.Pod, cond v1.PodCondition) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.pods[pod.UID]
	if e == nil {
		// Sweep before the new entry is in: the sweep drops idle entries,
		// and the write started below needs this one.
		w.maybeSweep()
		e = &podCondition{}
		w.pods[pod.UID] = e
	}
	if e.writing {
		// The running write is followed by this one.
		e.want, e.pod = &cond, pod
		return
	}
	current := podScheduledCondition(pod)
	if e.written != nil {
		if w.now().Sub(e.writtenAt) < writtenTrust {
			current = e.written
		} else {
			e.written = nil
		}
	}
	if conditionSays(current, cond) {
		if e.written == nil {
			delete(w.pods, pod.UID)
		}
		return
	}
	e.writing = true
	w.s.bindWG.Add(1)
	if wait := w.rewriteWait(e, cond); wait > 0 {
		// Written later, with whatever is wanted then.
		e.want, e.pod = &cond, pod
		go w.run(ctx, pod, current, cond, wait)
		return
	}
	go w.run(ctx, pod, current, cond, 0)
}

// rewriteWait is how long a write of cond must wait: until minRewrite
// after the writer's last write to the pod, when that said the same but
// for the numbers of the message. e.written is current (see set). w.mu
// is held.
func (w *conditionWriter) rewriteWait(e *podCondition, cond v1.PodCondition) time.Duration {
	if e.written == nil || e.written.Type != cond.Type || e.written.Status != cond.Status || e.written.Reason != cond.Reason ||
		!sameButNumbers(e.written.Message, cond.Message) {
		return 0
	}
	return w.minRewrite - w.now().Sub(e.writtenAt)
}

// sameButNumbers reports whether a and b are the same text once every run
// of digits in each is taken as one and the same symbol.
func sameButNumbers(a, b string) bool {
	next := func(s string, i int) (byte, int) {
		if s[i] < '0' || s[i] > '9' {
			return s[i], i + 1
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return '#', i
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		var x, y byte
		x, i = next(a, i)
		y, j = next(b, j)
		if x != y {
			return false
		}
	}
	return i == len(a) && j == len(b)
}

// forget drops what the writer still means to write to the pod of uid, a
// pod the scheduler has just placed: a waiting message would say it is
// unschedulable after its binding.
func (w *conditionWriter) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.pods[uid]; e != nil {
		e.want, e.pod = nil, nil
	}
}

// run writes cond to pod after wait, then whatever set asked for
// meanwhile. While it waits, what set asks for replaces cond (e.want).
func (w *conditionWriter) run(ctx context.Context, pod *v1.Pod, current *v1.PodCondition, cond v1.PodCondition, wait time.Duration) {
	defer w.s.bindWG.Done()
	uid := pod.UID
	for {
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
			case <-timer.C:
			}
			w.mu.Lock()
			e := w.pods[uid]
			if e.want == nil || ctx.Err() != nil {
				// Forgotten (the pod was placed), or shutting down.
				e.writing, e.want, e.pod = false, nil, nil
				if e.written == nil {
					delete(w.pods, uid)
				}
				w.mu.Unlock()
				return
			}
			cond, pod = *e.want, e.pod
			e.want, e.pod = nil, nil
			if e.written != nil {
				current = e.written
			}
			if conditionSays(current, cond) {
				e.writing = false
				if e.written == nil {
					delete(w.pods, uid)
				}
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			wait = 0
		}
		ticket := w.s.binds.acquire()
		written, err := w.s.patchCondition(ctx, pod, current, cond)
		w.s.binds.release(ticket, err)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Updating the scheduling condition of a pod", "pod", klog.KObj(pod))
		}

		w.mu.Lock()
		e := w.pods[pod.UID]
		if err == nil {
			e.written, e.writtenAt = written, w.now()
		} else {
			// What the API holds is unknown: the next write compares
			// with the cache again.
			e.written = nil
		}
		if e.want == nil || ctx.Err() != nil {
			e.writing, e.want, e.pod = false, nil, nil
			if e.written == nil {
				delete(w.pods, pod.UID)
			}
			w.mu.Unlock()
			return
		}
		next := *e.want
		pod, e.want, e.pod = e.pod, nil, nil
		current = e.written
		if current == nil {
			current = podScheduledCondition(pod)
		}
		if conditionSays(current, next) {
			e.writing = false
			if e.written == nil {
				delete(w.pods, pod.UID)
			}
			w.mu.Unlock()
			return
		}
		if wait = w.rewriteWait(e, next); wait > 0 {
			e.want, e.pod = &next, pod
		}
		cond = next
		w.mu.Unlock()
	}
}

// maybeSweep drops the entries that hold nothing but an expired written
// condition, once the map has doubled since the last sweep. w.mu is held.
func (w *conditionWriter) maybeSweep() {
	if len(w.pods) < w.sweepAt {
		return
	}
	now := w.now()
	for uid, e := range w.pods {
		if !e.writing && (e.written == nil || now.Sub(e.writtenAt) >= writtenTrust) {
			delete(w.pods, uid)
		}
	}
	w.sweepAt = max(minConditionSweep, 2*len(w.pods))
}

// tracked is how many pods the writer holds state for (tests).
func (w *conditionWriter) tracked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pods)
}

func podScheduledCondition(pod *v1.Pod) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// sameCondition compares what a reader sees: status, reason and message,
// not the times.
func sameCondition(a, b v1.PodCondition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

// conditionSays reports whether current, a pod's condition or nil, says
// what want says.
func conditionSays(current *v1.PodCondition, want v1.PodCondition) bool {
	return current != nil && sameCondition(*current, want)
}

// patchCondition writes cond into the pod's status with a strategic merge
// patch that names the whole condition (conditions merge by type), so
// concurrent writers of other fields are not overwritten and a stale copy
// of the pod cannot make the patch empty. current is the PodScheduled
// condition the API is believed to hold, or nil: a condition whose status
// does not change keeps its transition time. It returns the condition
// written.
func (s *Scheduler) patchCondition(ctx context.Context, pod *v1.Pod, current *v1.PodCondition, cond v1.PodCondition) (*v1.PodCondition, error) {
	cond.LastTransitionTime = metav1.Now()
	if current != nil && current.Status == cond.Status && !current.LastTransitionTime.IsZero() {
		// Only the reason or message changed: the condition did not
		// transition.
		cond.LastTransitionTime = current.LastTransitionTime
	}
	patch, err := json.Marshal(map[string]any{
		"status": map[string]any{"conditions": []v1.PodCondition{cond}},
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the status patch of pod %s: %w", podKey(pod), err)
	}
	_, err = s.opts.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, fmt.Errorf("patching the status of pod %s: %w", podKey(pod), err)
	}
	return &cond, nil
}

// cacheAttemptForBindError is the queue attempt for a job whose bind
// failed: an error, retried after backoff.
func cacheAttemptForBindError(err error) schedulingqueue.Attempt {
	return schedulingqueue.Attempt{Reason: "binding failed: " + err.Error(), Err: err}
}

// park reports why pods, pending pods of the job, were not placed and
// parks the job until an event its rejecting plugins care about. With
// standing, a job that waits for room (or holds a reservation) is also
// told where it stands (standingOf); one that waits for something else
// (its own pods, a rule it breaks) is not: no room would start it.
func (s *Scheduler) park(ctx context.Context, c *cycle, pods []*v1.Pod, jobMessage string, standing bool) {
	var pluginNames []string
	for p := range c.rejectedBy {
		pluginNames = append(pluginNames, p)
	}
	sort.Strings(pluginNames)
	events := c.fwk.EventsToRegisterFor(pluginNames...)
	forRoom := c.waitsForRoom(pluginNames)
	_, reserved := s.nominated.Reservation(c.job.ID)
	clause := ""
	if standing && (forRoom || reserved) {
		clause = s.standingOf(c)
	}
	summary := ""
	if c.job.ID.Gang {
		summary = jobMessage
	}
	for _, pod := range pods {
		msg := podMessage(c, pod, jobMessage)
		if summary == "" {
			summary = msg
		}
		msg = withSentence(msg, clause)
		s.reportUnschedulable(ctx, pod, msg)
	}
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Job is unschedulable", "pods", len(pods), "reason", summary, "rejectedBy", pluginNames)
	// A job whose pods preemption nominated waits for its victims to go:
	// its retries are not failures to back off from either.
	held := reserved || s.nominated.Has(c.job.ID)
	attempt := schedulingqueue.Attempt{Reason: summary, Events: events, AnyEvent: c.noNodes, ForRoom: forRoom,
		Reserved: held, Plugins: pluginNames, Profile: c.profile}
	if err := s.queue.AddUnschedulable(c.qj, attempt); err != nil {
		logger.Error(err, "Parking an unschedulable job")
	}
}
