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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// fileSettleDelay is how long the file source waits after a change
// notification before re-scanning, so that a burst of changes (an editor
// saving, the kubelet swapping a ConfigMap's symlinks) is read once.
const fileSettleDelay = 100 * time.Millisecond

// fileWatch is one watch on an inventory: the store's watch (inner), fed
// by re-scans. Its goroutine (run) owns the change notifications and the
// poll timer, re-scans into the store and forwards the store's events.
type fileWatch struct {
	inv    *inventory
	inner  watch.Interface // the store's watch
	done   <-chan struct{} // of the context the watch was started with
	result chan watch.Event
	stop   chan struct{}
	once   sync.Once

	timeoutC <-chan time.Time // set by run before use
}

// Stop ends the watch; the result channel is closed once the goroutine
// has released the notification watcher and stopped the store's watch. It
// may be called more than once, from any goroutine.
func (w *fileWatch) Stop() { w.once.Do(func() { close(w.stop) }) }

// ResultChan returns the channel the events arrive on.
func (w *fileWatch) ResultChan() <-chan watch.Event { return w.result }

// run forwards the store's events, re-scanning the directory into the
// store on notifications and every poll interval, until the watch ends:
// it is stopped, its context is done, it times out (timeout > 0) or the
// store's watch ends (it timed out too, fell behind, or delivered an
// Expired error).
func (w *fileWatch) run(n *notifier, timeout time.Duration) {
	defer close(w.result)
	defer w.inner.Stop()
	defer n.close()
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		w.timeoutC = t.C
	}
	poll := time.NewTicker(w.inv.poll)
	defer poll.Stop()
	var settle *time.Timer
	defer func() {
		if settle != nil {
			settle.Stop()
		}
	}()
	var settleC <-chan time.Time

	events := w.inner.ResultChan()
	for {
		rescan := false
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			if !w.send(e) {
				return
			}
		case ev, ok := <-n.events():
			if !ok {
				n.lost()
			} else if settleC == nil && n.relevant(ev) {
				settle = time.NewTimer(fileSettleDelay)
				settleC = settle.C
			}
		case err, ok := <-n.errors():
			if !ok {
				n.lost()
				break
			}
			// Typically an overflowed event queue: changes were missed.
			klog.V(2).InfoS("Change notification error; re-scanning", "informer", w.inv.informer,
				"directory", w.inv.dir, "err", err)
			rescan = true
		case <-settleC:
			settleC = nil
			rescan = true
		case <-poll.C:
			rescan = true
		case <-w.timeoutC:
			return
		case <-w.stop:
			return
		case <-w.done:
			return
		}
		if rescan {
			n.ensure()
			_ = w.inv.scan() // logged; the last good state stays
		}
	}
}

// send delivers e unless the watch ends first; false means it ended.
func (w *fileWatch) send(e watch.Event) bool {
	select {
	case w.result <- e:
		return true
	case <-w.timeoutC:
	case <-w.stop:
	case <-w.done:
	}
	return false
}

// notifier asks the kernel, through fsnotify, to report changes in the
// inventory directory. It belongs to one watch goroutine and is not safe
// for concurrent use. Without a watcher (the system refused one) it
// reports nothing, and polling alone finds changes.
type notifier struct {
	inv     *inventory
	w       *fsnotify.Watcher
	watched os.FileInfo // the directory as it was when watched; nil when not watched
}

func (inv *inventory) newNotifier() *notifier {
	n := &notifier{inv: inv}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		klog.ErrorS(err, "Cannot get change notifications; finding changes by polling only",
			"informer", inv.informer, "directory", inv.dir, "pollInterval", inv.poll)
		return n
	}
	n.w = w
	n.ensure()
	return n
}

// ensure watches the directory now at the inventory's path: it may have
// been removed, or replaced by another one, since it was last watched.
func (n *notifier) ensure() {
	if n.w == nil {
		return
	}
	fi, err := os.Stat(n.inv.dir)
	if err == nil && n.watched != nil && os.SameFile(fi, n.watched) {
		return
	}
	if n.watched != nil {
		_ = n.w.Remove(n.inv.dir) // fails if the kernel already dropped it
		n.watched = nil
	}
	if err != nil {
		return // scanning reports it
	}
	if err := n.w.Add(n.inv.dir); err != nil {
		klog.V(2).InfoS("Cannot watch the inventory directory; polling", "informer", n.inv.informer,
			"directory", n.inv.dir, "err", err)
		return
	}
	n.watched = fi
}

// relevant tells whether ev may change what a scan reads: it is about the
// directory itself, a manifest, or a ".."-prefixed entry (the kubelet's
// "..data" symlink and data directories). Other hidden files, such as an
// editor's or a tool's temporary files, are not read.
func (n *notifier) relevant(ev fsnotify.Event) bool {
	if filepath.Clean(ev.Name) == n.inv.dir {
		return true
	}
	base := filepath.Base(ev.Name)
	return strings.HasPrefix(base, "..") || (!strings.HasPrefix(base, ".") && isManifestName(base))
}

func (n *notifier) events() <-chan fsnotify.Event {
	if n.w == nil {
		return nil
	}
	return n.w.Events
}

func (n *notifier) errors() <-chan error {
	if n.w == nil {
		return nil
	}
	return n.w.Errors
}

// lost handles the watcher's channels closing: it gives up notifications.
func (n *notifier) lost() {
	n.close()
	klog.ErrorS(nil, "Change notifications ended; finding changes by polling only",
		"informer", n.inv.informer, "directory", n.inv.dir)
}

// close releases the watcher; it waits for fsnotify's goroutine to end.
func (n *notifier) close() {
	if n.w != nil {
		_ = n.w.Close()
		n.w = nil
	}
}
