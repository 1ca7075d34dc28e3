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
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Retry pacing of custom informer sources. After a failure (a list or
// watch that could not be made or was rejected, a watch that ended at once
// without an event) the next attempt waits RetryInitialDelay, doubling
// after each further failure up to RetryMaxDelay; every wait is then
// stretched by a random factor between 1 and 2 (jitter), so consecutive
// attempts at a manager that is down are between 1 and 2 s apart and many
// schedulers do not retry in step. A watch that delivers an event, or that
// lasted at least ShortWatch, resets the pacing.
const (
	// RetryInitialDelay is the pause after the first failure of a run.
	RetryInitialDelay = 250 * time.Millisecond
	// RetryMaxDelay caps the pause before jitter, which stretches it to
	// at most twice as long.
	RetryMaxDelay = time.Second
	// ShortWatch is how long a watch that delivered no event must have
	// lasted for its clean end not to count as a failure.
	ShortWatch = time.Second
)

// errorLogInterval is how often a source that keeps failing with the same
// error is logged at error level; the attempts in between log at V(4).
const errorLogInterval = 30 * time.Second

// retryBackoff is the pacing described at RetryInitialDelay.
var retryBackoff = wait.Backoff{
	Duration: RetryInitialDelay,
	Factor:   2,
	Jitter:   1,
	Steps:    1 << 30,
	Cap:      RetryMaxDelay,
}

// resilientListWatch sits between the informer's reflector and the checked
// source, and keeps the reflector from ever seeing a failure.
//
// client-go's reflector backs off (800 ms doubling to 30 s, plus up to as
// much again of jitter) after every failed list or watch, and after every
// watch that ended with an error or within a second without an event; it
// offers no way to change that for a shared informer. A custom informer
// must instead agree with a manager that comes back within seconds. So:
//   - List retries by itself, paced by retryBackoff, until it succeeds or
//     the informer stops;
//   - Watch returns a stream that survives its source: when the source's
//     watch ends it watches again from the last resourceVersion; on a 410
//     (an HTTP 410 or an ERROR event with code 410), on an error, on a
//     rejected event, or when the source's resourceVersions go backwards
//     (a manager restarted with a lower counter) it lists again and
//     delivers the difference between what the reflector holds and the new
//     list as ADDED, MODIFIED and DELETED events, then a BOOKMARK at the
//     list's resourceVersion. The stream ends only when the reflector
//     stops it.
//
// To compute that difference it keeps what the reflector was given (items,
// rv). The reflector calls List only when no watch of this type is
// running, and Stop waits for the watch's goroutine, so the two never
// update them at the same time; mu guards them anyway, with the failure
// log state.
type resilientListWatch struct {
	lw      cache.ListerWatcherWithContext
	name    string
	example runtime.Object
	m       *sourceMetrics
	backoff wait.Backoff
	// onError, when set before the informer runs, receives every failure
	// (tests use it like a watch error handler).
	onError func(error)

	mu    sync.Mutex
	items map[string]runtime.Object
	rv    string
	fail  failureLog
}

// failureLog is the state of a run of failures, for logging.
type failureLog struct {
	since      time.Time // first failure of the run; zero when healthy
	attempts   int
	lastLogged time.Time
	lastMsg    string
}

var (
	_ cache.ListerWatcher            = (*resilientListWatch)(nil)
	_ cache.ListerWatcherWithContext = (*resilientListWatch)(nil)
)

func newResilientListWatch(lw cache.ListerWatcherWithContext, example runtime.Object, name string, m *sourceMetrics) *resilientListWatch {
	return &resilientListWatch{lw: lw, name: name, example: example, m: m, backoff: retryBackoff}
}

// IsWatchListSemanticsUnSupported tells the reflector to list, then watch.
func (*resilientListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (r *resilientListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

func (r *resilientListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists until it succeeds or ctx is done, and remembers
// the list as what the reflector holds. The list is asked for whole
// (limit and continue are dropped): sources that are not apiservers do not
// paginate, and the difference needs every object.
func (r *resilientListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts.Limit, opts.Continue = 0, ""
	b := r.backoff
	for {
		list, err := r.lw.ListWithContext(ctx, opts)
		if err == nil {
			if err = r.remember(list); err == nil {
				r.recovered()
				// A copy, as for watch events (see send).
				return list.DeepCopyObject(), nil
			}
		}
		if ctx.Err() != nil {
			return nil, err
		}
		r.failed(err, "list")
		if !sleep(ctx, b.Step()) {
			return nil, ctx.Err()
		}
	}
}

// remember makes list what the reflector holds.
func (r *resilientListWatch) remember(list runtime.Object) error {
	items, rv, err := listItems(list)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.items, r.rv = items, rv
	r.mu.Unlock()
	return nil
}

func listItems(list runtime.Object) (map[string]runtime.Object, string, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, "", fmt.Errorf("list from a custom informer source: %w", err)
	}
	// Copies, so that the list's array is not kept alive by a few of them.
	objs, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return nil, "", fmt.Errorf("list from a custom informer source: %w", err)
	}
	items := make(map[string]runtime.Object, len(objs))
	for _, o := range objs {
		key, err := cache.MetaNamespaceKeyFunc(o)
		if err != nil {
			return nil, "", fmt.Errorf("list from a custom informer source: %w", err)
		}
		items[key] = o
	}
	return items, lm.GetResourceVersion(), nil
}

// WatchWithContext returns a watch that lasts until it is stopped or ctx
// is done; see resilientListWatch. It starts from the version of the last
// list or event the reflector was given, which is opts.ResourceVersion;
// opts.TimeoutSeconds is passed on to every watch of the source.
func (r *resilientListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &resilientWatch{result: make(chan watch.Event), cancel: cancel, done: make(chan struct{})}
	go r.run(ctx, w, opts.TimeoutSeconds)
	return w, nil
}

// resilientWatch is the stream the reflector sees.
type resilientWatch struct {
	result chan watch.Event
	cancel context.CancelFunc
	done   chan struct{}
}

// Stop ends the watch and returns once its goroutine has.
func (w *resilientWatch) Stop() {
	w.cancel()
	<-w.done
}

func (w *resilientWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *resilientWatch) send(ctx context.Context, e watch.Event) bool {
	// The reflector gets a copy: its informer's transform changes objects
	// in place, and the list-watch keeps reading the object it sent (its
	// key and version now, its content at the next relist).
	if e.Object != nil {
		e.Object = e.Object.DeepCopyObject()
	}
	select {
	case w.result <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// How a watch of the source ended.
type watchEnd int

const (
	endStopped   watchEnd = iota // the informer stops
	endClosed                    // the stream ended without an error
	endExpired                   // 410: the source no longer has the version
	endBackwards                 // resourceVersions went backwards
	endError                     // an ERROR event or a rejected event
)

func (r *resilientListWatch) run(ctx context.Context, w *resilientWatch, timeoutSeconds *int64) {
	defer close(w.done)
	defer close(w.result)
	b := r.backoff
	relist := false
	// fresh is set by a relist until the next watch delivers an event: a
	// source that answers 410 to the version its own list just gave is
	// failing, not moving on, and is retried with backoff.
	fresh := false
	for ctx.Err() == nil {
		if relist {
			list, err := r.lw.ListWithContext(ctx, metav1.ListOptions{})
			if err == nil {
				err = r.replace(ctx, w, list)
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				r.failed(err, "list")
				if !sleep(ctx, b.Step()) {
					return
				}
				continue
			}
			r.recovered()
			relist, fresh = false, true
		}

		start := time.Now()
		inner, err := r.lw.WatchWithContext(ctx, metav1.ListOptions{
			ResourceVersion:     r.resourceVersion(),
			TimeoutSeconds:      timeoutSeconds,
			AllowWatchBookmarks: true,
		})
		end, n := endError, 0
		if err == nil {
			r.recovered()
			end, n, err = r.forward(ctx, w, inner)
		} else if ctx.Err() != nil {
			return
		} else if isExpired(err) {
			end = endExpired
		}
		if n > 0 || (end == endClosed && time.Since(start) >= ShortWatch) {
			b, fresh = r.backoff, false
		}
		pause := time.Duration(0)
		switch end {
		case endStopped:
			return
		case endClosed:
			if n == 0 && time.Since(start) < ShortWatch {
				pause = b.Step()
			}
		case endExpired, endBackwards:
			klog.V(2).InfoS("Custom informer source no longer serves the informer's resourceVersion; listing again", "informer", r.name, "err", err)
			relist = true
			if fresh {
				pause = b.Step()
			}
		case endError:
			r.failed(err, "watch")
			// A watch that could not be opened resumes from the same
			// version (the source answers 410 if it moved on); a stream
			// that ended with an error lists again.
			relist = inner != nil
			pause = b.Step()
		}
		if relist {
			r.m.relists.Inc()
		}
		if pause > 0 && !sleep(ctx, pause) {
			return
		}
	}
}

// forward passes inner's events on to w, keeping items and rv, until
// inner ends. It returns how it ended, the number of events passed on and
// the error that ended it.
func (r *resilientListWatch) forward(ctx context.Context, w *resilientWatch, inner watch.Interface) (watchEnd, int, error) {
	defer inner.Stop()
	n := 0
	for {
		var e watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return endStopped, n, nil
		case e, ok = <-inner.ResultChan():
		}
		if !ok {
			if ctx.Err() != nil {
				return endStopped, n, nil
			}
			return endClosed, n, nil
		}
		if e.Type == watch.Error {
			if ctx.Err() != nil {
				return endStopped, n, nil
			}
			err := apierrors.FromObject(e.Object)
			if isExpired(err) {
				return endExpired, n, err
			}
			return endError, n, err
		}
		// The check below the source let only objects with metadata
		// and a resourceVersion through.
		m, err := meta.Accessor(e.Object)
		if err != nil {
			return endError, n, fmt.Errorf("%s event from custom informer %q: %w", e.Type, r.name, err)
		}
		if last := r.resourceVersion(); wentBackwards(last, m.GetResourceVersion(), e.Type == watch.Bookmark) {
			return endBackwards, n, fmt.Errorf("%s event from custom informer %q has resourceVersion %s, below the %s already seen: the source restarted",
				e.Type, r.name, m.GetResourceVersion(), last)
		}
		if !w.send(ctx, e) {
			return endStopped, n, nil
		}
		r.apply(e)
		n++
	}
}

// apply records an event the reflector was given.
func (r *resilientListWatch) apply(e watch.Event) {
	m, err := meta.Accessor(e.Object)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rv = m.GetResourceVersion()
	if e.Type == watch.Bookmark {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(e.Object)
	if err != nil {
		return
	}
	if r.items == nil {
		r.items = map[string]runtime.Object{}
	}
	if e.Type == watch.Deleted {
		delete(r.items, key)
	} else {
		r.items[key] = e.Object
	}
}

// replace delivers the difference between what the reflector holds and
// list: additions and changes first (so that usage is never undercounted
// on the way), then deletions of the objects list lacks, each with its
// last known state, then a bookmark at list's resourceVersion. An object
// whose resourceVersion did not change is delivered only if its content
// did (a restarted manager may reuse versions).
func (r *resilientListWatch) replace(ctx context.Context, w *resilientWatch, list runtime.Object) error {
	items, rv, err := listItems(list)
	if err != nil {
		return err
	}
	r.mu.Lock()
	old := r.items
	r.mu.Unlock()
	var events []watch.Event
	for _, key := range sortedKeys(items) {
		o, had := old[key]
		switch {
		case !had:
			events = append(events, watch.Event{Type: watch.Added, Object: items[key]})
		case !sameObject(o, items[key]):
			events = append(events, watch.Event{Type: watch.Modified, Object: items[key]})
		}
	}
	for _, key := range sortedKeys(old) {
		if _, ok := items[key]; !ok {
			events = append(events, watch.Event{Type: watch.Deleted, Object: old[key]})
		}
	}
	bookmark := r.example.DeepCopyObject()
	if m, err := meta.Accessor(bookmark); err == nil {
		m.SetResourceVersion(rv)
		events = append(events, watch.Event{Type: watch.Bookmark, Object: bookmark})
	}
	for _, e := range events {
		if !w.send(ctx, e) {
			return ctx.Err()
		}
		r.apply(e)
	}
	r.mu.Lock()
	r.rv = rv
	r.mu.Unlock()
	klog.V(2).InfoS("Custom informer listed again", "informer", r.name, "resourceVersion", rv, "objects", len(items), "changes", len(events)-1)
	return nil
}

func sameObject(a, b runtime.Object) bool {
	ma, errA := meta.Accessor(a)
	mb, errB := meta.Accessor(b)
	if errA != nil || errB != nil || ma.GetResourceVersion() != mb.GetResourceVersion() {
		return false
	}
	return equality.Semantic.DeepEqual(a, b)
}

func sortedKeys(m map[string]runtime.Object) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (r *resilientListWatch) resourceVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rv
}

// wentBackwards reports whether next, the resourceVersion of an event, is
// below last when both are decimal integers: a source that restarted with
// a lower counter and, against the protocol, did not answer 410. Other
// events must be above last; a bookmark may repeat it.
func wentBackwards(last, next string, bookmark bool) bool {
	l, err := strconv.ParseUint(last, 10, 64)
	if err != nil {
		return false
	}
	n, err := strconv.ParseUint(next, 10, 64)
	if err != nil {
		return false
	}
	return n < l || (n == l && !bookmark)
}

// isExpired reports whether err says the source no longer serves the
// version asked for, in any of the forms apiservers use.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// failed records one failed attempt and logs it: at error level for the
// first failure of a run, when the error changes, and every
// errorLogInterval; at V(4) otherwise. what is "list" or "watch".
func (r *resilientListWatch) failed(err error, what string) {
	if r.onError != nil {
		r.onError(err)
	}
	now := time.Now()
	r.mu.Lock()
	f := &r.fail
	if f.since.IsZero() {
		f.since = now
	}
	f.attempts++
	msg := err.Error()
	loud := f.attempts == 1 || msg != f.lastMsg || now.Sub(f.lastLogged) >= errorLogInterval
	if loud {
		f.lastLogged, f.lastMsg = now, msg
	}
	attempts, since := f.attempts, f.since
	r.mu.Unlock()
	if !loud {
		klog.V(4).InfoS("Custom informer source failed again", "informer", r.name, "request", what, "err", err, "failures", attempts)
		return
	}
	kv := []any{"informer", r.name, "request", what, "failures", attempts, "failingFor", now.Sub(since).Round(time.Millisecond)}
	switch {
	case isRejected(err) && what == "list":
		klog.ErrorS(err, "Rejected a list from a custom informer source; keeping the previous state", kv...)
	case isRejected(err):
		klog.ErrorS(err, "Rejected a watch event from a custom informer source; the watch ends and the informer lists again", kv...)
	default:
		klog.ErrorS(err, "Custom informer source failed; retrying every 1-2 s", kv...)
	}
}

// recovered ends a run of failures: the source answered.
func (r *resilientListWatch) recovered() {
	r.mu.Lock()
	f := r.fail
	r.fail = failureLog{}
	r.mu.Unlock()
	if !f.since.IsZero() {
		klog.InfoS("Custom informer source answers again", "informer", r.name, "failures", f.attempts,
			"failedFor", time.Since(f.since).Round(time.Millisecond))
	}
}

// sleep waits d or until ctx is done, and reports whether ctx is still
// live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
