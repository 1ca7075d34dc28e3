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

package resourcemanager

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ListerWatcher returns a cache.ListerWatcher over the store for consumers
// in the same process, such as an informer built with custominformer.New:
// no HTTP server and no client are involved. It follows the rules Handler
// follows (see the package documentation):
//   - a list is the current state, at the store's resourceVersion;
//   - a watch from resourceVersion "" or "0" starts with synthetic ADDED
//     events for the current state;
//   - a watch from N replays every event after N from the history; when
//     some of them have been dropped from it, the watch delivers a single
//     ERROR event carrying a metav1.Status of reason Expired and code 410
//     and ends, on which client-go's reflector relists;
//   - TimeoutSeconds ends a watch cleanly after that long, and
//     AllowWatchBookmarks gets a BOOKMARK event every
//     Options.BookmarkInterval;
//   - a watch that falls more than Options.WatcherBuffer events behind, or
//     whose store is closed, ends without error.
//
// Label and field selectors, limit and continue are ignored, as by Handler.
// The returned value also reports that it does not support watch-list
// semantics (IsWatchListSemanticsUnSupported), so that a reflector never
// tries streaming lists on it.
//
// Objects are handed out as the Go type scheme has for the store's
// GroupVersionKind, with that apiVersion and kind set, and lists as the
// type of Kind+"List"; scheme must know both. Each object is the caller's
// own copy.
//
// Each watch runs one goroutine. It ends when the watch is stopped, when
// the context given to WatchWithContext is done, when the watch times out,
// falls behind or the store is closed; it unregisters from the store and
// then closes the result channel.
func (s *Store) ListerWatcher(scheme *runtime.Scheme) (cache.ListerWatcher, error) {
	if scheme == nil {
		return nil, fmt.Errorf("resourcemanager: ListerWatcher needs a scheme")
	}
	example, err := scheme.New(s.gvk)
	if err != nil {
		return nil, fmt.Errorf("resourcemanager: scheme has no type for %v: %w", s.gvk, err)
	}
	listGVK := s.gvk.GroupVersion().WithKind(s.gvk.Kind + "List")
	list, err := scheme.New(listGVK)
	if err != nil {
		return nil, fmt.Errorf("resourcemanager: scheme has no list type for %v: %w", s.gvk, err)
	}
	if !meta.IsListType(list) {
		return nil, fmt.Errorf("resourcemanager: %v is not a list type", listGVK)
	}
	return &storeListWatch{s: s, scheme: scheme, listGVK: listGVK, objType: reflect.TypeOf(example)}, nil
}

// storeListWatch is the ListerWatcher returned by Store.ListerWatcher.
type storeListWatch struct {
	s       *Store
	scheme  *runtime.Scheme
	listGVK schema.GroupVersionKind
	objType reflect.Type // Go type of the store's kind in scheme
}

var (
	_ cache.ListerWatcher            = &storeListWatch{}
	_ cache.ListerWatcherWithContext = &storeListWatch{}
)

// IsWatchListSemanticsUnSupported tells client-go's reflector that this
// source cannot stream lists (sendInitialEvents).
func (*storeListWatch) IsWatchListSemanticsUnSupported() bool { return true }

// List implements cache.Lister.
func (l *storeListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWithContext.
func (l *storeListWatch) ListWithContext(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	objs, rv := l.s.snapshot("")
	items := make([]runtime.Object, len(objs))
	for i, o := range objs {
		c, err := l.convert(o)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		items[i] = c
	}
	list, err := l.scheme.New(l.listGVK)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("building %v: %w", l.listGVK, err))
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	la.SetResourceVersion(strconv.FormatInt(rv, 10))
	list.GetObjectKind().SetGroupVersionKind(l.listGVK)
	return list, nil
}

// Watch implements cache.Watcher.
func (l *storeListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// WatchWithContext implements cache.WatcherWithContext. An invalid
// resourceVersion or timeoutSeconds is a BadRequest error.
func (l *storeListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	fromRV := int64(-1)
	if v := opts.ResourceVersion; v != "" && v != "0" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", v))
		}
		fromRV = n
	}
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		if *opts.TimeoutSeconds < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %d", *opts.TimeoutSeconds))
		}
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	wt, initial, replay, startRV, err := l.s.startWatch(fromRV)
	if err != nil {
		// Like Handler (and kube-apiserver): the watch itself is fine and
		// carries one ERROR event, which the reflector turns into a relist.
		st := apierrors.NewResourceExpired(err.Error()).Status()
		st.Kind, st.APIVersion = "Status", "v1"
		return finishedWatch(watch.Event{Type: watch.Error, Object: &st}), nil
	}
	w := &storeWatch{result: make(chan watch.Event), stop: make(chan struct{})}
	p := &storePump{
		l: l, w: w, wt: wt, done: ctx.Done(),
		bookmarks: opts.AllowWatchBookmarks && l.s.bookmark > 0,
		timeout:   timeout,
	}
	go p.run(initial, replay, fromRV, startRV)
	return w, nil
}

// convert returns a copy of the stored object o as the scheme's type.
func (l *storeListWatch) convert(o runtime.Object) (runtime.Object, error) {
	if reflect.TypeOf(o) == l.objType {
		return o.DeepCopyObject(), nil
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", o, err)
	}
	return l.decode(raw)
}

// decode decodes the JSON of one object into a new object of the
// scheme's type.
func (l *storeListWatch) decode(raw []byte) (runtime.Object, error) {
	out, err := l.scheme.New(l.s.gvk)
	if err != nil {
		return nil, err
	}
	if err := utiljson.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("decoding %v: %w", l.s.gvk, err)
	}
	out.GetObjectKind().SetGroupVersionKind(l.s.gvk)
	return out, nil
}

// event turns a recorded event back into a typed watch.Event.
func (l *storeListWatch) event(e *event) (watch.Event, error) {
	var we wireEvent
	if err := json.Unmarshal(e.line, &we); err != nil {
		return watch.Event{}, fmt.Errorf("event at resourceVersion %d: %w", e.rv, err)
	}
	obj, err := l.decode(we.Object)
	if err != nil {
		return watch.Event{}, fmt.Errorf("event at resourceVersion %d: %w", e.rv, err)
	}
	return watch.Event{Type: watch.EventType(we.Type), Object: obj}, nil
}

// storeWatch is the watch.Interface of one in-process watch.
type storeWatch struct {
	result chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

// Stop ends the watch; the result channel is closed soon after. It may be
// called more than once, from any goroutine.
func (w *storeWatch) Stop() { w.once.Do(func() { close(w.stop) }) }

// ResultChan returns the channel the events arrive on.
func (w *storeWatch) ResultChan() <-chan watch.Event { return w.result }

// finishedWatch returns a watch that delivers events and ends; it needs no
// goroutine.
func finishedWatch(events ...watch.Event) watch.Interface {
	ch := make(chan watch.Event, len(events))
	for _, e := range events {
		ch <- e
	}
	close(ch)
	return watch.NewProxyWatcher(ch)
}

// storePump is the goroutine of one watch: it moves the store's events to
// the watch's result channel.
type storePump struct {
	l         *storeListWatch
	w         *storeWatch
	wt        *watcher
	done      <-chan struct{} // of the context the watch was started with
	bookmarks bool
	timeout   time.Duration // zero: none
	timeoutC  <-chan time.Time
}

func (p *storePump) run(initial []runtime.Object, replay []*event, fromRV, startRV int64) {
	defer close(p.w.result)
	defer p.l.s.stopWatch(p.wt)
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		p.timeoutC = t.C
	}
	var bookmarks <-chan time.Time
	if p.bookmarks {
		t := time.NewTicker(p.l.s.bookmark)
		defer t.Stop()
		bookmarks = t.C
	}

	lastRV := startRV
	for _, o := range initial {
		obj, err := p.l.convert(o)
		if err != nil {
			p.fail(err)
			return
		}
		if !p.send(watch.Event{Type: watch.Added, Object: obj}) {
			return
		}
	}
	if fromRV >= 0 {
		lastRV = fromRV
	}
	for _, e := range replay {
		lastRV = e.rv
		if !p.forward(e) {
			return
		}
	}
	for {
		select {
		case e, ok := <-p.wt.ch:
			if !ok {
				return // fell behind or store closed: the client re-watches
			}
			if e.rv <= lastRV {
				continue // already replayed
			}
			lastRV = e.rv
			if !p.forward(e) {
				return
			}
		case <-bookmarks:
			o, err := p.l.scheme.New(p.l.s.gvk)
			if err != nil {
				p.fail(err)
				return
			}
			o.GetObjectKind().SetGroupVersionKind(p.l.s.gvk)
			mustAccessor(o).SetResourceVersion(strconv.FormatInt(lastRV, 10))
			if !p.send(watch.Event{Type: watch.Bookmark, Object: o}) {
				return
			}
		case <-p.timeoutC:
			return
		case <-p.w.stop:
			return
		case <-p.done:
			return
		}
	}
}

// forward decodes and sends one recorded event; false means the watch is
// over.
func (p *storePump) forward(e *event) bool {
	we, err := p.l.event(e)
	if err != nil {
		p.fail(err)
		return false
	}
	return p.send(we)
}

// send delivers e unless the watch ends first; false means it ended.
func (p *storePump) send(e watch.Event) bool {
	select {
	case p.w.result <- e:
		return true
	case <-p.timeoutC:
	case <-p.w.stop:
	case <-p.done:
	}
	return false
}

// fail ends the watch with an ERROR event carrying an InternalError.
func (p *storePump) fail(err error) {
	st := apierrors.NewInternalError(err).Status()
	st.Kind, st.APIVersion = "Status", "v1"
	p.send(watch.Event{Type: watch.Error, Object: &st})
}
