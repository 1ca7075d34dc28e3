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

package dialects

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The runtime bounds of owners: what an owner object says about when its
// pods end (framework.RuntimeBound), read from what its users already
// write. Only the batch/v1 Job has any: spec.activeDeadlineSeconds, and
// Kueue's maximum execution time (framework.KueueMaxExecTimeLabel).
// Volcano's Job, KAI-Scheduler, YuniKorn and scheduler-plugins have no
// field or annotation that bounds a job's runtime (their timeouts bound
// scheduling, or garbage collection after the end).

// jobRuntimeFields are the Job fields JobRuntimeBound reads, kept by the
// Job informer's slimmer beside jobFields.
var jobRuntimeFields = [][]string{
	{"spec", "activeDeadlineSeconds"}, {"status", "startTime"},
	{"metadata", "labels", framework.KueueMaxExecTimeLabel},
}

// maxBound is the longest limit a bound keeps: one beyond it says nothing
// an estimate can act on (framework's estimates stop at a week too), and
// is dropped, which keeps the sums away from overflow.
const maxBound = 7 * 24 * time.Hour

// JobRuntimeBound reads the runtime bound of a batch/v1 Job: its pods end
// by status.startTime plus the shorter of spec.activeDeadlineSeconds and
// the KueueMaxExecTimeLabel label. nil when the Job sets neither (or only
// values longer than a week). It never panics: a value that cannot be
// read is ignored and named in the bound's Err, one error joined
// (errors.Join) per value (a bound with only an Err is returned, so that
// its pods are told).
func JobRuntimeBound(u *unstructured.Unstructured) *framework.RuntimeBound {
	if u == nil {
		return nil
	}
	b := &framework.RuntimeBound{Source: "Job " + u.GetNamespace() + "/" + u.GetName(), UID: u.GetUID()}
	var problems []error
	note := func(what string, err error) {
		problems = append(problems, fmt.Errorf("%s of %s: %w", what, b.Source, err))
	}
	if d, err := jobDeadline(u.Object); err != nil {
		note("spec.activeDeadlineSeconds", err)
	} else if d > 0 {
		b.Limit = d
	}
	if v, set := u.GetLabels()[framework.KueueMaxExecTimeLabel]; set {
		if d, err := kueueMaxExecTime(v); err != nil {
			note(fmt.Sprintf("label %s=%q", framework.KueueMaxExecTimeLabel, v), err)
		} else if d > 0 && (b.Limit == 0 || d < b.Limit) {
			b.Limit = d
		}
	}
	if s, err := StringField(u.Object, "", "status", "startTime"); err != nil {
		note("status.startTime", err)
	} else if s != "" {
		start, perr := time.Parse(time.RFC3339, s)
		if perr != nil {
			note(fmt.Sprintf("status.startTime %q", s), errors.New("not a time"))
		} else {
			b.Start = start
		}
	}
	b.Err = errors.Join(problems...)
	if b.Limit == 0 && b.Err == nil {
		return nil
	}
	return b
}

// jobDeadline reads spec.activeDeadlineSeconds: 0 when absent or beyond
// maxBound.
func jobDeadline(obj map[string]any) (time.Duration, error) {
	v, found, err := Lookup(obj, "spec", "activeDeadlineSeconds")
	if err != nil || !found {
		return 0, err
	}
	var s int64
	switch x := v.(type) {
	case int64:
		s = x
	case int32:
		s = int64(x)
	case int:
		s = int64(x)
	case float64:
		if x != float64(int64(x)) {
			return 0, fmt.Errorf("%v is not a whole number of seconds", x)
		}
		if x > float64(maxBound/time.Second) {
			return 0, nil
		}
		s = int64(x)
	default:
		return 0, fmt.Errorf("%s is not an integer", TypeName(v))
	}
	switch {
	case s <= 0:
		return 0, fmt.Errorf("%d is not positive", s)
	case s > int64(maxBound/time.Second):
		return 0, nil
	}
	return time.Duration(s) * time.Second, nil
}

// kueueMaxExecTime reads a KueueMaxExecTimeLabel value as Kueue does: a
// positive whole number of seconds that fits an int32. 0: beyond
// maxBound.
func kueueMaxExecTime(v string) (time.Duration, error) {
	s, err := strconv.ParseInt(v, 10, 32)
	if err != nil || s <= 0 {
		return 0, errors.New("not a positive whole number of seconds")
	}
	if s > int64(maxBound/time.Second) {
		return 0, nil
	}
	return time.Duration(s) * time.Second, nil
}
