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
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpectedRuntime(t *testing.T) {
	deadline := int64(600)
	tests := []struct {
		name       string
		annotation string
		deadline   *int64
		want       time.Duration
		wantOK     bool
		wantErr    bool
	}{
		{name: "nothing says"},
		{name: "a duration", annotation: "90s", want: 90 * time.Second, wantOK: true},
		{name: "seconds", annotation: "120", want: 2 * time.Minute, wantOK: true},
		{name: "activeDeadlineSeconds", deadline: &deadline, want: 10 * time.Minute, wantOK: true},
		{name: "the shorter annotation wins", annotation: "1m", deadline: &deadline, want: time.Minute, wantOK: true},
		{name: "the shorter deadline wins", annotation: "1h", deadline: &deadline, want: 10 * time.Minute, wantOK: true},
		{name: "not a duration", annotation: "soon", wantErr: true},
		{name: "not a duration, with a deadline", annotation: "soon", deadline: &deadline, want: 10 * time.Minute, wantOK: true, wantErr: true},
		{name: "zero", annotation: "0s", wantErr: true},
		{name: "over a week", annotation: "200h", wantErr: true},
		{name: "over a week in seconds", annotation: "999999999", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{ActiveDeadlineSeconds: tt.deadline}}
			if tt.annotation != "" {
				pod.Annotations = map[string]string{ExpectedRuntimeAnnotation: tt.annotation}
			}
			d, ok, err := ExpectedRuntime(pod)
			if d != tt.want || ok != tt.wantOK || (err != nil) != tt.wantErr {
				t.Errorf("ExpectedRuntime = %v, %v, %v; want %v, %v, error %v", d, ok, err, tt.want, tt.wantOK, tt.wantErr)
			}
		})
	}
}

func TestExpectedEnd(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ExpectedRuntimeAnnotation: "1m"},
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	if end, ok := ExpectedEnd(pod, now); !ok || !end.Equal(now.Add(time.Minute)) {
		t.Errorf("not started yet: %v, %v; want now + 1m (it starts about now, not at its creation)", end, ok)
	}
	started := metav1.NewTime(now.Add(-30 * time.Second))
	pod.Status.StartTime = &started
	if end, ok := ExpectedEnd(pod, now); !ok || !end.Equal(now.Add(30*time.Second)) {
		t.Errorf("started 30s ago: %v, %v; want now + 30s", end, ok)
	}
	if _, ok := ExpectedEnd(&v1.Pod{}, now); ok {
		t.Errorf("a pod without an estimate has an end")
	}
}
