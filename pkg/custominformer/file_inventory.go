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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// fileHistoryMin is the least number of changes the file source keeps for
// watches that resume from an older resourceVersion (the store's
// HistorySize). It also keeps at least twice as many changes as it has
// objects (HistoryPerObject), so that one re-scan that changes everything
// does not force a relist.
const fileHistoryMin = 1000

// fileErrorRelog is how often a scan error that does not change is logged
// again.
const fileErrorRelog = 5 * time.Minute

// inventory is the ListerWatcher of one file source. The objects read
// from its directory are kept in a resourcemanager.Store, which numbers
// every change with a resourceVersion, records the recent changes for
// watches that resume, and serves lists and watches through its
// in-process ListerWatcher. Each scan diffs the directory into the store,
// writing only what changed, so that only real changes become events.
type inventory struct {
	informer string // the custom informer's name, for logs
	dir      string
	poll     time.Duration
	gvk      schema.GroupVersionKind
	example  runtime.Object
	decoder  runtime.Decoder // strict JSON
	scoped   bool            // whether objects have a namespace
	scopeSet bool            // whether scoped is known for the type

	store *resourcemanager.Store
	lw    cache.ListerWatcherWithContext // the store's

	// scanMu serializes scans, from reading the directory to writing what
	// was read into the store, so that an older reading never replaces a
	// newer one. Lists and the start of watches hold it too, so that what
	// they see of the store is the result of whole scans, never of half
	// of one. It is held during file I/O; the store's own lock is taken
	// under it (by the store's methods), never the other way round.
	scanMu   sync.Mutex
	lastErr  string    // the last scan error logged, "" after a good scan; guarded by scanMu
	loggedAt time.Time // when lastErr was logged; guarded by scanMu
}

var (
	_ cache.ListerWatcher            = &inventory{}
	_ cache.ListerWatcherWithContext = &inventory{}
)

func newInventory(informer, dir string, poll time.Duration, gvk schema.GroupVersionKind, example runtime.Object) (*inventory, error) {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: gvk,
		Resource:         plural.Resource,
		Example:          example,
		HistorySize:      fileHistoryMin,
		HistoryPerObject: 2,
		// A watch falls this far behind only if one scan changes more
		// objects while its consumer is busy; it then ends and the
		// consumer resumes from the history.
		WatcherBuffer: fileHistoryMin,
	})
	if err != nil {
		return nil, fmt.Errorf("inventory store: %w", err)
	}
	lw, err := store.ListerWatcher(scheme)
	if err != nil {
		return nil, fmt.Errorf("inventory store: %w", err)
	}
	scoped, known := fileScopes[gvk.GroupKind()]
	return &inventory{
		informer: informer,
		dir:      dir,
		poll:     poll,
		gvk:      gvk,
		example:  example.DeepCopyObject(),
		decoder: jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme,
			jsonserializer.SerializerOptions{Strict: true}),
		scoped:   scoped,
		scopeSet: known,
		store:    store,
		lw:       cache.ToListerWatcherWithContext(lw),
	}, nil
}

// IsWatchListSemanticsUnSupported tells client-go's reflector that this
// source cannot stream lists (sendInitialEvents).
func (*inventory) IsWatchListSemanticsUnSupported() bool { return true }

// List implements cache.Lister.
func (inv *inventory) List(opts metav1.ListOptions) (runtime.Object, error) {
	return inv.ListWithContext(context.Background(), opts)
}

// ListWithContext re-scans the directory and returns the objects, sorted
// by namespace/name, at the resulting resourceVersion. If the scan fails,
// so does the list, and the state is unchanged.
func (inv *inventory) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	inv.scanMu.Lock()
	defer inv.scanMu.Unlock()
	if err := inv.scanLocked(); err != nil {
		return nil, err
	}
	return inv.lw.ListWithContext(ctx, opts)
}

// Watch implements cache.Watcher.
func (inv *inventory) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return inv.WatchWithContext(context.Background(), opts)
}

// WatchWithContext re-scans the directory and starts a watch of the
// store, with the store's rules (resourcemanager.Store.ListerWatcher):
// from resourceVersion "" or "0" it begins with synthetic ADDED events for
// the current state; from N it delivers every change after N, or, if some
// are no longer recorded (or N was never issued), a single ERROR event of
// reason Expired (410), as kube-apiserver does. TimeoutSeconds ends it
// cleanly and AllowWatchBookmarks gets periodic bookmarks; selectors are
// not supported (and not needed by informers). An invalid resourceVersion
// or timeoutSeconds is a BadRequest error. Until the watch is stopped, ctx
// is done, it times out or the store's watch ends, its goroutine runs the
// directory's change notifications and polling, re-scanning into the
// store, and forwards the store's events.
func (inv *inventory) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	// Watch the directory first, then scan: a change made in between is
	// seen by the scan, and any later one is notified.
	n := inv.newNotifier()
	inv.scanMu.Lock()
	_ = inv.scanLocked() // logged; the last good state stays
	inner, err := inv.lw.WatchWithContext(ctx, opts)
	inv.scanMu.Unlock()
	if err != nil {
		n.close()
		return nil, err
	}
	w := &fileWatch{
		inv:    inv,
		inner:  inner,
		done:   ctx.Done(),
		result: make(chan watch.Event),
		stop:   make(chan struct{}),
	}
	var timeout time.Duration
	if ts := opts.TimeoutSeconds; ts != nil { // not negative: the store accepted it
		timeout = time.Duration(*ts) * time.Second
	}
	go w.run(n, timeout)
	return w, nil
}

// scan reads the directory and writes what changed into the store. On
// error the store is unchanged; the error is logged (once while it stays
// the same, and again every fileErrorRelog) and returned.
func (inv *inventory) scan() error {
	inv.scanMu.Lock()
	defer inv.scanMu.Unlock()
	return inv.scanLocked()
}

// scanLocked is scan; inv.scanMu must be held.
func (inv *inventory) scanLocked() error {
	desired, err := inv.read()
	if err != nil {
		if msg := err.Error(); msg != inv.lastErr || time.Since(inv.loggedAt) >= fileErrorRelog {
			klog.ErrorS(err, "Rejected the inventory directory; keeping the last good state",
				"informer", inv.informer, "directory", inv.dir)
			inv.lastErr, inv.loggedAt = msg, time.Now()
		}
		return err
	}
	if inv.lastErr != "" {
		klog.InfoS("Inventory directory is valid again", "informer", inv.informer, "directory", inv.dir)
		inv.lastErr = ""
	}
	added, updated, deleted, err := inv.apply(desired)
	if err != nil {
		err = fmt.Errorf("inventory directory %s: %w", inv.dir, err)
		klog.ErrorS(err, "Could not record the inventory directory's changes", "informer", inv.informer,
			"directory", inv.dir, "added", added, "updated", updated, "deleted", deleted)
		return err
	}
	if added+updated+deleted > 0 {
		klog.V(2).InfoS("Inventory directory changed", "informer", inv.informer, "directory", inv.dir,
			"added", added, "updated", updated, "deleted", deleted, "resourceVersion", inv.store.ResourceVersion())
	}
	return nil
}

// apply makes the store hold what desired (objects by key, owned by the
// callee) holds, writing, in key order, only the objects that changed. A
// new object gets a UID and a creationTimestamp unless the file gives
// them; a changed one keeps the stored object's unless the file gives
// them. inv.scanMu must be held: nothing else writes to the store.
func (inv *inventory) apply(desired map[string]runtime.Object) (added, updated, deleted int, err error) {
	objs, _ := inv.store.List("")
	current := make(map[string]runtime.Object, len(objs)) // the store's copies
	keys := make([]string, 0, len(desired)+len(objs))
	for k := range desired {
		keys = append(keys, k)
	}
	for _, o := range objs {
		m := mustMeta(o)
		k := m.GetNamespace() + "/" + m.GetName()
		current[k] = o
		if _, ok := desired[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	now := metav1.Now().Rfc3339Copy()
	for _, k := range keys {
		old, had := current[k]
		obj, want := desired[k]
		switch {
		case !want:
			om := mustMeta(old)
			if err := inv.store.Delete(om.GetNamespace(), om.GetName()); err != nil {
				return added, updated, deleted, fmt.Errorf("deleting %s %s: %w", inv.gvk.Kind, objectName(om), err)
			}
			deleted++
		case !had:
			m := mustMeta(obj)
			if m.GetUID() == "" {
				m.SetUID(uuid.NewUUID())
			}
			if ts := m.GetCreationTimestamp(); ts.IsZero() {
				m.SetCreationTimestamp(now)
			}
			if err := inv.store.Create(obj); err != nil {
				return added, updated, deleted, fmt.Errorf("adding %s %s: %w", inv.gvk.Kind, objectName(m), err)
			}
			added++
		default:
			m, om := mustMeta(obj), mustMeta(old)
			if m.GetUID() == "" {
				m.SetUID(om.GetUID())
			}
			if ts := m.GetCreationTimestamp(); ts.IsZero() {
				m.SetCreationTimestamp(om.GetCreationTimestamp())
			}
			// The store's resourceVersion makes the update conditional
			// (it cannot conflict: nothing else writes), and takes it out
			// of the comparison; so does clearing the apiVersion and kind
			// the store sets on what it keeps.
			m.SetResourceVersion(om.GetResourceVersion())
			old.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			if equality.Semantic.DeepEqual(old, obj) {
				continue
			}
			if err := inv.store.Update(obj); err != nil {
				return added, updated, deleted, fmt.Errorf("updating %s %s: %w", inv.gvk.Kind, objectName(m), err)
			}
			updated++
		}
	}
	return added, updated, deleted, nil
}

func mustMeta(o runtime.Object) metav1.Object {
	m, err := meta.Accessor(o)
	if err != nil {
		panic(err) // every object is of a registered API type
	}
	return m
}
