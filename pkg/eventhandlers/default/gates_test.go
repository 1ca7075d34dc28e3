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

package defaulthandler_test

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// gateFixture is the default handler in front of a real cache and its
// scheduling queue, driven by calling the handler directly, on a fake clock.
type gateFixture struct {
	h     *defaulthandler.Handler
	c     *cache.SchedulerCache
	clock *testingclock.FakeClock
}

func newGateFixture(t *testing.T, opts ...defaulthandler.Option) *gateFixture {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := cache.New(cache.Options{Client: fake.NewClientset(), Clock: clk})
	if err != nil {
		t.Fatalf("cache.New: %v", err)
	}
	h, err := defaulthandler.New(t.Context(), c, nil, nil, opts...)
	if err != nil {
		t.Fatalf("defaulthandler.New: %v", err)
	}
	return &gateFixture{h: h, c: c, clock: clk}
}

// mustPopNow pops the head of the active queue, failing if there is none.
func (f *gateFixture) mustPopNow(t *testing.T) *framework.QueuedJob {
	t.Helper()
	if l := f.c.Queue().Lengths(); l.Active == 0 {
		t.Fatalf("no active job to pop; queue lengths %+v", l)
	}
	job, err := f.c.Queue().Pop(t.Context())
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return job
}

// assertNothingToPop checks that no job is active: Pop with an expired
// context fails.
func (f *gateFixture) assertNothingToPop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if job, err := f.c.Queue().Pop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pop = %v, %v; want nothing to pop", job, err)
	}
}

func podNames(job *framework.QueuedJob) []string {
	var names []string
	for _, p := range job.Pods {
		names = append(names, p.Name)
	}
	return names
}

func withGates(p *v1.Pod, gates ...string) *v1.Pod {
	for _, g := range gates {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: g})
	}
	return p
}

func TestGatedPodIsNeverPoppedAndIsPoppedOnceUngated(t *testing.T) {
	f := newGateFixture(t)
	gatedV1 := withGates(st.MakePod().Name("solo").RV("1").Obj(), "example.com/a", "example.com/b")
	f.h.AddPod(gatedV1)
	f.assertNothingToPop(t)
	if _, ok := f.c.Job(dialects.Resolver().JobID(gatedV1)); ok {
		t.Error("the cache has a job for a gated pod")
	}

	// Removing one of two gates changes nothing.
	gatedV2 := withGates(st.MakePod().Name("solo").RV("2").Obj(), "example.com/b")
	f.h.UpdatePod(gatedV1, gatedV2)
	f.assertNothingToPop(t)

	// Removing the last one queues the pod at once: no clock step.
	ungated := st.MakePod().Name("solo").RV("3").Obj()
	f.h.UpdatePod(gatedV2, ungated)
	job := f.mustPopNow(t)
	if got := podNames(job); len(got) != 1 || got[0] != "solo" {
		t.Errorf("popped pods %v, want [solo]", got)
	}
}

func TestGangWithGatedMemberWaitsUntilUngated(t *testing.T) {
	f := newGateFixture(t)
	member := func(name, rv string) *st.PodWrapper {
		return st.MakePod().Name(name).RV(rv).Group("g").MinAvailable("2")
	}
	open := member("g-0", "1").Obj()
	gated := withGates(member("g-1", "1").Obj(), "example.com/a")
	f.h.AddPod(open)
	f.h.AddPod(gated)

	// Only the ungated member is pending: the gang is short of its quorum,
	// as if the gated member did not exist.
	job := f.mustPopNow(t)
	if got := podNames(job); len(got) != 1 || got[0] != "g-0" {
		t.Fatalf("popped pods %v, want [g-0]", got)
	}
	info, ok := f.c.Job(job.ID)
	if !ok {
		t.Fatalf("no job %s in the cache", job.ID)
	}
	if n, quorum := info.Counts().Pending, info.MinAvailable(); n != 1 || quorum != 2 {
		t.Fatalf("pending tasks %d, min-available %d; want 1 of 2", n, quorum)
	}
	// The Gang plugin rejects it; it waits for its own pods to change.
	if err := f.c.Queue().AddUnschedulable(job, schedulingqueue.Attempt{Reason: "waiting for tasks: 1 of min-available 2 exist"}); err != nil {
		t.Fatalf("AddUnschedulable: %v", err)
	}
	f.clock.Step(time.Minute) // past its backoff, far from the unschedulable timeout
	f.assertNothingToPop(t)

	// Ungating the member brings the whole gang back at once.
	f.h.UpdatePod(gated, member("g-1", "2").Obj())
	job = f.mustPopNow(t)
	if got := podNames(job); len(got) != 2 || got[0] != "g-0" || got[1] != "g-1" {
		t.Errorf("popped pods %v, want [g-0 g-1]", got)
	}
}

func TestDeleteGatedPod(t *testing.T) {
	for _, tt := range []struct {
		name   string
		delete func(h *defaulthandler.Handler, p *v1.Pod)
	}{
		{"delete", func(h *defaulthandler.Handler, p *v1.Pod) { h.DeletePod(p) }},
		{"tombstone", func(h *defaulthandler.Handler, p *v1.Pod) { h.DeletePod(tombstone(p)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newGateFixture(t)
			open := st.MakePod().Name("g-0").RV("1").Group("g").MinAvailable("2").Obj()
			gated := withGates(st.MakePod().Name("g-1").RV("1").Group("g").MinAvailable("2").Obj(), "example.com/a")
			f.h.AddPod(open)
			f.h.AddPod(gated)
			tt.delete(f.h, gated)
			job := f.mustPopNow(t)
			if got := podNames(job); len(got) != 1 || got[0] != "g-0" {
				t.Errorf("popped pods %v, want [g-0]", got)
			}
			if info, _ := f.c.Job(job.ID); info == nil || len(info.Tasks) != 1 {
				t.Errorf("job %s in the cache = %+v, want its one ungated task", job.ID, info)
			}
		})
	}
}

// The policy sees the pod first: a pod it ignores is not queued when its
// gates are removed.
func TestGatesAfterPolicy(t *testing.T) {
	ignoreTeam := defaulthandler.Policy{Pod: func(p *v1.Pod) *v1.Pod {
		if p.Namespace == "other-team" {
			return nil
		}
		return p
	}}
	f := newGateFixture(t, defaulthandler.WithPolicy(ignoreTeam))
	gated := withGates(st.MakePod().Name("p").Namespace("other-team").RV("1").Obj(), "example.com/a")
	f.h.AddPod(gated)
	f.h.UpdatePod(gated, st.MakePod().Name("p").Namespace("other-team").RV("2").Obj())
	f.assertNothingToPop(t)
}
