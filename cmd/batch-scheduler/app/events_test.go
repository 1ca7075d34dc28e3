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
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr/funcr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func TestCancelledEventWritesAreCountedNotLogged(t *testing.T) {
	var logged []string
	base := funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})
	var n atomic.Int64
	logger := base.WithSink(newCancelledFilter(base.GetSink(), &n)).WithValues("k", "v").WithName("events")

	logger.Error(fmt.Errorf("writing event: %w", context.Canceled), "Unable to write event")
	logger.Error(context.Canceled, "Unable to write event")
	logger.Error(errors.New("the server is on fire"), "Unable to write event")
	logger.Info("unrelated")

	if n.Load() != 2 {
		t.Errorf("cancelled writes counted = %d, want 2", n.Load())
	}
	if len(logged) != 2 || !strings.Contains(logged[0], "on fire") || !strings.Contains(logged[0], `"k"="v"`) {
		t.Errorf("logged %q; want the other error (with the logger's values) and the info line", logged)
	}
}

func TestEventNotesAreBounded(t *testing.T) {
	fake := events.NewFakeRecorder(10)
	r := boundedRecorder{fakeLogger{fake}}
	pod := &v1.Pod{}
	r.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "gang %s is not scheduled", strings.Repeat("x", 30000))
	r.WithLogger(klog.Background()).Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding", "short %d", 1)
	long, short := <-fake.Events, <-fake.Events
	if n := len(long) - len("Warning FailedScheduling "); n > framework.MaxEventNote {
		t.Errorf("note of %d bytes, want at most %d", n, framework.MaxEventNote)
	}
	if short != "Normal Scheduled short 1" {
		t.Errorf("short event = %q", short)
	}
}

// fakeLogger makes a FakeRecorder an EventRecorderLogger.
type fakeLogger struct{ *events.FakeRecorder }

func (f fakeLogger) WithLogger(klog.Logger) events.EventRecorderLogger { return f }
