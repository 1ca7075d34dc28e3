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

package framework

import (
	"fmt"
	"math"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExpectedRuntimeAnnotation says how long a pod is expected to run once
// started: a Go duration ("90s", "1h30m") or a number of seconds. It is
// an estimate, not a limit: reservations use it to tell when a running
// pod frees its room, and backfill to tell whether a pod ends before a
// reservation needs its node. Put it on a Job's pod template.
const ExpectedRuntimeAnnotation = "batch-scheduler.io/expected-runtime"

// ExpectedRuntime returns how long pod is expected to run, from what its
// author wrote on the pod: ExpectedRuntimeAnnotation and
// spec.activeDeadlineSeconds (the kubelet ends the pod by then), the
// shorter of the two when both are set. ok is false when neither says,
// and err names what is wrong with an annotation that cannot be read
// (the annotation is then ignored; the deadline still counts). What the
// pod's owner says (RuntimeBound) is not read here: see EstimatedEnd.
func ExpectedRuntime(pod *v1.Pod) (d time.Duration, ok bool, err error) {
	return expectedRuntime(pod.Annotations, pod.Spec.ActiveDeadlineSeconds)
}

// expectedRuntime is ExpectedRuntime of a pod with annotations and
// spec.activeDeadlineSeconds activeDeadline.
func expectedRuntime(annotations map[string]string, activeDeadline *int64) (d time.Duration, ok bool, err error) {
	if v, set := annotations[ExpectedRuntimeAnnotation]; set {
		a, perr := parseRuntime(v)
		if perr != nil {
			err = fmt.Errorf("annotation %s=%q: %w", ExpectedRuntimeAnnotation, v, perr)
		} else {
			d, ok = a, true
		}
	}
	if s := activeDeadline; s != nil && *s > 0 && *s <= math.MaxInt64/int64(time.Second) {
		if limit := time.Duration(*s) * time.Second; !ok || limit < d {
			d, ok = limit, true
		}
	}
	return d, ok, err
}

// maxRuntime bounds an estimate: a week is longer than any estimate a
// reservation can act on, and keeps the sums away from overflow.
const maxRuntime = 7 * 24 * time.Hour

func parseRuntime(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		s, nerr := strconv.ParseInt(v, 10, 64)
		if nerr != nil {
			return 0, fmt.Errorf("not a duration (e.g. 90s, 1h30m) or a number of seconds")
		}
		if s > int64(maxRuntime/time.Second) {
			return 0, fmt.Errorf("more than %s", maxRuntime)
		}
		d = time.Duration(s) * time.Second
	}
	switch {
	case d <= 0:
		return 0, fmt.Errorf("not positive")
	case d > maxRuntime:
		return 0, fmt.Errorf("more than %s", maxRuntime)
	}
	return d, nil
}

// ExpectedEnd returns when the bound pod is expected to end by what it
// says itself: its start (status.startTime; now for a pod no kubelet
// reported started yet, which starts about now) plus its
// ExpectedRuntime. ok is false when the pod gives no estimate. Callers
// that know the pod's owner use EstimatedEnd (or TaskInfo.ExpectedEnd).
func ExpectedEnd(pod *v1.Pod, now time.Time) (time.Time, bool) {
	return expectedEnd(pod.Annotations, pod.Spec.ActiveDeadlineSeconds, pod.Status.StartTime, now)
}

// expectedEnd is ExpectedEnd of a pod with annotations,
// spec.activeDeadlineSeconds activeDeadline and status.startTime started.
func expectedEnd(annotations map[string]string, activeDeadline *int64, started *metav1.Time, now time.Time) (time.Time, bool) {
	d, ok, _ := expectedRuntime(annotations, activeDeadline)
	if !ok {
		return time.Time{}, false
	}
	return startOr(started, now).Add(d), true
}

// startOr is when a pod that started at started (status.startTime)
// started: now when no kubelet reported it started.
func startOr(started *metav1.Time, now time.Time) time.Time {
	if started != nil {
		return started.Time
	}
	return now
}

// EstimatedEnd returns when pod is expected to end: the earliest of what
// the pod says (ExpectedEnd) and what its owner says (owner, nil for
// none: RuntimeBound.End). ok is false when neither gives an estimate.
func EstimatedEnd(pod *v1.Pod, owner *RuntimeBound, now time.Time) (time.Time, bool) {
	return estimatedEnd(pod.Annotations, pod.Spec.ActiveDeadlineSeconds, pod.Status.StartTime, owner, now)
}

// estimatedEnd is EstimatedEnd of a pod with the fields expectedEnd
// reads.
func estimatedEnd(annotations map[string]string, activeDeadline *int64, started *metav1.Time, owner *RuntimeBound, now time.Time) (time.Time, bool) {
	end, ok := expectedEnd(annotations, activeDeadline, started, now)
	if oe, set := owner.end(started, now); set && (!ok || oe.Before(end)) {
		end, ok = oe, true
	}
	return end, ok
}

// EstimatedRuntime returns how long pod, started now, is expected to run
// (see EstimatedEnd): zero when its owner's deadline has passed already.
func EstimatedRuntime(pod *v1.Pod, owner *RuntimeBound, now time.Time) (time.Duration, bool) {
	end, ok := EstimatedEnd(pod, owner, now)
	if !ok {
		return 0, false
	}
	return max(end.Sub(now), 0), true
}

// ExpectedEnd returns when t's pod is expected to end: EstimatedEnd with
// the bound t.RuntimeBounds holds for the pod's owner.
func (t *TaskInfo) ExpectedEnd(now time.Time) (time.Time, bool) {
	r := t.rec
	if t.Pod != nil || r == nil {
		pod := t.PodObject()
		return EstimatedEnd(pod, t.RuntimeBounds.Of(pod), now)
	}
	// A bound pod's record holds all the estimate reads: no pod is made
	// of it (the scheduler asks this of every running pod of the
	// cluster's nodes when it ranks a parked job's standing).
	return estimatedEnd(r.annotations, r.rareOrZero().activeDeadlineSeconds, r.startTime, t.RuntimeBounds.of(r), now)
}
