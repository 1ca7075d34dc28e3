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
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// ReasonIgnoredAnnotation is the reason of the Warning event that says
// which gang annotations or labels of a pod the scheduler ignores (see
// dialects.IgnoredGroupSignals).
const ReasonIgnoredAnnotation = "IgnoredAnnotation"

// maxIgnoredReports bounds the pods whose last report is remembered; a
// pod forgotten by the bound may be reported once more.
const maxIgnoredReports = 1 << 16

// ignoredReports remembers, per pod UID, the last report of ignored
// annotations made, so that a pod is told once per change of its
// annotations, not once per scheduling attempt.
type ignoredReports struct {
	last *lru.Cache
}

func newIgnoredReports() *ignoredReports {
	return &ignoredReports{last: lru.New(maxIgnoredReports)}
}

// joinedErrors is an error of errors.Join: a RuntimeBound's Err names
// each value it ignored in one of them.
type joinedErrors interface{ Unwrap() []error }

// reportIgnoredSignals records an IgnoredAnnotation event on each pod
// that carries gang annotations or labels the scheduler ignores, or an
// expected runtime it cannot read, its own or its Job's (bounds: see
// framework.RuntimeBound), unless the same report was already made for
// that pod.
func (s *Scheduler) reportIgnoredSignals(ctx context.Context, pods []*v1.Pod, bounds *framework.RuntimeBounds) {
	for _, pod := range pods {
		problems := dialects.IgnoredGroupSignals(pod)
		if _, _, err := framework.ExpectedRuntime(pod); err != nil {
			// Without a readable estimate the pod neither backfills nor
			// gives reservations a start time.
			problems = append(problems, err.Error()+" is ignored")
		}
		if b := bounds.Of(pod); b != nil && b.Err != nil {
			// The values of the pod's Job that cannot be read, each
			// ignored.
			errs := []error{b.Err}
			if joined, ok := b.Err.(joinedErrors); ok {
				errs = joined.Unwrap()
			}
			for _, err := range errs {
				problems = append(problems, err.Error()+" is ignored")
			}
		}
		if len(problems) == 0 {
			continue
		}
		msg := strings.Join(problems, "; ")
		if last, ok := s.ignored.last.Get(pod.UID); ok && last == msg {
			continue
		}
		s.ignored.last.Add(pod.UID, msg)
		klog.FromContext(ctx).V(2).Info("Pod has gang annotations that are ignored", "pod", klog.KObj(pod), "problems", msg)
		s.opts.Recorder.Eventf(pod, nil, v1.EventTypeWarning, ReasonIgnoredAnnotation, "Scheduling", "%s",
			framework.TruncateMessage(msg, framework.MaxEventNote))
	}
}
