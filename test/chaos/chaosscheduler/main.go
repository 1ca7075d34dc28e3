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

// Command chaosscheduler is batch-scheduler with one more event handler,
// "chaos", for the chaos suite (test/chaos): the default handler, made to
// misbehave on purpose. It is built as a vendor would build theirs, with
// app.NewSchedulerCommand(app.WithEventHandler(...)); with
// --event-handler=default it is the stock scheduler.
//
// The chaos handler reads two environment variables:
//   - CHAOS_PANIC_LABEL: a label key; adding or updating a pod or a node
//     that carries it panics (the dispatcher must recover, log the
//     object's key and count it);
//   - CHAOS_HANDLER_DELAY: a duration (e.g. 100ms) every pod and node
//     event takes before the default handler sees it.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
)

// handler is the default handler with a panic on labelled pods and nodes
// and a delay on every pod and node event.
type handler struct {
	*defaulthandler.Handler
	panicLabel string
	delay      time.Duration
}

func newHandler(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
	h := &handler{panicLabel: os.Getenv("CHAOS_PANIC_LABEL")}
	if d := os.Getenv("CHAOS_HANDLER_DELAY"); d != "" {
		var err error
		if h.delay, err = time.ParseDuration(d); err != nil {
			return nil, fmt.Errorf("CHAOS_HANDLER_DELAY=%q: %w", d, err)
		}
	}
	def, err := defaulthandler.New(ctx, c, cfg, rc)
	if err != nil {
		return nil, fmt.Errorf("building the default handler under the chaos handler: %w", err)
	}
	h.Handler = def
	return h, nil
}

// before delays the event and panics if obj carries the panic label.
func (h *handler) before(obj any, mayPanic bool) {
	if h.delay > 0 {
		time.Sleep(h.delay)
	}
	if !mayPanic || h.panicLabel == "" {
		return
	}
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	var labels map[string]string
	switch o := obj.(type) {
	case *v1.Pod:
		labels = o.Labels
	case *v1.Node:
		labels = o.Labels
	}
	if _, found := labels[h.panicLabel]; found {
		panic(fmt.Sprintf("chaos handler: object labelled %s", h.panicLabel))
	}
}

func (h *handler) AddPod(obj any)            { h.before(obj, true); h.Handler.AddPod(obj) }
func (h *handler) UpdatePod(oldObj, obj any) { h.before(obj, true); h.Handler.UpdatePod(oldObj, obj) }
func (h *handler) DeletePod(obj any)         { h.before(obj, false); h.Handler.DeletePod(obj) }
func (h *handler) AddNode(obj any)           { h.before(obj, true); h.Handler.AddNode(obj) }
func (h *handler) UpdateNode(oldObj, obj any) {
	h.before(obj, true)
	h.Handler.UpdateNode(oldObj, obj)
}
func (h *handler) DeleteNode(obj any) { h.before(obj, false); h.Handler.DeleteNode(obj) }

func main() {
	os.Exit(app.Execute(app.NewSchedulerCommand(app.WithEventHandler("chaos", newHandler))))
}
