package twolevel

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/eviction"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Event reasons the handler reports on Nodes.
const (
	ReasonGrantExceeded        = "GrantExceeded"
	ReasonGrantExceededCleared = "GrantExceededCleared"
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
	w := &watcher{h: h, recorder: recorder, exceeded: map[string]reported{}, evicting: map[types.UID]time.Time{}}
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

// watcher follows the nodes whose grant is exceeded. Only Run's goroutine
// uses it.
type watcher struct {
	h        *Handler
	recorder events.EventRecorder
	// exceeded holds the nodes known exceeded, by name.
	exceeded map[string]reported
	// evicting maps pods asked to be evicted to when they were asked.
	evicting map[types.UID]time.Time
}

// reported is a node whose exceeded grant was reported, and when.
type reported struct {
	node *v1.Node
	at   time.Time
}

func (w *watcher) check(ctx context.Context) {
	logger := klog.FromContext(ctx)
	now := w.h.clock.Now()
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
	for uid, at := range w.evicting {
		if now.Sub(at) >= evictionRetry {
			delete(w.evicting, uid)
		}
	}
}

func (w *watcher) event(node *v1.Node, typ, reason, note string) {
	if w.recorder == nil {
		return
	}
	w.recorder.Eventf(node, nil, typ, reason, "Schedule", "%s", note)
}

// evictAbove evicts this scheduler's pods on e's node, lowest priority
// first and the newest first among equals, until what is left fits the
// cap. Pods whose eviction is already under way count as gone.
func (w *watcher) evictAbove(ctx context.Context, e eventhandlers.CapExceeded) {
	logger := klog.FromContext(ctx)
	if w.h.client == nil {
		return
	}
	pods := append([]*v1.Pod(nil), e.Pods...)
	sort.SliceStable(pods, func(i, j int) bool {
		pi, pj := priority(pods[i]), priority(pods[j])
		if pi != pj {
			return pi < pj
		}
		return pods[j].CreationTimestamp.Before(&pods[i].CreationTimestamp)
	})
	left := e.Used.Clone()
	for _, pod := range pods {
		if withinCap(left, e.Cap) {
			return
		}
		left.Sub(resources.PodRequests(pod))
		if _, asked := w.evicting[pod.UID]; asked {
			continue
		}
		w.evicting[pod.UID] = w.h.clock.Now()
		err := eviction.Evict(ctx, w.h.client, pod)
		switch {
		case err == nil:
			logger.Info("Evicted a pod above its framework's grant", "pod", klog.KObj(pod), "node", e.Node.Name, "priority", priority(pod))
			w.event(e.Node, v1.EventTypeNormal, "GrantEviction", fmt.Sprintf("evicted %s/%s: above the grant of framework %s", pod.Namespace, pod.Name, w.h.framework))
		case errors.Is(err, eviction.ErrGone):
			// Gone already, or replaced by a pod of the same name.
		case eviction.IsRefused(err):
			logger.V(2).Info("Eviction refused for now (a PodDisruptionBudget, or the API server is busy); retrying later",
				"pod", klog.KObj(pod), "node", e.Node.Name, "err", err)
		default:
			logger.Error(err, "Evicting a pod above its framework's grant", "pod", klog.KObj(pod), "node", e.Node.Name)
		}
	}
}

// withinCap reports whether used fits cap in every capped resource (all but
// the pod count).
func withinCap(used, limit resources.Resource) bool {
	used = used.Clone()
	used.Pods = 0
	return limit.Fits(used)
}

func priority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}
