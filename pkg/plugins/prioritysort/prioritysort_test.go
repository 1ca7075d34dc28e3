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

package prioritysort

import (
	"context"
	"strings"
	"testing"
	"time"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func TestLess(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	job := func(ns, name string, gang bool, prio int32, ts time.Time) *framework.QueuedJob {
		// InitialTimestamp is set in the opposite order to Timestamp: it
		// must not matter, since Timestamp is when the job (re-)entered
		// the queue.
		initial := t0
		if ts.Equal(t0) {
			initial = t1
		}
		return &framework.QueuedJob{ID: framework.JobID{Namespace: ns, Name: name, Gang: gang}, Priority: prio,
			Timestamp: ts, InitialTimestamp: initial}
	}
	tests := []struct {
		name string
		a, b *framework.QueuedJob
		want bool
	}{
		{"higher priority first", job("ns", "b", true, 10, t1), job("ns", "a", true, 5, t0), true},
		{"lower priority later", job("ns", "a", true, 5, t0), job("ns", "b", true, 10, t1), false},
		{"negative priority after zero", job("ns", "a", false, -1, t0), job("ns", "b", false, 0, t1), false},
		{"same priority: earlier first", job("ns", "b", true, 5, t0), job("ns", "a", true, 5, t1), true},
		{"same priority: later second", job("ns", "a", true, 5, t1), job("ns", "b", true, 5, t0), false},
		{"tie: namespace", job("a", "z", true, 5, t0), job("b", "a", true, 5, t0), true},
		{"tie: namespace reversed", job("b", "a", true, 5, t0), job("a", "z", true, 5, t0), false},
		{"tie: name", job("ns", "a", true, 5, t0), job("ns", "b", true, 5, t0), true},
		{"tie: name reversed", job("ns", "b", true, 5, t0), job("ns", "a", true, 5, t0), false},
		{"tie: single pod before gang", job("ns", "a", false, 5, t0), job("ns", "a", true, 5, t0), true},
		{"tie: gang after single pod", job("ns", "a", true, 5, t0), job("ns", "a", false, 5, t0), false},
		{"identical is not less", job("ns", "a", true, 5, t0), job("ns", "a", true, 5, t0), false},
	}
	pl := &PrioritySort{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pl.Less(tt.a, tt.b); got != tt.want {
				t.Errorf("Less = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	p, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != Name || Name != "PrioritySort" {
		t.Errorf("Name = %q", p.Name())
	}
	if _, ok := p.(framework.QueueSortPlugin); !ok {
		t.Error("not a QueueSortPlugin")
	}
	ext, ok := p.(framework.EnqueueExtensions)
	if !ok {
		t.Fatal("not EnqueueExtensions: it would be assumed to need every event")
	}
	if ev := ext.EventsToRegister(); len(ev) != 0 {
		t.Errorf("EventsToRegister = %#v, want an empty list", ev)
	}
	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("{}")), nil); err != nil {
		t.Errorf("empty args rejected: %v", err)
	}
	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("order: reverse")), nil); err == nil || !strings.Contains(err.Error(), "PrioritySort args") {
		t.Errorf("args accepted or error does not name the plugin: %v", err)
	}
}
