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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// KueueMaxExecTimeLabel is Kueue's maximum execution time: a whole
// number of seconds, on a Job, after which Kueue deactivates the Job's
// workload (its pods are stopped). Kueue counts the time the workload
// was admitted, over all its admissions; the Job starts (status.startTime)
// no earlier than its admission, so its pods end by startTime plus the
// label's value at the latest. Kueue ignores a value that is not a
// positive number; so does the scheduler (and says so on the pods). The
// scheduler reads it, with spec.activeDeadlineSeconds, as a RuntimeBound.
const KueueMaxExecTimeLabel = "kueue.x-k8s.io/max-exec-time-seconds"

// RuntimeBound is what the owner of pods, a batch/v1 Job, says about when
// they end: by Start plus Limit. The Job's spec.activeDeadlineSeconds
// fails it that long after its status.startTime, and Kueue's
// KueueMaxExecTimeLabel deactivates it no later; Limit is the shorter of
// the two. A bound is read from the Job (pkg/dialects) and never changed.
type RuntimeBound struct {
	// Source names the owner for messages, e.g. "Job ns/train".
	Source string
	// UID is the owner's: only pods whose controller reference names it
	// are bounded. Empty: any pod controlled by an owner of the name.
	UID types.UID
	// Start is when the owner started (a Job's status.startTime); zero
	// when it has not started yet, or says not: its pods then end by their
	// own start (now for a pending pod) plus Limit.
	Start time.Time
	// Limit, when > 0, bounds how long after Start the owner's pods run.
	Limit time.Duration
	// Err, when set, names the values of the owner the scheduler could
	// not read (e.g. an unreadable KueueMaxExecTimeLabel), which are
	// ignored, one error each (joined with errors.Join when several);
	// Limit has what could be read.
	Err error
}

// End returns when b says pod, one of its owner's, ends at the latest
// (see RuntimeBound); false for a nil b or one without a Limit.
func (b *RuntimeBound) End(pod *v1.Pod, now time.Time) (time.Time, bool) {
	return b.end(pod.Status.StartTime, now)
}

// end is End for a pod that started at started (nil: not yet).
func (b *RuntimeBound) end(started *metav1.Time, now time.Time) (time.Time, bool) {
	if b == nil || b.Limit <= 0 {
		return time.Time{}, false
	}
	start := b.Start
	if start.IsZero() {
		start = startOr(started, now)
	}
	return start.Add(b.Limit), true
}

// RuntimeBounds holds the RuntimeBounds of the batch Jobs the scheduler
// watches, by namespace and name: the cache keeps one, fed by its event
// handler, and hands it out with its tasks (TaskInfo.RuntimeBounds) and
// cycle jobs (Job.RuntimeBounds), so that an estimate reads its pod's
// owner without a call to the API server. It is safe for concurrent use;
// the zero value is empty and a nil one holds nothing.
type RuntimeBounds struct {
	m sync.Map // types.NamespacedName -> *RuntimeBound
	// n counts the bounds in m, so that a cluster whose Jobs bound
	// nothing pays one atomic load per estimate.
	n atomic.Int64
}

// Set records b as the bound of the Job named name in namespace; nil
// forgets it (the Job is gone, or its kind is no longer watched). It
// reports whether the estimates of the Job's pods may change: the
// bound's owner, start or limit differ from the one it replaces.
func (r *RuntimeBounds) Set(namespace, name string, b *RuntimeBound) (changed bool) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	var old any
	var had bool
	if b == nil {
		if old, had = r.m.LoadAndDelete(key); had {
			r.n.Add(-1)
		}
	} else if old, had = r.m.Swap(key, b); !had {
		r.n.Add(1)
	}
	var prev *RuntimeBound
	if had {
		prev = old.(*RuntimeBound)
	}
	return !sameEstimates(prev, b)
}

// sameEstimates reports whether a and b (nil: none) give the pods of
// their owner the same estimates.
func sameEstimates(a, b *RuntimeBound) bool {
	limit := func(x *RuntimeBound) time.Duration {
		if x == nil {
			return 0
		}
		return x.Limit
	}
	if limit(a) == 0 || limit(b) == 0 {
		return limit(a) == limit(b)
	}
	return a.Limit == b.Limit && a.Start.Equal(b.Start) && a.UID == b.UID
}

// Of returns the bound of pod's controller, a batch Job, nil when the
// pod has no such controller or r holds no bound for it.
func (r *RuntimeBounds) Of(pod *v1.Pod) *RuntimeBound {
	if pod == nil {
		return nil
	}
	return r.of(pod)
}

// of is Of for any pod's metadata (a bound pod's PodRecord).
func (r *RuntimeBounds) of(pod metav1.Object) *RuntimeBound {
	if r == nil || r.n.Load() == 0 {
		return nil
	}
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil || owner.Kind != "Job" || !strings.HasPrefix(owner.APIVersion, "batch/") {
		return nil
	}
	v, ok := r.m.Load(types.NamespacedName{Namespace: pod.GetNamespace(), Name: owner.Name})
	if !ok {
		return nil
	}
	b := v.(*RuntimeBound)
	if b.UID != "" && owner.UID != "" && b.UID != owner.UID {
		// A Job of the same name, deleted and created again: not this
		// pod's.
		return nil
	}
	return b
}
