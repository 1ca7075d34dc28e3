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
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// jobPod is a pod controlled by the batch Job "train" with uid "job-uid".
func jobPod(annotation string, deadline *int64, started *time.Time) *v1.Pod {
	yes := true
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "train-0",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "job-uid", Controller: &yes}}},
		Spec: v1.PodSpec{ActiveDeadlineSeconds: deadline}}
	if annotation != "" {
		pod.Annotations = map[string]string{ExpectedRuntimeAnnotation: annotation}
	}
	if started != nil {
		pod.Status.StartTime = &metav1.Time{Time: *started}
	}
	return pod
}

func TestEstimatedEnd(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	jobStart := now.Add(-5 * time.Minute)
	podStarted := now.Add(-2 * time.Minute)
	tenMin := int64(600)
	tests := []struct {
		name       string
		annotation string
		deadline   *int64
		podStart   *time.Time
		bound      *RuntimeBound
		want       time.Time
		wantOK     bool
	}{
		{name: "nothing says"},
		{name: "the pod only", annotation: "1m", podStart: &podStarted, want: podStarted.Add(time.Minute), wantOK: true},
		{name: "pending pod only", deadline: &tenMin, want: now.Add(10 * time.Minute), wantOK: true},
		{name: "Job deadline, Job started", bound: &RuntimeBound{Start: jobStart, Limit: 20 * time.Minute},
			want: jobStart.Add(20 * time.Minute), wantOK: true},
		{name: "Job deadline, Job not started, pending pod", bound: &RuntimeBound{Limit: 20 * time.Minute},
			want: now.Add(20 * time.Minute), wantOK: true},
		{name: "Job deadline, Job start unknown, running pod", podStart: &podStarted, bound: &RuntimeBound{Limit: 20 * time.Minute},
			want: podStarted.Add(20 * time.Minute), wantOK: true},
		{name: "Job deadline tighter than the annotation", annotation: "1h", podStart: &podStarted,
			bound: &RuntimeBound{Start: jobStart, Limit: 20 * time.Minute}, want: jobStart.Add(20 * time.Minute), wantOK: true},
		{name: "annotation tighter than the Job deadline", annotation: "1m", podStart: &podStarted,
			bound: &RuntimeBound{Start: jobStart, Limit: 20 * time.Minute}, want: podStarted.Add(time.Minute), wantOK: true},
		{name: "pod deadline tighter than both", annotation: "1h", deadline: &tenMin, podStart: &podStarted,
			bound: &RuntimeBound{Start: jobStart, Limit: time.Hour}, want: podStarted.Add(10 * time.Minute), wantOK: true},
		{name: "a Job bound without a limit", annotation: "1m", bound: &RuntimeBound{Start: jobStart, Err: errors.New("bad label")},
			want: now.Add(time.Minute), wantOK: true},
		{name: "garbage annotation, Job bound counts", annotation: "soon", bound: &RuntimeBound{Start: jobStart, Limit: time.Hour},
			want: jobStart.Add(time.Hour), wantOK: true},
		{name: "garbage annotation, nothing else", annotation: "soon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := jobPod(tt.annotation, tt.deadline, tt.podStart)
			end, ok := EstimatedEnd(pod, tt.bound, now)
			if ok != tt.wantOK || !end.Equal(tt.want) {
				t.Errorf("EstimatedEnd = %v, %v; want %v, %v", end, ok, tt.want, tt.wantOK)
			}
			// The same through the cache's registry and a task.
			bounds := &RuntimeBounds{}
			if tt.bound != nil {
				bounds.Set("ns", "train", tt.bound)
			}
			task := &TaskInfo{Pod: pod, RuntimeBounds: bounds}
			if end, ok := task.ExpectedEnd(now); ok != tt.wantOK || !end.Equal(tt.want) {
				t.Errorf("TaskInfo.ExpectedEnd = %v, %v; want %v, %v", end, ok, tt.want, tt.wantOK)
			}
			// And through the task of the pod bound, which reads its
			// record rather than a pod.
			running := pod.DeepCopy()
			running.Spec.NodeName = "n1"
			bound := NewTaskInfo(running, GroupResolver{})
			bound.RuntimeBounds = bounds
			if bound.Record() == nil {
				t.Fatal("the task of a bound pod keeps no record")
			}
			if end, ok := bound.ExpectedEnd(now); ok != tt.wantOK || !end.Equal(tt.want) {
				t.Errorf("ExpectedEnd of the bound task = %v, %v; want %v, %v", end, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestEstimatedRuntime(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := jobPod("", nil, nil)
	if d, ok := EstimatedRuntime(pod, &RuntimeBound{Start: now.Add(-time.Minute), Limit: 3 * time.Minute}, now); !ok || d != 2*time.Minute {
		t.Errorf("runtime left of a Job started a minute ago with a 3m deadline = %v, %v; want 2m", d, ok)
	}
	if d, ok := EstimatedRuntime(pod, &RuntimeBound{Start: now.Add(-time.Hour), Limit: time.Minute}, now); !ok || d != 0 {
		t.Errorf("runtime of a pod whose Job is past its deadline = %v, %v; want 0", d, ok)
	}
	if _, ok := EstimatedRuntime(pod, nil, now); ok {
		t.Error("a pod that says nothing, without a Job bound, has a runtime")
	}
}

func TestRuntimeBoundsOf(t *testing.T) {
	b := &RuntimeBound{Source: "Job ns/train", UID: "job-uid", Limit: time.Minute}
	var r RuntimeBounds
	r.Set("ns", "train", b)
	yes := true
	owned := func(apiVersion, kind, name string, uid types.UID, controller bool) *v1.Pod {
		ref := metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}
		if controller {
			ref.Controller = &yes
		}
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: []metav1.OwnerReference{ref}}}
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want *RuntimeBound
	}{
		{"the Job's pod", owned("batch/v1", "Job", "train", "job-uid", true), b},
		{"no owner", &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, nil},
		{"owner, not controller", owned("batch/v1", "Job", "train", "job-uid", false), nil},
		{"another kind of that name", owned("ray.io/v1", "RayCluster", "train", "job-uid", true), nil},
		{"a Job of that name created again", owned("batch/v1", "Job", "train", "other-uid", true), nil},
		{"another namespace", func() *v1.Pod {
			p := owned("batch/v1", "Job", "train", "job-uid", true)
			p.Namespace = "other"
			return p
		}(), nil},
		{"nil pod", nil, nil},
	} {
		if got := r.Of(tc.pod); got != tc.want {
			t.Errorf("%s: Of = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	r.Set("ns", "train", b)  // again: still one bound
	r.Set("ns", "gone", nil) // forgetting what was never set
	if n := r.n.Load(); n != 1 {
		t.Errorf("%d bounds counted, want 1", n)
	}
	r.Set("ns", "train", nil)
	if got := r.Of(owned("batch/v1", "Job", "train", "job-uid", true)); got != nil {
		t.Errorf("after the Job is gone: %+v, want nil", got)
	}
	if n := r.n.Load(); n != 0 {
		t.Errorf("%d bounds counted after the last is gone, want 0", n)
	}
	var none *RuntimeBounds
	if got := none.Of(owned("batch/v1", "Job", "train", "job-uid", true)); got != nil {
		t.Errorf("a nil registry gives %+v", got)
	}
}
