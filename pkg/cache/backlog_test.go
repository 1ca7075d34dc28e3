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

package cache

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

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
		return metricstest.GaugeValue(t, m.EventHandlerBacklog.WithLabelValues("custom/slow")) > 0 &&
			metricstest.GaugeValue(t, m.EventHandlerOldestPending.WithLabelValues("custom/slow")) > 0.3
	})
	waitFor(t, "the backlog to drain", func() bool { b := backlogOf(); return b.Pending == 0 && b.OldestPending == 0 })
	waitFor(t, "the gauges to drop to 0", func() bool {
		return metricstest.GaugeValue(t, m.EventHandlerBacklog.WithLabelValues("custom/slow")) == 0 &&
			metricstest.GaugeValue(t, m.EventHandlerOldestPending.WithLabelValues("custom/slow")) == 0
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
