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

package twolevel

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Event reasons the handler reports on Nodes.
const (
	ReasonGrantExceeded        = "GrantExceeded"
	ReasonGrantExceededCleared = "GrantExceededCleared"
	// ReasonGrantEviction is reported, on the node whose grant is
	// exceeded, for every pod evicted to give capacity back there; for a
	// member of a gang evicted whole the pod may run on another node.
	ReasonGrantEviction = "GrantEviction"
	// ReasonGrantGangEviction is reported once per gang the handler
	// evicts whole, on the node whose grant made it go, naming the gang.
	ReasonGrantGangEviction = "GrantGangEviction"
	// ReasonGrantEvictionRefused (Warning) says that members of a gang
	// being evicted whole could not be evicted yet (a
	// PodDisruptionBudget, or the API server); they are asked again.
	ReasonGrantEvictionRefused = "GrantEvictionRefused"
)

// reportEvery is how often an exceeded grant is reported again while it
// lasts; the Events API folds the repeats into a series.
const reportEvery = time.Minute

// evictionRetry is how long the handler waits before it asks again to
// evict a pod it asked for already.
const evictionRetry = 30 * time.Second

// Run implements eventhandlers.Runner: it enforces grant expiry and looks
// after nodes whose grant this scheduler's pods exceed, until ctx is done.
// It runs the embedded default handler's Run beside (the status of gang
// dialects' PodGroups, when enabled).
func (h *Handler) Run(ctx context.Context) {
	go h.Handler.Run(ctx)
	logger := klog.FromContext(ctx).WithValues("handler", Name, "framework", h.framework)
	var recorder events.EventRecorder
	if h.client != nil {
		b := events.NewBroadcaster(&events.EventSinkImpl{Interface: h.client.EventsV1()})
		if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
			logger.Error(err, "Starting event recording; exceeded grants are only logged")
		} else {
			defer b.Shutdown()
			recorder = b.NewRecorder(scheme.Scheme, "batch-scheduler-"+Name)
		}
	}
	w := newWatcher(h, recorder)
	if h.evict && w.jobs == nil {
		logger.Error(nil, "The cache cannot list a gang's members (eventhandlers.JobSource); members of gangs are never evicted above a grant, only pods of no gang")
	}
	check := h.clock.NewTicker(h.checkInterval)
	defer check.Stop()
	for {
		var expiry <-chan time.Time
		var timer clock.Timer
		next := h.nextExpiry()
		if !next.IsZero() {
			timer = h.clock.NewTimer(next.Sub(h.clock.Now()))
			expiry = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-h.wake:
		case <-expiry:
		case <-check.C():
			w.check(ctx)
		}
		if timer != nil {
			timer.Stop()
		}
		// Whichever case woke the loop, an expiry that is due is handled
		// now: the timer may have fired while another case was taken.
		if !next.IsZero() && !h.clock.Now().Before(next) {
			h.expire()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// watcher follows the nodes whose grant is exceeded and, with
// evictOnRevoke, gives the capacity back by evicting. Only Run's goroutine
// uses it, so it needs no lock.
type watcher struct {
	h        *Handler
	recorder events.EventRecorder
	// jobs reads a gang's members and quorum; nil when the cache does not
	// implement eventhandlers.JobSource, and then no gang member is ever
	// evicted.
	jobs eventhandlers.JobSource
	// exceeded holds the nodes known exceeded, by name.
	exceeded map[string]reported
	// evicting maps pods asked to be evicted to when they were asked. Such
	// a pod counts as gone until evictionRetry has passed.
	evicting map[types.UID]time.Time
	// draining holds the gangs being evicted whole, by job.
	draining map[framework.JobID]*drain
	// looked holds the jobs read during the current check (nil for a job
	// the cache does not have), so that each is read once per check.
	looked map[framework.JobID]*framework.JobInfo
}

// reported is a node whose exceeded grant was reported, and when.
type reported struct {
	node *v1.Node
	at   time.Time
}

// drain is a gang the handler decided to evict whole.
type drain struct {
	// node is the node whose grant made the gang go; its Events are
	// reported there.
	node *v1.Node
	// since is when the decision was taken.
	since time.Time
	// begun is set once the eviction of a member was accepted (or found
	// the member gone): from then on the rest of the gang is asked again
	// until none of it runs, even if the node no longer needs it, since a
	// gang left below its quorum is worse than one evicted whole. A drain
	// that has not begun (every eviction refused) is dropped after
	// evictionRetry, and the node's check decides again.
	begun bool
}

func newWatcher(h *Handler, recorder events.EventRecorder) *watcher {
	w := &watcher{
		h:        h,
		recorder: recorder,
		exceeded: map[string]reported{},
		evicting: map[types.UID]time.Time{},
		draining: map[framework.JobID]*drain{},
		looked:   map[framework.JobID]*framework.JobInfo{},
	}
	w.jobs, _ = h.cache.(eventhandlers.JobSource)
	return w
}

func (w *watcher) check(ctx context.Context) {
	logger := klog.FromContext(ctx)
	now := w.h.clock.Now()
	for uid, at := range w.evicting {
		if now.Sub(at) >= evictionRetry {
			delete(w.evicting, uid)
		}
	}
	clear(w.looked)
	if w.h.evict && w.h.client != nil {
		w.continueDrains(ctx, now)
	}
	seen := map[string]bool{}
	for _, e := range w.h.cache.CapExceededNodes() {
		name := e.Node.Name
		seen[name] = true
		if last, ok := w.exceeded[name]; !ok || now.Sub(last.at) >= reportEvery {
			w.exceeded[name] = reported{node: e.Node, at: now}
			logger.Info("This scheduler's pods exceed their grant on a node; nothing new goes there until it clears",
				"node", klog.KObj(e.Node), "cap", e.Cap, "used", e.Used, "pods", len(e.Pods))
			w.event(e.Node, v1.EventTypeWarning, ReasonGrantExceeded,
				fmt.Sprintf("pods of framework %s request %s, above its grant of %s", w.h.framework, e.Used, e.Cap))
		}
		if w.h.evict {
			w.evictAbove(ctx, e)
		}
	}
	for name, r := range w.exceeded {
		if !seen[name] {
			delete(w.exceeded, name)
			logger.Info("Grant no longer exceeded on node", "node", klog.KObj(r.node))
			w.event(r.node, v1.EventTypeNormal, ReasonGrantExceededCleared,
				fmt.Sprintf("pods of framework %s are within its grant again", w.h.framework))
		}
	}
}

func (w *watcher) event(node *v1.Node, typ, reason, note string) {
	if w.recorder == nil {
		return
	}
	w.recorder.Eventf(node, nil, typ, reason, "Schedule", "%s", note)
}
