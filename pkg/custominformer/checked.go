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
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// checkedListWatch sits between a source and resilientListWatch. It
// rejects what the informer must not store and counts what passes, every
// failure and every rejection.
//
// Rejection is fail-closed: a list with one invalid item fails whole, so
// the informer keeps its last good state (an ExternalWorkload silently
// dropped would free capacity that is in use), and an invalid watch event
// ends the watch with an ERROR event, after which the informer lists
// again. resilientListWatch, which retries, logs every failure, these
// rejections included.
type checkedListWatch struct {
	lw       cache.ListerWatcherWithContext
	name     string
	wantType reflect.Type
	// wantKind is the kind objects must have if they carry one.
	wantKind schema.GroupVersionKind
	// wantListType is the type lists must have, if known.
	wantListType reflect.Type
	m            *sourceMetrics
}

var (
	_ cache.ListerWatcher            = (*checkedListWatch)(nil)
	_ cache.ListerWatcherWithContext = (*checkedListWatch)(nil)
)

func newCheckedListWatch(lw cache.ListerWatcher, example runtime.Object, name string, m *sourceMetrics) *checkedListWatch {
	c := &checkedListWatch{
		lw:       cache.ToListerWatcherWithContext(lw),
		name:     name,
		wantType: reflect.TypeOf(example),
		m:        m,
	}
	// A vendor's source may produce a type this package's scheme does not
	// know; then only the Go type is checked.
	if gvks, _, err := scheme.ObjectKinds(example); err == nil {
		c.wantKind = gvks[0]
		if l, err := scheme.New(c.wantKind.GroupVersion().WithKind(c.wantKind.Kind + "List")); err == nil {
			c.wantListType = reflect.TypeOf(l)
		}
	}
	return c
}

// IsWatchListSemanticsUnSupported tells the reflector to list, then watch.
func (*checkedListWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (c *checkedListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), opts)
}

func (c *checkedListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), opts)
}

func (c *checkedListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list, err := c.lw.ListWithContext(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			// The informer is stopping; the list broke because of it.
			klog.V(4).InfoS("List of a custom informer source stopped", "informer", c.name, "err", err)
			return nil, err
		}
		// The reason first, as for a watch event: whoever sees the list
		// error counted sees why.
		switch {
		case errors.Is(err, ErrTooLarge):
			c.m.invalid.WithLabelValues(c.name, ReasonTooLarge).Inc()
		case errors.Is(err, ErrNotAList):
			c.m.invalid.WithLabelValues(c.name, ReasonNotAList).Inc()
		}
		c.m.listErrors.Inc()
		return nil, err
	}
	if err := c.checkList(list); err != nil {
		c.m.listErrors.Inc()
		return nil, rejected{err}
	}
	c.m.lastEvent.SetToCurrentTime()
	return list, nil
}

// rejected wraps the error for data the check rejected, which the check
// has counted already.
type rejected struct{ error }

func (r rejected) Unwrap() error { return r.error }

// statusReasonRejected marks the ERROR event that replaces a rejected
// watch event.
const statusReasonRejected metav1.StatusReason = "RejectedByScheduler"

// isRejected reports whether err is for data the check rejected.
func isRejected(err error) bool {
	var r rejected
	return errors.As(err, &r) || apierrors.ReasonForError(err) == statusReasonRejected
}

func (c *checkedListWatch) checkList(list runtime.Object) error {
	// A list of another kind is rejected even when empty, which would
	// otherwise wipe the informer. Generic lists (v1.List, or types this
	// package does not know) are let through: their items are checked.
	// A single object or a Status is no list at all.
	if !meta.IsListType(list) {
		c.m.invalid.WithLabelValues(c.name, ReasonNotAList).Inc()
		if st, ok := list.(*metav1.Status); ok {
			return fmt.Errorf("list from custom informer %q is a *v1.Status (kind \"Status\"), not a list: status %q, reason %q, code %d, message %q",
				c.name, st.Status, st.Reason, st.Code, st.Message)
		}
		kind := list.GetObjectKind().GroupVersionKind().Kind
		return fmt.Errorf("list from custom informer %q is a %T (kind %q), not a list", c.name, list, kind)
	}
	if t := reflect.TypeOf(list); c.wantListType != nil && t != c.wantListType {
		if gvks, _, err := scheme.ObjectKinds(list); err == nil && gvks[0].Kind != "List" {
			c.m.invalid.WithLabelValues(c.name, ReasonWrongType).Inc()
			return fmt.Errorf("list from custom informer %q is a %v (kind %q), want %v", c.name, t, gvks[0].Kind, c.wantListType)
		}
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		c.m.invalid.WithLabelValues(c.name, ReasonNotAList).Inc()
		return fmt.Errorf("list from custom informer %q: %T is not a list: %w", c.name, list, err)
	}
	if lm.GetResourceVersion() == "" {
		c.m.invalid.WithLabelValues(c.name, ReasonMissingResourceVersion).Inc()
		return fmt.Errorf("list from custom informer %q: metadata.resourceVersion is missing", c.name)
	}
	i := 0
	return meta.EachListItem(list, func(item runtime.Object) error {
		defer func() { i++ }()
		if reason, err := c.checkObject(item, false); err != nil {
			c.m.invalid.WithLabelValues(c.name, reason).Inc()
			return fmt.Errorf("list from custom informer %q: item %d: %w", c.name, i, err)
		}
		return nil
	})
}

// checkObject returns why obj may not be stored, as a reason label and an
// error naming the object. Bookmarks need only a resourceVersion.
func (c *checkedListWatch) checkObject(obj runtime.Object, bookmark bool) (string, error) {
	if t := reflect.TypeOf(obj); t != c.wantType {
		kind := ""
		if obj != nil {
			kind = obj.GetObjectKind().GroupVersionKind().Kind
		}
		return ReasonWrongType, fmt.Errorf("object is a %v (kind %q), want %v", t, kind, c.wantType)
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() && !c.wantKind.Empty() && gvk != c.wantKind {
		return ReasonWrongType, fmt.Errorf("object has apiVersion %q and kind %q, want %q and %q",
			gvk.GroupVersion(), gvk.Kind, c.wantKind.GroupVersion(), c.wantKind.Kind)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ReasonWrongType, fmt.Errorf("object has no metadata: %w", err)
	}
	if !bookmark && m.GetName() == "" {
		return ReasonMissingName, fmt.Errorf("object in namespace %q has no metadata.name", m.GetNamespace())
	}
	if m.GetResourceVersion() == "" {
		return ReasonMissingResourceVersion, fmt.Errorf("object %s has no metadata.resourceVersion", klog.KObj(m))
	}
	return "", nil
}

func (c *checkedListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := c.lw.WatchWithContext(ctx, opts)
	if err != nil {
		stopping := ctx.Err() != nil
		cancel()
		if stopping {
			// The informer is stopping; the watch broke because of it.
			klog.V(4).InfoS("Watch of a custom informer source stopped", "informer", c.name, "err", err)
			return nil, err
		}
		c.m.watchErrors.Inc()
		return nil, err
	}
	cw := &checkedWatch{inner: w, result: make(chan watch.Event), ctx: ctx, cancel: cancel}
	go cw.loop(c.checkEvent)
	return cw, nil
}

// checkedWatch passes a source watch's events through checkEvent. Its
// context is done once it is stopped: what the source stream reports
// while it is torn down (a read on the closed response body, say) is then
// the stop, not a failure of the source, and is neither counted as a
// watch error nor left blocking a send nobody receives.
type checkedWatch struct {
	inner  watch.Interface
	result chan watch.Event
	ctx    context.Context
	cancel context.CancelFunc
}

// Stop ends the watch: its context first, then the source's watch.
func (w *checkedWatch) Stop() {
	w.cancel()
	w.inner.Stop()
}

// ResultChan returns the checked events.
func (w *checkedWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *checkedWatch) loop(check func(context.Context, watch.Event) (watch.Event, bool)) {
	defer close(w.result)
	defer w.cancel()
	for e := range w.inner.ResultChan() {
		e, keep := check(w.ctx, e)
		if !keep || w.ctx.Err() != nil {
			// Stopped: the source's channel is drained until it closes.
			continue
		}
		select {
		case w.result <- e:
		case <-w.ctx.Done():
			// Stopped: the source's channel is drained until it closes.
		}
	}
}

// checkEvent counts an event and turns an invalid one into an ERROR event,
// which makes resilientListWatch end the watch and list again. ctx is done
// once the watch is stopped (by its reader or the informer stopping):
// errors are then the stop, not the source failing.
func (c *checkedListWatch) checkEvent(ctx context.Context, e watch.Event) (watch.Event, bool) {
	switch e.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		if reason, err := c.checkObject(e.Object, e.Type == watch.Bookmark); err != nil {
			c.m.invalid.WithLabelValues(c.name, reason).Inc()
			c.m.errorEvents.Inc()
			c.m.watchErrors.Inc()
			err = fmt.Errorf("%s event from custom informer %q: %w", e.Type, c.name, err)
			return errorEvent(err), true
		}
		switch e.Type {
		case watch.Added:
			c.m.added.Inc()
		case watch.Modified:
			c.m.modified.Inc()
		case watch.Deleted:
			c.m.deleted.Inc()
		case watch.Bookmark:
			c.m.bookmark.Inc()
		}
		c.m.lastEvent.Set(float64(time.Now().UnixNano()) / 1e9)
	case watch.Error:
		err := apierrors.FromObject(e.Object)
		if ctx.Err() != nil {
			// The informer is stopping; the stream broke because of it.
			klog.V(4).InfoS("Watch of a custom informer source stopped", "informer", c.name, "err", err)
			return e, true
		}
		if st, ok := e.Object.(*metav1.Status); ok && strings.Contains(st.Message, ErrTooLarge.Error()) {
			c.m.invalid.WithLabelValues(c.name, ReasonTooLarge).Inc()
		}
		c.m.errorEvents.Inc()
		c.m.watchErrors.Inc()
	default:
		c.m.errorEvents.Inc()
		c.m.watchErrors.Inc()
		err := fmt.Errorf("event from custom informer %q has unknown type %q", c.name, e.Type)
		return errorEvent(err), true
	}
	return e, true
}

// errorEvent is the ERROR event that replaces a rejected one. Its reason
// tells resilientListWatch that it is a rejection; like any ERROR event
// but a 410, it makes it list again, after a pause.
func errorEvent(err error) watch.Event {
	return watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
		Reason: statusReasonRejected, Message: err.Error(),
	}}
}
