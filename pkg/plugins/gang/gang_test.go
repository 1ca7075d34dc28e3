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

package gang

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

var gangID = framework.JobID{Namespace: "ns", Name: "train", Gang: true}

func pods(n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = st.MakePod().Namespace("ns").Name(fmt.Sprintf("train-%d", i)).Group("train").Obj()
	}
	return out
}

func placements(ps []*v1.Pod) map[string]string {
	m := map[string]string{}
	for i, p := range ps {
		m[string(p.UID)] = fmt.Sprintf("node-%d", i)
	}
	return m
}

func TestPreFilter(t *testing.T) {
	tests := []struct {
		name    string
		job     *framework.Job
		wantMsg string // empty: success
	}{
		{name: "all tasks there", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: pods(4)}},
		{name: "more than enough", job: &framework.Job{ID: gangID, MinAvailable: 2, Pending: pods(5)}},
		{name: "bound tasks count", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: pods(1), Bound: 3}},
		{name: "waiting for tasks", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: pods(2)},
			wantMsg: "waiting for tasks: 2 of min-available 4 exist"},
		{name: "waiting with some bound", job: &framework.Job{ID: gangID, MinAvailable: 5, Pending: pods(1), Bound: 2},
			wantMsg: "waiting for tasks: 3 of min-available 5 exist"},
		{name: "single pod", job: &framework.Job{ID: framework.JobID{Namespace: "ns", Name: "p"}, MinAvailable: 1, Pending: pods(1)}},
		{name: "a gang without a usable quorum never schedules", job: &framework.Job{ID: gangID, MinAvailable: 0, Pending: pods(3), Err: errors.New("gang ns/train is not scheduled: it declares no quorum")},
			wantMsg: "gang ns/train is not scheduled: it declares no quorum"},
	}
	pl := &Gang{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := pl.PreFilter(context.Background(), framework.NewCycleState(), tt.job)
			if tt.wantMsg == "" {
				if !s.IsSuccess() {
					t.Errorf("PreFilter = %v, want success", s)
				}
				return
			}
			wantCode := framework.Unschedulable
			if tt.job.Err != nil {
				wantCode = framework.UnschedulableAndUnresolvable
			}
			if s.Code() != wantCode || s.Message() != tt.wantMsg {
				t.Errorf("PreFilter = %v, want %v %q", s, wantCode, tt.wantMsg)
			}
		})
	}
}

func TestPermit(t *testing.T) {
	four := pods(4)
	tests := []struct {
		name    string
		job     *framework.Job
		placed  []*v1.Pod
		wantMsg string
	}{
		{name: "all placed", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: four}, placed: four},
		{name: "min-available placed", job: &framework.Job{ID: gangID, MinAvailable: 3, Pending: four}, placed: four[:3]},
		{name: "bound tasks count", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: four[:2], Bound: 2}, placed: four[:2]},
		{name: "already running", job: &framework.Job{ID: gangID, MinAvailable: 2, Pending: four[:1], Bound: 2}, placed: nil},
		{name: "one short", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: four}, placed: four[:3],
			wantMsg: "gang ns/train: 3 of 4 tasks could be placed, min-available 4"},
		{name: "short with bound tasks", job: &framework.Job{ID: gangID, MinAvailable: 5, Pending: four, Bound: 2}, placed: four[:2],
			wantMsg: "gang ns/train: 4 of 6 tasks could be placed, min-available 5"},
		{name: "nothing placed", job: &framework.Job{ID: gangID, MinAvailable: 2, Pending: four}, placed: nil,
			wantMsg: "gang ns/train: 0 of 4 tasks could be placed, min-available 2"},
		{name: "stopped once out of reach", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: four, Untried: 2}, placed: four[:1],
			wantMsg: "gang ns/train: 1 of 4 tasks could be placed, min-available 4 (2 not tried once a task fit nowhere)"},
		{name: "single pod not placed", job: &framework.Job{ID: framework.JobID{Namespace: "ns", Name: "p"}, MinAvailable: 1, Pending: four[:1]},
			wantMsg: "job ns/pod:p: 0 of 1 tasks could be placed, min-available 1"},
		{name: "single pod placed", job: &framework.Job{ID: framework.JobID{Namespace: "ns", Name: "p"}, MinAvailable: 1, Pending: four[:1]}, placed: four[:1]},
		{name: "a gang without a usable quorum is never permitted", job: &framework.Job{ID: gangID, Pending: four, Err: errors.New("gang ns/train is not scheduled: it declares no quorum")}, placed: four,
			wantMsg: "gang ns/train is not scheduled: it declares no quorum"},
	}
	pl := &Gang{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := pl.Permit(context.Background(), framework.NewCycleState(), tt.job, placements(tt.placed))
			if tt.wantMsg == "" {
				if !s.IsSuccess() {
					t.Errorf("Permit = %v, want success", s)
				}
				return
			}
			wantCode := framework.Unschedulable
			if tt.job.Err != nil {
				wantCode = framework.UnschedulableAndUnresolvable
			}
			if s.Code() != wantCode || s.Message() != tt.wantMsg {
				t.Errorf("Permit = %v, want Unschedulable %q", s, tt.wantMsg)
			}
		})
	}
}

func TestOutOfReach(t *testing.T) {
	four := pods(4)
	tests := []struct {
		name         string
		job          *framework.Job
		placed, left int
		want         bool
	}{
		{name: "the pods left can make it", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: four}, placed: 1, left: 3},
		{name: "one short", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: four}, placed: 1, left: 2, want: true},
		{name: "bound tasks count", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: four[:3], Bound: 1}, placed: 1, left: 2},
		{name: "a quorum below the pods", job: &framework.Job{ID: gangID, MinAvailable: 2, Pending: four}, placed: 0, left: 2},
		{name: "multi-level gangs are left to Permit", job: &framework.Job{ID: gangID, MinAvailable: 4, Pending: four, SubGroups: []framework.SubGroup{{}}}, placed: 0, left: 1},
	}
	pl := &Gang{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pl.OutOfReach(tt.job, tt.placed, tt.left); got != tt.want {
				t.Errorf("OutOfReach(placed %d, left %d) = %v, want %v", tt.placed, tt.left, got, tt.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	p, err := New(context.Background(), configapi.NewRawArgs("", []byte("{}")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "Gang" {
		t.Errorf("Name = %q", p.Name())
	}
	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("timeout: 5s")), nil); err == nil || !strings.Contains(err.Error(), "Gang args") {
		t.Errorf("args accepted: %v", err)
	}
	// A gang the plugin rejected waits for pods of its own, which retry it
	// whatever events say, or for capacity; of the cluster events only a
	// grown grant is its own business.
	events := p.(framework.EnqueueExtensions).EventsToRegister()
	for _, e := range []framework.ClusterEvent{framework.EventAssignedPodDelete, framework.EventNodeAdd,
		framework.EventNodeAllocatableChange, framework.EventExternalUsageDecrease} {
		if matchesAny(e, events) {
			t.Errorf("%v requeues a gang the plugin rejected, but cannot help one", e)
		}
	}
	if !matchesAny(framework.EventGrantIncrease, events) {
		t.Errorf("a grown grant does not requeue a gang the plugin rejected")
	}
}

func matchesAny(e framework.ClusterEvent, registered []framework.ClusterEventWithHint) bool {
	for _, r := range registered {
		if e.Matches(r.Event) {
			return true
		}
	}
	return false
}

func TestOwnGroupHint(t *testing.T) {
	job := &framework.QueuedJob{ID: gangID}
	tests := []struct {
		name    string
		obj     any
		want    framework.QueueingHint
		wantErr bool
	}{
		{name: "own group", obj: &framework.GangGroupChange{Job: gangID}, want: framework.Queue},
		{name: "same name elsewhere", obj: &framework.GangGroupChange{Job: framework.JobID{Namespace: "other", Name: "train", Gang: true}}, want: framework.QueueSkip},
		{name: "another group", obj: &framework.GangGroupChange{Job: framework.JobID{Namespace: "ns", Name: "eval", Gang: true}}, want: framework.QueueSkip},
		{name: "wrong object", obj: "x", want: framework.Queue, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ownGroupHint(klog.Background(), job, nil, tt.obj)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("hint = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	events := (&Gang{}).EventsToRegister()
	if !matchesAny(framework.EventGangGroupChange, events) {
		t.Error("a changed PodGroup does not requeue a gang the plugin rejected")
	}
}
