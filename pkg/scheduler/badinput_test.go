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
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// TestIgnoredAnnotationsAreReported: a pod whose gang annotations are
// ignored is scheduled on its own and told so with one Warning event per
// change of its annotations, not one per attempt.
func TestIgnoredAnnotationsAreReported(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want string
	}{
		{"empty group name", st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).Annotation(framework.GroupNameAnnotation, "").Obj(),
			"annotation " + framework.GroupNameAnnotation + " is empty"},
		{"empty volcano group name", st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).Annotation(framework.VolcanoGroupNameAnnotation, "").Obj(),
			"annotation " + framework.VolcanoGroupNameAnnotation + " is empty"},
		{"empty coscheduling label", st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).Label(framework.CoschedulingPodGroupLabel, "").Obj(),
			"label " + framework.CoschedulingPodGroupLabel + " is empty"},
		{"quorum without a group", st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).MinAvailable("abc").Obj(),
			"annotation " + framework.MinAvailableAnnotation + `="abc" is ignored: the pod names no gang`},
		{"job-gang not true", st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).Annotation(framework.JobGangAnnotation, "yes").Obj(),
			`="yes" is ignored: only "true"`},
		{"job-gang without a Job", st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).Annotation(framework.JobGangAnnotation, "true").Obj(),
			"no batch/v1 Job controls the pod"},
		{"unreadable expected runtime", st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).Annotation(framework.ExpectedRuntimeAnnotation, "soon").Obj(),
			"annotation " + framework.ExpectedRuntimeAnnotation + `="soon": not a duration (e.g. 90s, 1h30m) or a number of seconds is ignored`},
		{"negative expected runtime", st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).Annotation(framework.ExpectedRuntimeAnnotation, "-5m").Obj(),
			`="-5m": not positive is ignored`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.addNode("n1", "1")
			h.addPod(tt.pod)
			h.cycle()
			evts := h.events()
			ignored := eventsWith(evts, "Warning "+ReasonIgnoredAnnotation+" ")
			if len(ignored) != 1 || !strings.Contains(ignored[0], tt.want) {
				t.Errorf("events = %q, want one %s event containing %q", evts, ReasonIgnoredAnnotation, tt.want)
			}
			if got := h.boundTo()["p"]; got != "n1" {
				t.Errorf("pod bound to %q, want n1: an ignored annotation does not stop scheduling", got)
			}
		})
	}
}

// TestUnreadableJobRuntimeIsReported: a Kueue maximum execution time (and
// a start) on the pod's Job that cannot be read are ignored, and the pod
// is told so, naming the Job and each value; the Job's deadline still
// counts.
func TestUnreadableJobRuntimeIsReported(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "1")
	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "train", "namespace": "default", "uid": "job-uid",
			"labels": map[string]any{framework.KueueMaxExecTimeLabel: "an hour"}},
		"spec":   map[string]any{"activeDeadlineSeconds": int64(60)},
		"status": map[string]any{"startTime": "yesterday"},
	}}
	bound := dialects.JobRuntimeBound(job)
	h.cache.SetRuntimeBound("default", "train", bound)
	h.addPod(st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).ControlledBy("batch/v1", "Job", "train", "job-uid").Obj())
	h.cycle()
	want := "label " + framework.KueueMaxExecTimeLabel + `="an hour" of Job default/train: not a positive whole number of seconds is ignored`
	ignored := eventsWith(h.events(), "Warning "+ReasonIgnoredAnnotation+" ")
	want += `; status.startTime "yesterday" of Job default/train: not a time is ignored`
	if len(ignored) != 1 || !strings.Contains(ignored[0], want) {
		t.Errorf("events = %q, want one %s event containing %q", h.events(), ReasonIgnoredAnnotation, want)
	}
	if got := h.boundTo()["p"]; got != "n1" {
		t.Errorf("pod bound to %q, want n1", got)
	}
	if bound == nil || bound.Limit != time.Minute {
		t.Errorf("bound %+v: the Job's deadline no longer counts", bound)
	}
}

// TestIgnoredAnnotationsOncePerVersion: attempts of the same pod do not
// repeat the event; a changed annotation reports again.
func TestIgnoredAnnotationsOncePerVersion(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "1")
	pod := st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "2"}).MinAvailable("abc").Obj()
	h.addPod(pod)
	h.cycle()
	h.requeueAll()
	h.cycle()
	if got := eventsWith(h.events(), "Warning "+ReasonIgnoredAnnotation); len(got) != 1 {
		t.Fatalf("after two attempts: %d %s events, want 1: %q", len(got), ReasonIgnoredAnnotation, got)
	}
	changed := pod.DeepCopy()
	changed.Annotations[framework.MinAvailableAnnotation] = "xyz"
	changed.ResourceVersion = "2"
	if err := h.cache.UpdatePendingPod(pod, changed); err != nil {
		t.Fatal(err)
	}
	h.requeueAll()
	h.cycle()
	if got := eventsWith(h.events(), "Warning "+ReasonIgnoredAnnotation); len(got) != 1 || !strings.Contains(got[0], "xyz") {
		t.Errorf("after the annotation changed: %q, want one new event naming the new value", got)
	}
}

// TestHugeGroupNameMessagesAreBounded: a 10,000-character group name
// gives a condition and an event the API server accepts.
func TestHugeGroupNameMessagesAreBounded(t *testing.T) {
	h := newHarness(t)
	h.addNode("n1", "1")
	name := strings.Repeat("x", 10000)
	pod := st.MakePod().Name("p").UID("p").Req(res{v1.ResourceCPU: "1"}).Group(name).MinAvailable("1").Obj()
	h.addPod(pod)
	h.cycle()
	for _, e := range h.events() {
		if len(e) > framework.MaxEventNote+200 {
			t.Errorf("event of %d bytes: %.200s...", len(e), e)
		}
	}
	patches := h.statusPatches()
	if len(patches) != 1 {
		t.Fatalf("%d status patches, want 1", len(patches))
	}
	if n := len(patches[0].GetPatch()); n > framework.MaxConditionMessage+1024 {
		t.Errorf("status patch of %d bytes, want the condition message bounded", n)
	}
	if !strings.Contains(string(patches[0].GetPatch()), "(10000 bytes)") {
		t.Errorf("status patch %.300s does not say how long the name is", patches[0].GetPatch())
	}
}
