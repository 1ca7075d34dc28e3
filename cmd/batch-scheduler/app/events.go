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

package app

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// eventRecording writes the scheduler's Events through events.k8s.io/v1.
//
// The writes run on their own goroutines, rate limited by the events
// client. When the scheduler stops, writes still waiting for the rate
// limiter are cancelled; client-go logs each of those as an error, which
// after a busy run buries the shutdown in hundreds of identical lines. Here
// they are counted and reported once.
type eventRecording struct {
	broadcaster events.EventBroadcaster
	// cancelled counts writes abandoned because recording stopped.
	cancelled atomic.Int64
}

func newEventRecording(client kubernetes.Interface) *eventRecording {
	return &eventRecording{broadcaster: events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})}
}

// recorder returns the recorder for events reported by component. Its
// notes are cut to the 1 KiB the API server accepts (boundedRecorder).
func (r *eventRecording) recorder(component string) events.EventRecorderLogger {
	return boundedRecorder{r.broadcaster.NewRecorder(scheme.Scheme, component)}
}

// boundedRecorder cuts every note to framework.MaxEventNote bytes: notes
// quote what users wrote (group names, annotation values), and the API
// server rejects an event with a longer note, so the event would be lost.
type boundedRecorder struct {
	events.EventRecorderLogger
}

// Eventf implements events.EventRecorder.
func (r boundedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.EventRecorderLogger.Eventf(regarding, related, eventtype, reason, action, "%s",
		framework.TruncateMessage(fmt.Sprintf(note, args...), framework.MaxEventNote))
}

// WithLogger implements events.EventRecorderLogger.
func (r boundedRecorder) WithLogger(logger klog.Logger) events.EventRecorderLogger {
	return boundedRecorder{r.EventRecorderLogger.WithLogger(logger)}
}

// start writes events until the returned function is called; that
// function stops recording and logs how many writes were abandoned.
func (r *eventRecording) start(ctx context.Context) (stop func(), err error) {
	logger := klog.FromContext(ctx)
	// WithSink, unlike logr.New, does not Init the sink: klog's is shared.
	filtered := logger.WithSink(newCancelledFilter(logger.GetSink(), &r.cancelled))
	recCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), filtered))
	if err := r.broadcaster.StartRecordingToSinkWithContext(recCtx); err != nil {
		cancel()
		return nil, err
	}
	return func() {
		r.broadcaster.Shutdown()
		cancel()
		if n := r.cancelled.Load(); n > 0 {
			logger.Info("Events not written because the scheduler stopped", "count", n)
		}
	}, nil
}

// cancelledFilter drops error logs whose error is a cancelled context,
// counting them, and passes everything else to the wrapped sink.
type cancelledFilter struct {
	logr.LogSink
	cancelled *atomic.Int64
}

// newCancelledFilter wraps sink; the wrapper's own frame is skipped when
// sink reports call sites.
func newCancelledFilter(sink logr.LogSink, cancelled *atomic.Int64) *cancelledFilter {
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return &cancelledFilter{LogSink: sink, cancelled: cancelled}
}

func (f *cancelledFilter) Error(err error, msg string, kv ...any) {
	if errors.Is(err, context.Canceled) {
		f.cancelled.Add(1)
		return
	}
	f.LogSink.Error(err, msg, kv...)
}

func (f *cancelledFilter) WithValues(kv ...any) logr.LogSink {
	return &cancelledFilter{LogSink: f.LogSink.WithValues(kv...), cancelled: f.cancelled}
}

func (f *cancelledFilter) WithName(name string) logr.LogSink {
	return &cancelledFilter{LogSink: f.LogSink.WithName(name), cancelled: f.cancelled}
}
