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
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// ExpectedRuntimeAnnotation says how long a pod is expected to run once
// started: a Go duration ("90s", "1h30m") or a number of seconds. It is
// an estimate, not a limit: reservations use it to tell when a running
// pod frees its room, and backfill to tell whether a pod ends before a
// reservation needs its node. Put it on a Job's pod template.
const ExpectedRuntimeAnnotation = "batch-scheduler.io/expected-runtime"

// ExpectedRuntime returns how long pod is expected to run, from what its
// author wrote: ExpectedRuntimeAnnotation, else spec.activeDeadlineSeconds
// (the kubelet ends the pod by then). ok is false when neither says, and
// err names what is wrong with an annotation that cannot be read (the pod
// then has no estimate).
func ExpectedRuntime(pod *v1.Pod) (d time.Duration, ok bool, err error) {
	if v, set := pod.Annotations[ExpectedRuntimeAnnotation]; set {
		d, err := parseRuntime(v)
		if err != nil {
			return 0, false, fmt.Errorf("annotation %s=%q: %w", ExpectedRuntimeAnnotation, v, err)
		}
		return d, true, nil
	}
	if s := pod.Spec.ActiveDeadlineSeconds; s != nil && *s > 0 {
		return time.Duration(*s) * time.Second, true, nil
	}
	return 0, false, nil
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

// ExpectedEnd returns when the bound pod is expected to end: its start
// (status.startTime; now for a pod no kubelet reported started yet, which
// starts about now) plus its ExpectedRuntime. ok is false when the pod
// gives no estimate.
func ExpectedEnd(pod *v1.Pod, now time.Time) (time.Time, bool) {
	d, ok, _ := ExpectedRuntime(pod)
	if !ok {
		return time.Time{}, false
	}
	start := now
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	return start.Add(d), true
}
