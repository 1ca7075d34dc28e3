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

package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// Client reads and writes NodeLedgers: the generated clientset's
// NodeLedgerInterface satisfies it.
type Client interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.NodeLedger, error)
	Create(ctx context.Context, l *v1alpha1.NodeLedger, opts metav1.CreateOptions) (*v1alpha1.NodeLedger, error)
	Update(ctx context.Context, l *v1alpha1.NodeLedger, opts metav1.UpdateOptions) (*v1alpha1.NodeLedger, error)
}

// Change edits a node's ledger for one commit. It gets a copy of the
// ledger as it will be written, with the changes committed before it in
// the same batch applied, and edits it in place; an error rejects the
// change, and Commit returns that error (the copy is then dropped). It
// runs again on each attempt of its batch, against the ledger read then.
type Change func(l *v1alpha1.NodeLedger) error

// Mode says what Commit does on a node that has no ledger yet.
type Mode int

const (
	// Existing fails with ErrNoLedger when the node has no ledger.
	Existing Mode = iota
	// Create creates the ledger when the node has none.
	Create
)

// ErrNoLedger is returned by Commit in mode Existing for a node without a
// ledger.
var ErrNoLedger = errors.New("the node has no ledger")

// ErrConflicts is returned when a batch met a conflict on each of its
// attempts.
var ErrConflicts = errors.New("too many conflicting writes")

// DefaultMaxAttempts is how many times a batch is written before Commit
// gives up with ErrConflicts.
const DefaultMaxAttempts = 20

// callTimeout bounds each API call of a batch. A batch runs apart from
// the callers' contexts, since its changes are theirs together.
const callTimeout = 20 * time.Second

// Ledgers commits changes to the ledgers of nodes. Its methods are safe
// for concurrent use.
type Ledgers struct {
	client      Client
	maxAttempts int

	// mu guards nodes (see the package documentation).
	mu    sync.Mutex
	nodes map[string]*node
}

// node is what a Ledgers keeps for one node's ledger.
type node struct {
	// last is the ledger as last read or written, nil when unknown or
	// absent; absent says the node was last seen without one.
	last    *v1alpha1.NodeLedger
	absent  bool
	queue   []*request
	writing bool
	// forgotten counts the Forget calls: a batch that was being written
	// when one came does not record what it saw, which may be the very
	// copy the placer learned is stale (its commits are answered before
	// the drain records the ledger).
	forgotten uint64
}

// request is one Commit waiting for its batch.
type request struct {
	change Change
	mode   Mode
	done   chan error
}

// Option configures New.
type Option func(*Ledgers)

// WithMaxAttempts sets how many times a batch is written through
// conflicts before its commits fail with ErrConflicts.
func WithMaxAttempts(n int) Option { return func(l *Ledgers) { l.maxAttempts = n } }

// New returns a Ledgers writing through client.
func New(client Client, opts ...Option) *Ledgers {
	l := &Ledgers{client: client, maxAttempts: DefaultMaxAttempts, nodes: map[string]*node{}}
	for _, o := range opts {
		o(l)
	}
	if l.maxAttempts < 1 {
		l.maxAttempts = 1
	}
	return l
}

// Commit applies change to nodeName's ledger and writes it, together with
// the changes other goroutines commit to the same node meanwhile. It
// returns nil once a write holding the change succeeded; the change's own
// error if it rejected (wrapped, so errors.Is and errors.As see it);
// ErrNoLedger in mode Existing when the node has none; ErrConflicts; or
// the API server's error.
//
// When ctx ends first Commit returns ctx's error, and the change may
// still be written: a caller that undoes its change on failure must undo
// it then too.
func (l *Ledgers) Commit(ctx context.Context, nodeName string, mode Mode, change Change) error {
	if nodeName == "" {
		return errors.New("committing to a ledger: empty node name")
	}
	r := &request{change: change, mode: mode, done: make(chan error, 1)}
	l.mu.Lock()
	n := l.nodes[nodeName]
	if n == nil {
		n = &node{}
		l.nodes[nodeName] = n
	}
	n.queue = append(n.queue, r)
	lead := !n.writing
	n.writing = true
	l.mu.Unlock()
	if lead {
		go l.drain(klog.FromContext(ctx), nodeName, n)
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("committing to the ledger of node %s: %w", nodeName, ctx.Err())
	}
}

// Forget drops what l remembers of nodeName's ledger: the next commit
// reads it again. A placer calls it when it learns the ledger changed.
func (l *Ledgers) Forget(nodeName string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.nodes[nodeName]; n != nil {
		n.last, n.absent = nil, false
		n.forgotten++
		if !n.writing && len(n.queue) == 0 {
			delete(l.nodes, nodeName)
		}
	}
}

// Get returns a copy of nodeName's ledger as last seen, reading it from
// the API server if it is not known; nil, nil when the node has none.
func (l *Ledgers) Get(ctx context.Context, nodeName string) (*v1alpha1.NodeLedger, error) {
	l.mu.Lock()
	if n := l.nodes[nodeName]; n != nil && (n.last != nil || n.absent) {
		defer l.mu.Unlock()
		if n.absent {
			return nil, nil
		}
		return n.last.DeepCopy(), nil
	}
	l.mu.Unlock()
	cur, err := l.read(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	l.remember(nodeName, cur)
	if cur == nil {
		return nil, nil
	}
	return cur.DeepCopy(), nil
}

// remember records cur (nil: no ledger) as nodeName's last seen ledger.
func (l *Ledgers) remember(nodeName string, cur *v1alpha1.NodeLedger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.nodes[nodeName]
	if n == nil {
		n = &node{}
		l.nodes[nodeName] = n
	}
	n.last, n.absent = cur, cur == nil
}

// read gets nodeName's ledger from the API server; nil when there is none.
func (l *Ledgers) read(ctx context.Context, nodeName string) (*v1alpha1.NodeLedger, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cur, err := l.client.Get(ctx, nodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the ledger of node %s: %w", nodeName, err)
	}
	if errs := v1alpha1.ValidateNodeLedger(cur); len(errs) > 0 {
		// Fail closed: a ledger nobody can read is not committed to.
		return nil, fmt.Errorf("the ledger of node %s is invalid: %w", nodeName, errs.ToAggregate())
	}
	return cur, nil
}

// drain writes the node's queued changes, batch after batch, until the
// queue is empty.
func (l *Ledgers) drain(logger klog.Logger, nodeName string, n *node) {
	ctx := klog.NewContext(context.Background(), logger)
	for {
		l.mu.Lock()
		batch := n.queue
		n.queue = nil
		if len(batch) == 0 {
			n.writing = false
			l.mu.Unlock()
			return
		}
		last, absent, forgotten := n.last, n.absent, n.forgotten
		l.mu.Unlock()
		written, known := l.write(ctx, nodeName, last, absent, batch)
		l.mu.Lock()
		if n.forgotten == forgotten {
			n.last, n.absent = written, known && written == nil
		}
		l.mu.Unlock()
	}
}

// write commits one batch, answering each request, and returns the ledger
// as last seen (known false when it is not known).
func (l *Ledgers) write(ctx context.Context, nodeName string, last *v1alpha1.NodeLedger, absent bool, batch []*request) (*v1alpha1.NodeLedger, bool) {
	logger := klog.FromContext(ctx)
	cur, known := last, last != nil || absent
	var lastErr error
	for attempt := 1; attempt <= l.maxAttempts; attempt++ {
		if !known {
			var err error
			if cur, err = l.read(ctx, nodeName); err != nil {
				answerAll(batch, err)
				return nil, false
			}
			known = true
		}
		next, accepted, rejected := apply(nodeName, cur, batch)
		for r, err := range rejected {
			r.done <- err
		}
		batch = accepted
		if len(batch) == 0 {
			return cur, true
		}
		if cur != nil && equality.Semantic.DeepEqual(cur.Spec, next.Spec) {
			answerAll(batch, nil)
			return cur, true
		}
		if errs := v1alpha1.ValidateNodeLedger(next); len(errs) > 0 {
			answerAll(batch, fmt.Errorf("the ledger of node %s would be invalid: %w", nodeName, errs.ToAggregate()))
			return cur, true
		}
		callCtx, cancel := context.WithTimeout(ctx, callTimeout)
		var written *v1alpha1.NodeLedger
		var err error
		if cur == nil {
			written, err = l.client.Create(callCtx, next, metav1.CreateOptions{})
		} else {
			written, err = l.client.Update(callCtx, next, metav1.UpdateOptions{})
		}
		cancel()
		switch {
		case err == nil:
			answerAll(batch, nil)
			return written, true
		case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err):
			// Another placer wrote first (or created, or deleted the
			// ledger): read it again and decide again.
			logger.V(4).Info("Ledger write conflicted; reading it again", "node", nodeName, "attempt", attempt, "changes", len(batch))
			lastErr = err
			cur, known = nil, false
		default:
			answerAll(batch, fmt.Errorf("writing the ledger of node %s: %w", nodeName, err))
			return nil, false
		}
	}
	answerAll(batch, fmt.Errorf("writing the ledger of node %s: %w (%d attempts; last: %v)", nodeName, ErrConflicts, l.maxAttempts, lastErr))
	return nil, false
}

// apply runs each request's change on the ledger cur (nil: the node has
// none), in order, and returns the ledger to write, the requests whose
// changes it holds and the rejected ones with their errors.
func apply(nodeName string, cur *v1alpha1.NodeLedger, batch []*request) (*v1alpha1.NodeLedger, []*request, map[*request]error) {
	// next is the ledger with the accepted changes; each change gets a
	// copy of it (of cur, before any), so that one it rejects leaves no
	// trace and cur, the caller's, is never changed.
	next := cur
	var accepted []*request
	rejected := map[*request]error{}
	for _, r := range batch {
		base := next
		if base == nil {
			if r.mode != Create {
				rejected[r] = fmt.Errorf("node %s: %w", nodeName, ErrNoLedger)
				continue
			}
			base = &v1alpha1.NodeLedger{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
		}
		trial := base.DeepCopy()
		if err := r.change(trial); err != nil {
			rejected[r] = fmt.Errorf("node %s: %w", nodeName, err)
			continue
		}
		next = trial
		accepted = append(accepted, r)
	}
	return next, accepted, rejected
}

func answerAll(batch []*request, err error) {
	for _, r := range batch {
		r.done <- err
	}
}
