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

// Package resourcemanager is a server-side helper for external resource
// managers written in Go that publish objects to batch-scheduler's custom
// informers (pkg/custominformer) over the Kubernetes list/watch JSON
// protocol.
//
// A Store holds the objects of one resource type. Create, Update and Delete
// stamp every change with a monotonically increasing resourceVersion and
// record it in a bounded event history; Handler serves
//
//	GET <base>                              list (all namespaces)
//	GET <base>?watch=true&resourceVersion=N watch
//	GET <prefix>/namespaces/{ns}/<resource> list / watch of one namespace
//
// where <base> is /api/v1/<resource> for the core group and
// /apis/<group>/<version>/<resource> otherwise (see Store.Path).
//
// Watch semantics follow the apiserver closely enough for client-go's
// reflector:
//   - resourceVersion "" or "0" starts with synthetic ADDED events for the
//     current state, then streams live events;
//   - resourceVersion N streams every event after N, replaying it from the
//     history; if events after N have already been dropped from the history,
//     the stream carries a single ERROR event with a metav1.Status of reason
//     Expired and code 410 (what kube-apiserver does), on which the
//     reflector relists;
//   - timeoutSeconds ends the stream cleanly after that long;
//   - allowWatchBookmarks=true gets a BOOKMARK event every
//     Options.BookmarkInterval.
//
// Watchers never block the publisher: each has a buffered channel
// (Options.WatcherBuffer events). A watcher whose buffer is full when an
// event is published is closed: its stream ends without error, and the
// client re-watches from the last resourceVersion it saw, which replays the
// missed events from history or, if they are gone, gets 410 and relists.
//
// List does not paginate: limit and continue are ignored and the full list
// is returned (client-go's pager accepts that). resourceVersionMatch is
// ignored; a list is always the current state, which satisfies every
// match rule except Exact.
//
// The empty store is at resourceVersion Options.InitialResourceVersion (at
// least 1: "0" means "any version" in the protocol, and a reflector that
// lists "0" and then watches from "0" would never see deletions), and the
// first change gets InitialResourceVersion+1. ResourceVersions are not
// persisted. A manager that restarts with fresh state must pass an initial
// resourceVersion above any it served before (for example a timestamp), or
// clients resuming a watch from an old resourceVersion may miss changes.
package resourcemanager

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Defaults for Options.
const (
	DefaultHistorySize   = 1000
	DefaultWatcherBuffer = 100
)

// Options configure New.
type Options struct {
	// GroupVersionKind of the objects, e.g. {Version: "v1", Kind:
	// "ConfigMap"}. Lists are of kind Kind+"List". Required.
	GroupVersionKind schema.GroupVersionKind
	// Resource is the plural lower-case resource name used in paths, e.g.
	// "configmaps". Required.
	Resource string
	// Example is a zero object of the type, used to build BOOKMARK events.
	// Required.
	Example runtime.Object
	// HistorySize is how many events are kept for watch resumption
	// (DefaultHistorySize if zero).
	HistorySize int
	// HistoryPerObject, when positive, makes the history keep at least
	// that many events per stored object, beyond HistorySize, so that the
	// history grows with the store: with 2, a round of changes to every
	// object can be replayed to a watch resuming from before it even when
	// the store holds more than HistorySize objects. When objects are
	// deleted, the history shrinks back, to no less than HistorySize
	// events. Zero (or negative) keeps the history at HistorySize.
	HistoryPerObject int
	// WatcherBuffer is how many events may be queued for one watcher before
	// it is closed as too slow (DefaultWatcherBuffer if zero).
	WatcherBuffer int
	// BookmarkInterval is how often a watch that allows bookmarks gets one.
	// Zero means one minute; negative disables bookmarks.
	BookmarkInterval time.Duration
	// InitialResourceVersion is the resourceVersion of the empty store; the
	// first change gets InitialResourceVersion+1. Values below 1 mean 1.
	InitialResourceVersion int64
}

// event is one change, encoded once as a watch-stream line.
type event struct {
	rv        int64
	namespace string
	line      []byte // {"type":...,"object":...}\n
}

// Store holds the objects of one resource type and serves them over the
// list/watch protocol. It is safe for concurrent use: one mutex (mu)
// guards the objects, the resourceVersion counter, the history and the set
// of watchers. It is held only for in-memory work, never while writing to
// a client.
type Store struct {
	gvk      schema.GroupVersionKind
	gr       schema.GroupResource
	resource string
	example  runtime.Object
	histSize int
	histPer  int // Options.HistoryPerObject; 0 if not positive
	bufSize  int
	bookmark time.Duration

	mu        sync.Mutex
	rv        int64
	objects   map[string]runtime.Object // key namespace/name; stored copies, never mutated
	history   []*event                  // oldest first; bounded by publishLocked
	compacted int64                     // rv of the newest event dropped from history
	watchers  map[*watcher]struct{}
	closed    bool
	slow      int64 // watchers closed for falling behind
}

// watcher is one open watch stream. ch is closed (under Store.mu) when the
// watcher falls behind or the store is closed.
type watcher struct {
	ch chan *event
}

// New returns an empty Store.
func New(opts Options) (*Store, error) {
	if opts.GroupVersionKind.Kind == "" || opts.GroupVersionKind.Version == "" {
		return nil, fmt.Errorf("resourcemanager: GroupVersionKind needs a version and a kind")
	}
	if opts.Resource == "" {
		return nil, fmt.Errorf("resourcemanager: Resource is required")
	}
	if opts.Example == nil {
		return nil, fmt.Errorf("resourcemanager: Example is required")
	}
	if _, err := meta.Accessor(opts.Example); err != nil {
		return nil, fmt.Errorf("resourcemanager: Example has no object metadata: %w", err)
	}
	if opts.HistorySize <= 0 {
		opts.HistorySize = DefaultHistorySize
	}
	if opts.HistoryPerObject < 0 {
		opts.HistoryPerObject = 0
	}
	if opts.WatcherBuffer <= 0 {
		opts.WatcherBuffer = DefaultWatcherBuffer
	}
	if opts.InitialResourceVersion < 1 {
		opts.InitialResourceVersion = 1
	}
	if opts.BookmarkInterval == 0 {
		opts.BookmarkInterval = time.Minute
	}
	return &Store{
		gvk:       opts.GroupVersionKind,
		gr:        schema.GroupResource{Group: opts.GroupVersionKind.Group, Resource: opts.Resource},
		resource:  opts.Resource,
		example:   opts.Example.DeepCopyObject(),
		histSize:  opts.HistorySize,
		histPer:   opts.HistoryPerObject,
		bufSize:   opts.WatcherBuffer,
		bookmark:  opts.BookmarkInterval,
		rv:        opts.InitialResourceVersion,
		compacted: opts.InitialResourceVersion,
		objects:   map[string]runtime.Object{},
		watchers:  map[*watcher]struct{}{},
	}, nil
}

func key(namespace, name string) string { return namespace + "/" + name }

// Create adds obj. It fails with an AlreadyExists error if an object of
// that namespace and name exists. On success obj's resourceVersion is set
// to the new resourceVersion; the store keeps its own copy.
func (s *Store) Create(obj runtime.Object) error {
	return s.write(obj, false)
}

// Update replaces the object of obj's namespace and name. It fails with a
// NotFound error if there is none, and with a Conflict error if obj carries
// a resourceVersion that is not the stored one (an empty resourceVersion
// updates unconditionally). On success obj's resourceVersion is set to the
// new resourceVersion.
func (s *Store) Update(obj runtime.Object) error {
	return s.write(obj, true)
}

func (s *Store) write(obj runtime.Object, update bool) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetName() == "" {
		return apierrors.NewBadRequest("object has no name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("resourcemanager: store is closed")
	}
	k := key(m.GetNamespace(), m.GetName())
	old, exists := s.objects[k]
	typ := "ADDED"
	switch {
	case update && !exists:
		return apierrors.NewNotFound(s.gr, m.GetName())
	case update:
		oldRV := mustAccessor(old).GetResourceVersion()
		if rv := m.GetResourceVersion(); rv != "" && rv != oldRV {
			return apierrors.NewConflict(s.gr, m.GetName(),
				fmt.Errorf("resourceVersion %s is not the current %s", rv, oldRV))
		}
		typ = "MODIFIED"
	case exists:
		return apierrors.NewAlreadyExists(s.gr, m.GetName())
	}
	stored := obj.DeepCopyObject()
	stored.GetObjectKind().SetGroupVersionKind(s.gvk)
	rv := s.rv + 1
	mustAccessor(stored).SetResourceVersion(strconv.FormatInt(rv, 10))
	line, err := encodeEvent(typ, stored)
	if err != nil {
		return err
	}
	s.rv = rv
	s.objects[k] = stored
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	s.publishLocked(&event{rv: rv, namespace: m.GetNamespace(), line: line})
	return nil
}

// Delete removes the object of that namespace and name, publishing a
// DELETED event carrying its last state with a new resourceVersion. It
// fails with a NotFound error if there is none.
func (s *Store) Delete(namespace, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("resourcemanager: store is closed")
	}
	k := key(namespace, name)
	old, ok := s.objects[k]
	if !ok {
		return apierrors.NewNotFound(s.gr, name)
	}
	gone := old.DeepCopyObject()
	rv := s.rv + 1
	mustAccessor(gone).SetResourceVersion(strconv.FormatInt(rv, 10))
	line, err := encodeEvent("DELETED", gone)
	if err != nil {
		return err
	}
	s.rv = rv
	delete(s.objects, k)
	s.publishLocked(&event{rv: rv, namespace: namespace, line: line})
	return nil
}

// Get returns a copy of the object of that namespace and name.
func (s *Store) Get(namespace, name string) (runtime.Object, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key(namespace, name)]
	if !ok {
		return nil, false
	}
	return o.DeepCopyObject(), true
}

// List returns copies of the objects (of one namespace, or all if
// namespace is empty) sorted by namespace/name, and the store's
// resourceVersion.
func (s *Store) List(namespace string) ([]runtime.Object, string) {
	objs, rv := s.snapshot(namespace)
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopyObject()
	}
	return out, strconv.FormatInt(rv, 10)
}

// ResourceVersion returns the store's current resourceVersion.
func (s *Store) ResourceVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strconv.FormatInt(s.rv, 10)
}

// SlowWatchersClosed returns how many watchers were closed for falling
// behind.
func (s *Store) SlowWatchersClosed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slow
}

// Watchers returns the number of open watch streams.
func (s *Store) Watchers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watchers)
}

// Close ends every watch stream and makes further changes fail. Lists keep
// working; new watches end at once.
func (s *Store) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for w := range s.watchers {
		close(w.ch)
		delete(s.watchers, w)
	}
}

// snapshot returns the stored objects (shared, not to be mutated) sorted by
// key, and the resourceVersion they are at.
func (s *Store) snapshot(namespace string) ([]runtime.Object, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked(namespace), s.rv
}

func (s *Store) snapshotLocked(namespace string) []runtime.Object {
	keys := make([]string, 0, len(s.objects))
	for k, o := range s.objects {
		if namespace == "" || mustAccessor(o).GetNamespace() == namespace {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	objs := make([]runtime.Object, len(keys))
	for i, k := range keys {
		objs[i] = s.objects[k]
	}
	return objs
}

// publishLocked records e in the history and hands it to every watcher,
// closing those whose buffer is full. s.mu must be held, and s.objects
// must already reflect the change.
func (s *Store) publishLocked(e *event) {
	// The history's bound: HistorySize, or more with HistoryPerObject. It
	// may have shrunk since the last event (objects deleted), so more
	// than one event may go.
	limit := max(s.histSize, s.histPer*len(s.objects))
	if drop := len(s.history) + 1 - limit; drop > 0 {
		s.compacted = s.history[drop-1].rv
		clear(s.history[:drop])
		s.history = s.history[drop:]
	}
	s.history = append(s.history, e)
	for w := range s.watchers {
		select {
		case w.ch <- e:
		default:
			close(w.ch)
			delete(s.watchers, w)
			s.slow++
		}
	}
}

// errExpired is returned by startWatch when events after the requested
// resourceVersion are no longer in the history.
type errExpired struct {
	requested, oldest int64
	// current is set when requested is newer than the store.
	current int64
}

func (e errExpired) Error() string {
	if e.current > 0 {
		return fmt.Sprintf("resource version %d is newer than the store's %d: it comes from before a restart", e.requested, e.current)
	}
	return fmt.Sprintf("too old resource version: %d (%d)", e.requested, e.oldest)
}

// startWatch registers a watcher. With fromRV < 0 (resourceVersion "" or
// "0") it returns the current objects for synthetic ADDED events;
// otherwise it returns the history events after fromRV. Both are a
// consistent snapshot with the watcher's registration: every later change
// arrives on w.ch.
func (s *Store) startWatch(fromRV int64) (w *watcher, initial []runtime.Object, replay []*event, startRV int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fromRV >= 0 && fromRV < s.compacted {
		return nil, nil, nil, 0, errExpired{requested: fromRV, oldest: s.compacted}
	}
	// A version this store never reached was handed out by an earlier
	// incarnation of the manager (restarted with its versions starting
	// lower): what the client holds cannot be continued, so it must list.
	if fromRV > s.rv {
		return nil, nil, nil, 0, errExpired{requested: fromRV, oldest: s.compacted, current: s.rv}
	}
	w = &watcher{ch: make(chan *event, s.bufSize)}
	if s.closed {
		close(w.ch)
		return w, nil, nil, s.rv, nil
	}
	if fromRV < 0 {
		initial = s.snapshotLocked("")
	} else {
		i := sort.Search(len(s.history), func(i int) bool { return s.history[i].rv > fromRV })
		replay = append([]*event(nil), s.history[i:]...)
	}
	s.watchers[w] = struct{}{}
	return w, initial, replay, s.rv, nil
}

func (s *Store) stopWatch(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watchers[w]; ok {
		delete(s.watchers, w)
		close(w.ch)
	}
}

// bookmarkLine encodes a BOOKMARK event at rv.
func (s *Store) bookmarkLine(rv int64) ([]byte, error) {
	o := s.example.DeepCopyObject()
	o.GetObjectKind().SetGroupVersionKind(s.gvk)
	mustAccessor(o).SetResourceVersion(strconv.FormatInt(rv, 10))
	return encodeEvent("BOOKMARK", o)
}

func mustAccessor(o runtime.Object) metav1.Object {
	m, err := meta.Accessor(o)
	if err != nil {
		panic(err) // objects are checked on the way in
	}
	return m
}

// wireEvent is a watch-stream line, for reading one back.
type wireEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// encodeEvent returns the watch-stream line {"type":typ,"object":obj}.
// The line is assembled around the marshalled object rather than
// marshalled as a whole, which would validate and copy the object's JSON a
// second time. typ is one of the watch event types, which need no
// escaping.
func encodeEvent(typ string, obj any) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(raw)+len(typ)+24)
	line = append(line, `{"type":"`...)
	line = append(line, typ...)
	line = append(line, `","object":`...)
	line = append(line, raw...)
	return append(line, "}\n"...), nil
}
