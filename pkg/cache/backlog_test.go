package cache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestEventTrackerState(t *testing.T) {
	tests := []struct {
		name        string
		arrive      int   // events arriving, one per nanosecond of the tracker's time from 1
		handle      int64 // events handled
		now         int64
		wantPending int64
		wantOldest  time.Duration
	}{
		{name: "nothing", now: 5},
		{name: "all handled", arrive: 3, handle: 3, now: 10},
		{name: "handler ahead of the probe", arrive: 2, handle: 3, now: 10},
		{name: "two pending", arrive: 5, handle: 3, now: 10, wantPending: 2, wantOldest: 10 - 4},
		{name: "none handled", arrive: 5, now: 10, wantPending: 5, wantOldest: 10 - 1},
		// Beyond the fine ring the block's first event stands for it.
		{name: "in the coarse ring", arrive: 3 * fineSize, handle: 2*blockSize + 10, now: 1 << 20,
			wantPending: 3*fineSize - 2*blockSize - 10, wantOldest: 1<<20 - (2*blockSize + 1)},
		// Beyond the coarse ring: the oldest block it holds, a lower bound.
		{name: "beyond the coarse ring", arrive: (coarseSize + 3) * blockSize, handle: 0, now: 1 << 30,
			wantPending: (coarseSize + 3) * blockSize, wantOldest: 1<<30 - (3*blockSize + 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clock int64
			tr := newEventTracker("test", func() int64 { return clock })
			for range tt.arrive {
				clock++
				tr.arrive()
			}
			tr.handled.Store(tt.handle)
			pending, oldest := tr.state(tt.now)
			if pending != tt.wantPending || oldest != tt.wantOldest {
				t.Errorf("state = %d pending, oldest %v; want %d, %v", pending, oldest, tt.wantPending, tt.wantOldest)
			}
		})
	}
}

// slowPodHandler takes delay over every pod event.
type slowPodHandler struct {
	nopHandler
	delay time.Duration
}

func (h slowPodHandler) AddPod(any)         { time.Sleep(h.delay) }
func (h slowPodHandler) UpdatePod(any, any) { time.Sleep(h.delay) }

// TestEventBacklogOfSlowHandler feeds 30 pods to a handler that takes
// 100ms per event: the backlog and the age of its oldest event grow, the
// gauges show them, and everything drains.
func TestEventBacklogOfSlowHandler(t *testing.T) {
	m, err := metrics.New(nil)
	mustNoErr(t, "metrics.New", err)
	c, _ := newTestCache(t, Options{Client: fake.NewClientset(), Clock: clock.RealClock{}, Metrics: m})
	source := fcache.NewFakeControllerSource()
	inf := custominformer.New(unsupportedWatchList{source}, &v1.Pod{}, custominformer.Options{Name: "slow"})
	mustNoErr(t, "AddCustomInformer", c.AddCustomInformer(CustomInformer{Name: "slow", Resource: framework.Pod, Informer: inf}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mustNoErr(t, "Run", c.Run(ctx, slowPodHandler{delay: 100 * time.Millisecond}))
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))

	backlogOf := func() InformerBacklog {
		for _, b := range c.EventBacklog() {
			if b.Informer == "custom/slow" {
				return b
			}
		}
		t.Fatalf("no backlog for custom/slow in %+v", c.EventBacklog())
		return InformerBacklog{}
	}
	if b := backlogOf(); b.Pending != 0 || b.OldestPending != 0 {
		t.Fatalf("backlog after sync = %+v, want none", b)
	}

	const events = 30
	for i := range events {
		source.Add(st.MakePod().Namespace("ns").Name(fmt.Sprintf("p-%d", i)).Node("n").Obj())
	}
	var first InformerBacklog
	waitFor(t, "a backlog of at least 10 events", func() bool { first = backlogOf(); return first.Pending >= 10 })
	waitFor(t, "the oldest pending event to age by 300ms more", func() bool {
		b := backlogOf()
		return b.Pending > 0 && b.OldestPending >= first.OldestPending+300*time.Millisecond
	})
	waitFor(t, "the backlog gauges to show it", func() bool {
		return testutil.ToFloat64(m.EventHandlerBacklog.WithLabelValues("custom/slow")) > 0 &&
			testutil.ToFloat64(m.EventHandlerOldestPending.WithLabelValues("custom/slow")) > 0.3
	})
	waitFor(t, "the backlog to drain", func() bool { b := backlogOf(); return b.Pending == 0 && b.OldestPending == 0 })
	waitFor(t, "the gauges to drop to 0", func() bool {
		return testutil.ToFloat64(m.EventHandlerBacklog.WithLabelValues("custom/slow")) == 0 &&
			testutil.ToFloat64(m.EventHandlerOldestPending.WithLabelValues("custom/slow")) == 0
	})
	// Every native informer is tracked too.
	tracked := map[string]bool{}
	for _, b := range c.EventBacklog() {
		tracked[b.Informer] = true
	}
	if !tracked["Pod"] || !tracked["Node"] {
		t.Errorf("tracked informers = %v, want Pod and Node among them", tracked)
	}
}
