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

// Package status publishes what the scheduler knows about its tenant
// queues (docs/queues.md): the status of the project's own Queue objects
// (allocated, pending, fair share, guaranteed, job counts, and a Valid
// condition), written only when it changed, and the per-queue metrics.
// It reads the tenant queues from pkg/tenancy (through the cache, which
// holds the capacity they share); it never touches the scheduling queue.
package status

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
)

// FieldManager is the field manager of the status the writer applies.
const FieldManager = "batch-scheduler"

// DefaultPeriod is the default of Options.Period.
const DefaultPeriod = 2 * time.Second

// Queue is one tenant queue as the writer publishes it.
type Queue struct {
	Name string
	// Own is set for a Queue of this project, whose status is written.
	Own bool
	// State is the queue in use; nil for one left out, with Err saying
	// why.
	State *framework.QueueState
	Err   error
}

// FromTenancy adapts read, the tenant queues as pkg/tenancy reports them
// (e.g. cache.SchedulerCache.TenantQueueStatuses), for Options.Queues: a
// queue is the project's own when its API is tenancy.SourceOwn.
func FromTenancy(read func() []tenancy.QueueStatus) func() []Queue {
	return func() []Queue {
		in := read()
		out := make([]Queue, len(in))
		for i, q := range in {
			out[i] = Queue{Name: q.Name, Own: q.API == tenancy.SourceOwn, State: q.State, Err: q.Err}
		}
		return out
	}
}

// Options configure Run.
type Options struct {
	// Queues returns the tenant queues now (see FromTenancy).
	Queues func() []Queue
	// Client writes the status of the project's own Queues; nil writes
	// none (metrics only).
	Client dynamic.Interface
	// Metrics get the per-queue gauges; nil sets none.
	Metrics *metrics.Metrics
	// Period between publications. Default: DefaultPeriod.
	Period time.Duration
}

// Writer publishes queue status. Build it with New; Run drives it.
type Writer struct {
	opts Options
	// written holds, per queue, the status last applied, and since when
	// its Valid condition has had its value. Only Run's goroutine uses it.
	written map[string]writtenStatus
}

type writtenStatus struct {
	body      []byte
	valid     bool
	validFrom metav1.Time
}

// New returns a writer; it checks opts.
func New(opts Options) (*Writer, error) {
	if opts.Queues == nil {
		return nil, fmt.Errorf("tenant queue status writer: no source of queues")
	}
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	return &Writer{opts: opts, written: map[string]writtenStatus{}}, nil
}

// Run publishes every Period until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	wait.UntilWithContext(ctx, w.Sync, w.opts.Period)
}

// Sync publishes once: the metrics of every queue, and the status of each
// of the project's own Queues whose status changed since it was last
// written.
func (w *Writer) Sync(ctx context.Context) {
	queues := w.opts.Queues()
	w.setMetrics(queues)
	if w.opts.Client == nil {
		return
	}
	seen := map[string]bool{}
	for _, q := range queues {
		if !q.Own {
			continue
		}
		seen[q.Name] = true
		if err := w.write(ctx, q); err != nil {
			klog.FromContext(ctx).Error(err, "Writing queue status", "queue", q.Name)
		}
	}
	for name := range w.written {
		if !seen[name] {
			delete(w.written, name)
		}
	}
}

// write applies q's status when it differs from what was last written.
func (w *Writer) write(ctx context.Context, q Queue) error {
	prev, had := w.written[q.Name]
	valid := q.State != nil
	from := metav1.NewTime(time.Now().Truncate(time.Second))
	if had && prev.valid == valid {
		from = prev.validFrom
	}
	status := statusOf(q, from)
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(),
		"kind":       "Queue",
		"metadata":   map[string]any{"name": q.Name},
		"status":     status,
	})
	if err != nil {
		return fmt.Errorf("encoding the status of queue %s: %w", q.Name, err)
	}
	if had && string(prev.body) == string(body) {
		return nil
	}
	force := true
	_, err = w.opts.Client.Resource(v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.QueuesResource)).
		Patch(ctx, q.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}, "status")
	if apierrors.IsNotFound(err) {
		// Deleted meanwhile; the cache forgets it with the next event.
		return nil
	}
	if err != nil {
		return fmt.Errorf("applying the status of queue %s: %w", q.Name, err)
	}
	w.written[q.Name] = writtenStatus{body: body, valid: valid, validFrom: from}
	return nil
}

// statusOf is q's status, its Valid condition dated from.
func statusOf(q Queue, from metav1.Time) v1alpha1.QueueStatus {
	cond := metav1.Condition{Type: "Valid", Status: metav1.ConditionTrue, Reason: "InUse",
		Message: "the queue takes jobs", LastTransitionTime: from}
	var st v1alpha1.QueueStatus
	if s := q.State; s != nil {
		st.Allocated, st.Pending = s.Allocated.ToList(), s.Pending.ToList()
		st.FairShare, st.Guaranteed = s.FairShare.ToList(), s.Guaranteed.ToList()
		st.PendingJobs, st.RunningJobs = int32(s.PendingJobs), int32(s.RunningJobs)
		if len(s.Children) > 0 {
			cond.Reason, cond.Message = "HasChildren", "the queue divides its share among its children; jobs go in leaf queues"
		}
	} else {
		cond.Status, cond.Reason = metav1.ConditionFalse, "Invalid"
		cond.Message = "the queue is left out and its jobs wait"
		if q.Err != nil {
			cond.Message = q.Err.Error()
		}
	}
	st.Conditions = []metav1.Condition{cond}
	return st
}

// setMetrics replaces the per-queue gauges with queues'.
func (w *Writer) setMetrics(queues []Queue) {
	m := w.opts.Metrics
	if m == nil {
		return
	}
	m.QueueResources.Reset()
	m.QueueJobs.Reset()
	m.QueueValid.Reset()
	for _, q := range queues {
		if q.State == nil {
			m.QueueValid.WithLabelValues(q.Name).Set(0)
			continue
		}
		m.QueueValid.WithLabelValues(q.Name).Set(1)
		s := q.State
		for kind, a := range map[string]framework.ResourceAmounts{"allocated": s.Allocated, "pending": s.Pending,
			"fair_share": s.FairShare, "guaranteed": s.Guaranteed, "limit": s.Limit} {
			for name, v := range a {
				m.QueueResources.WithLabelValues(q.Name, string(name), kind).Set(baseUnits(name, v))
			}
		}
		m.QueueJobs.WithLabelValues(q.Name, "pending").Set(float64(s.PendingJobs))
		m.QueueJobs.WithLabelValues(q.Name, "running").Set(float64(s.RunningJobs))
	}
}

// baseUnits converts an amount to the resource's base unit: millicores to
// cores, anything else as it is.
func baseUnits(name v1.ResourceName, v int64) float64 {
	if name == v1.ResourceCPU {
		return float64(v) / 1000
	}
	return float64(v)
}
