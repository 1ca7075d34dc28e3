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

package scheduler

import (
	"context"
	"errors"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// initialBindLimit is where the adaptive bind limit starts (or the
// maximum, if lower): the fixed concurrency of earlier versions.
const initialBindLimit = 16

// bindLimiter bounds the API calls of the binds (and of the status writes
// and evictions that share the budget) in flight. The bound adapts between
// 1 and max by additive increase, multiplicative decrease, as TCP's
// congestion window does:
//
//   - Slow start: from min(16, max), the bound grows by one for each call
//     that succeeded while the bound was in full use (so it doubles about
//     every round trip), until the first sign of overload.
//   - Congestion avoidance: after that, it grows by one per bound's worth
//     of such successes (one per round trip).
//   - Overload: a call that fails with 429 (the API server's priority and
//     fairness, or its max-in-flight limit, turned it away), a 5xx, or a
//     timeout halves the bound, at most once per round trip: the calls
//     started before the last halving do not halve it again.
//
// Successes while the bound is not in full use say nothing about a larger
// one, so they do not grow it: an idle scheduler keeps its bound.
type bindLimiter struct {
	max int
	// onChange, if set, is called with the new bound each time its whole
	// part changes (a metric), under the lock.
	onChange func(limit int)

	mu   sync.Mutex
	cond *sync.Cond
	// limit is the bound; calls may start while inFlight < int(limit).
	limit    float64
	inFlight int
	// slowStart is true until the first overload.
	slowStart bool
	// epoch counts the halvings; a call started in an earlier epoch does
	// not halve the bound again.
	epoch uint64
}

// newBindLimiter returns a limiter with at most max calls in flight.
func newBindLimiter(max int, onChange func(limit int)) *bindLimiter {
	l := &bindLimiter{max: max, limit: float64(min(initialBindLimit, max)), slowStart: true, onChange: onChange}
	l.cond = sync.NewCond(&l.mu)
	if onChange != nil {
		onChange(int(l.limit))
	}
	return l
}

// bindTicket is one call's permission to run.
type bindTicket struct {
	epoch uint64
	// full says the call took the last free place: the bound was in full
	// use, so its success is evidence that a larger bound may serve.
	full bool
}

// acquire waits for a free place and takes it.
func (l *bindLimiter) acquire() bindTicket {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.inFlight >= int(l.limit) {
		l.cond.Wait()
	}
	l.inFlight++
	return bindTicket{epoch: l.epoch, full: l.inFlight >= int(l.limit)}
}

// release gives the place back and adapts the bound to the call's
// outcome: err is the call's error (nil on success).
func (l *bindLimiter) release(t bindTicket, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	before := int(l.limit)
	switch {
	case err == nil:
		if t.full {
			if l.slowStart {
				l.limit++
			} else {
				l.limit += 1 / l.limit
			}
			l.limit = min(l.limit, float64(l.max))
		}
	case overloaded(err):
		if t.epoch == l.epoch {
			l.limit = max(1, l.limit/2)
			l.epoch++
			l.slowStart = false
		}
	}
	after := int(l.limit)
	if after != before && l.onChange != nil {
		l.onChange(after)
	}
	// Wake one waiter per place freed: the one given back, plus those a
	// larger bound adds. Not Broadcast: thousands of binds may wait, and
	// waking them all for one place costs more than the binds.
	for range 1 + max(0, after-before) {
		l.cond.Signal()
	}
}

// releaseNoSignal gives the place back without adapting the bound (a
// batch of calls whose outcome is not one call's).
func (l *bindLimiter) releaseNoSignal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	l.cond.Signal()
}

// current returns the bound and the calls in flight.
func (l *bindLimiter) current() (limit, inFlight int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.limit), l.inFlight
}

// overloaded says err is a sign of an overloaded API server: 429, a 5xx,
// or a timeout.
func overloaded(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == http.StatusTooManyRequests || code >= http.StatusInternalServerError
	}
	return errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err)
}
