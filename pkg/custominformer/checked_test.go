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

package custominformer

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
)

// tornDownWatch is a source watch whose stream, once stopped, still
// reports an error, as client-go's StreamWatcher does when a read on the
// closed response body fails.
type tornDownWatch struct {
	result  chan watch.Event
	stopped chan struct{}
}

func (w *tornDownWatch) Stop()                          { close(w.stopped) }
func (w *tornDownWatch) ResultChan() <-chan watch.Event { return w.result }

// TestCheckedWatchDoesNotCountItsOwnStop checks that an ERROR event the
// source watch produces while being stopped is not a watch error, and
// that the check does not block on it; an ERROR event before the stop is.
func TestCheckedWatchDoesNotCountItsOwnStop(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	inner := &tornDownWatch{result: make(chan watch.Event), stopped: make(chan struct{})}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return nil, errors.New("not listed in this test")
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return inner, nil },
	}
	c := newCheckedListWatch(lw, &v1alpha1.ExternalWorkload{}, "workloads", m.forSource("workloads"))
	w, err := c.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errEvent := func(msg string) watch.Event {
		st := apierrors.NewInternalError(errors.New(msg)).Status()
		return watch.Event{Type: watch.Error, Object: &st}
	}
	inner.result <- errEvent("the source failed")
	if e := <-w.ResultChan(); e.Type != watch.Error {
		t.Fatalf("got a %s event, want the ERROR event passed on", e.Type)
	}
	if got := metricstest.CounterValue(t, m.WatchErrors.WithLabelValues("workloads")); got != 1 {
		t.Fatalf("watch errors after an ERROR event = %v, want 1", got)
	}

	w.Stop()
	select {
	case inner.result <- errEvent("read on closed response body"):
	case <-time.After(10 * time.Second):
		t.Fatal("the stopped watch did not take the teardown error")
	}
	close(inner.result)
	select {
	case e, ok := <-w.ResultChan():
		if ok {
			t.Errorf("a stopped watch passed on a %s event", e.Type)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stopped watch's channel was not closed")
	}
	if got := metricstest.CounterValue(t, m.WatchErrors.WithLabelValues("workloads")); got != 1 {
		t.Errorf("watch errors after the stop = %v, want still 1", got)
	}
}
