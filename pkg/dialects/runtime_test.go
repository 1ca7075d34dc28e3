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
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// jobObject is a batch/v1 Job ns/train with spec, status and labels, as
// the informer delivers it before and after the slimmer.
func jobObject(spec, status map[string]any, labels map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": "train", "namespace": "ns", "uid": "job-uid", "resourceVersion": "1"}
	if labels != nil {
		meta["labels"] = labels
	}
	o := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": meta}
	if spec != nil {
		o["spec"] = spec
	}
	if status != nil {
		o["status"] = status
	}
	return &unstructured.Unstructured{Object: o}
}

func TestJobRuntimeBound(t *testing.T) {
	start := "2026-01-01T12:00:00Z"
	startTime := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	kueue := func(v string) map[string]any { return map[string]any{framework.KueueMaxExecTimeLabel: v} }
	started := map[string]any{"startTime": start}
	tests := []struct {
		name      string
		spec      map[string]any
		status    map[string]any
		labels    map[string]any
		wantNil   bool
		wantStart time.Time
		wantLimit time.Duration
		wantErr   string
	}{
		{name: "says nothing", spec: map[string]any{"parallelism": int64(2)}, wantNil: true},
		{name: "deadline, not started", spec: map[string]any{"activeDeadlineSeconds": int64(300)}, wantLimit: 5 * time.Minute},
		{name: "deadline, started", spec: map[string]any{"activeDeadlineSeconds": int64(300)}, status: started,
			wantStart: startTime, wantLimit: 5 * time.Minute},
		{name: "deadline as a JSON number", spec: map[string]any{"activeDeadlineSeconds": float64(300)}, wantLimit: 5 * time.Minute},
		{name: "Kueue label", labels: kueue("120"), status: started, wantStart: startTime, wantLimit: 2 * time.Minute},
		{name: "the label is tighter", spec: map[string]any{"activeDeadlineSeconds": int64(300)}, labels: kueue("120"),
			wantLimit: 2 * time.Minute},
		{name: "the deadline is tighter", spec: map[string]any{"activeDeadlineSeconds": int64(60)}, labels: kueue("120"),
			wantLimit: time.Minute},
		{name: "garbage label, deadline counts", spec: map[string]any{"activeDeadlineSeconds": int64(60)}, labels: kueue("1h"),
			wantLimit: time.Minute, wantErr: `label kueue.x-k8s.io/max-exec-time-seconds="1h" of Job ns/train: not a positive whole number of seconds`},
		{name: "garbage label alone", labels: kueue("soon"), wantErr: "not a positive whole number of seconds"},
		{name: "zero label", labels: kueue("0"), wantErr: "not a positive whole number of seconds"},
		{name: "negative label", labels: kueue("-5"), wantErr: "not a positive whole number of seconds"},
		{name: "label beyond int32", labels: kueue("9999999999"), wantErr: "not a positive whole number of seconds"},
		{name: "label beyond a week says nothing", labels: kueue("1000000"), wantNil: true},
		{name: "deadline beyond a week says nothing", spec: map[string]any{"activeDeadlineSeconds": int64(1) << 40}, wantNil: true},
		{name: "deadline of the wrong type", spec: map[string]any{"activeDeadlineSeconds": "300"},
			wantErr: "spec.activeDeadlineSeconds of Job ns/train: a string is not an integer"},
		{name: "fractional deadline", spec: map[string]any{"activeDeadlineSeconds": 1.5}, wantErr: "not a whole number"},
		{name: "negative deadline", spec: map[string]any{"activeDeadlineSeconds": int64(-1)}, wantErr: "not positive"},
		{name: "started, no limit", status: started, wantNil: true},
		{name: "bad start", spec: map[string]any{"activeDeadlineSeconds": int64(60)}, status: map[string]any{"startTime": "yesterday"},
			wantLimit: time.Minute, wantErr: `status.startTime "yesterday" of Job ns/train: not a time`},
		{name: "start of the wrong type", spec: map[string]any{"activeDeadlineSeconds": int64(60)}, status: map[string]any{"startTime": int64(5)},
			wantLimit: time.Minute, wantErr: "not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := jobObject(tt.spec, tt.status, tt.labels)
			// What the Job informer keeps is enough.
			slim, err := Slimmer(slices.Concat(jobFields, jobRuntimeFields)...)(job)
			if err != nil {
				t.Fatal(err)
			}
			for name, u := range map[string]*unstructured.Unstructured{"whole": job, "slimmed": slim.(*unstructured.Unstructured)} {
				b := JobRuntimeBound(u)
				if tt.wantNil {
					if b != nil {
						t.Errorf("%s: bound %+v, want none", name, b)
					}
					continue
				}
				if b == nil {
					t.Fatalf("%s: no bound", name)
				}
				if b.Source != "Job ns/train" || b.UID != "job-uid" || !b.Start.Equal(tt.wantStart) || b.Limit != tt.wantLimit {
					t.Errorf("%s: bound %+v; want start %v, limit %v", name, b, tt.wantStart, tt.wantLimit)
				}
				if got := errText(b.Err); (tt.wantErr == "") != (got == "") || !strings.Contains(got, tt.wantErr) {
					t.Errorf("%s: error %q, want one containing %q", name, got, tt.wantErr)
				}
			}
		})
	}
	if b := JobRuntimeBound(nil); b != nil {
		t.Errorf("bound of nil: %+v", b)
	}
	weird := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}, "spec": "not an object", "status": []any{1}}}
	if b := JobRuntimeBound(weird); b == nil || b.Err == nil || b.Limit != 0 {
		t.Errorf("bound of a Job whose spec and status are not objects: %+v; want only an error", b)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The Job dialect of the built-in table reads runtime bounds and its
// watch keeps their fields.
func TestJobDialectReadsRuntimeBounds(t *testing.T) {
	var found bool
	for _, w := range Builtin().Watches(false, framework.OwnerKinds(0).With(framework.GroupKindJob)) {
		if w.Kind != framework.GroupKindJob {
			if w.Runtime != nil {
				t.Errorf("%s reads runtime bounds", w.Kind)
			}
			continue
		}
		found = true
		if w.Runtime == nil || w.Transform == nil {
			t.Fatalf("Job watch: runtime reader %v, transform %v", w.Runtime != nil, w.Transform != nil)
		}
		slim, err := w.Transform(jobObject(map[string]any{"activeDeadlineSeconds": int64(90), "template": map[string]any{"x": "y"}},
			map[string]any{"startTime": "2026-01-01T12:00:00Z"}, map[string]any{framework.KueueMaxExecTimeLabel: "60", "other": "dropped"}))
		if err != nil {
			t.Fatal(err)
		}
		u := slim.(*unstructured.Unstructured)
		if _, ok := u.GetLabels()["other"]; ok {
			t.Errorf("the slimmer keeps labels nobody reads: %v", u.GetLabels())
		}
		if b := w.Runtime(u); b == nil || b.Limit != time.Minute || b.Start.IsZero() {
			t.Errorf("bound of the slimmed Job %+v, want a minute from its start", b)
		}
	}
	if !found {
		t.Fatal("no Job watch")
	}
}
