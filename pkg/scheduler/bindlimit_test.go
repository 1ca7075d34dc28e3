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
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// fill takes every free place of l and returns the tickets; the last one
// is full.
func fill(t *testing.T, l *bindLimiter) []bindTicket {
	t.Helper()
	limit, inFlight := l.current()
	var out []bindTicket
	for range limit - inFlight {
		out = append(out, l.acquire())
	}
	return out
}

func TestBindLimiterStartsAtSixteenOrMax(t *testing.T) {
	for _, tt := range []struct{ max, want int }{{1, 1}, {8, 8}, {16, 16}, {128, 16}} {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			var reported []int
			l := newBindLimiter(tt.max, func(n int) { reported = append(reported, n) })
			if got, _ := l.current(); got != tt.want {
				t.Errorf("initial limit %d, want %d", got, tt.want)
			}
			if len(reported) != 1 || reported[0] != tt.want {
				t.Errorf("reported %v, want [%d]", reported, tt.want)
			}
		})
	}
}

func TestBindLimiterAdapts(t *testing.T) {
	tooMany := apierrors.NewTooManyRequests("slow down", 1)
	tests := []struct {
		name string
		max  int
		// run drives l and returns the limit to check.
		run  func(t *testing.T, l *bindLimiter)
		want int
	}{
		{
			name: "slow start: each success of a full window adds one",
			max:  128,
			run: func(t *testing.T, l *bindLimiter) {
				for _, tk := range fill(t, l) {
					l.release(tk, nil)
				}
			},
			want: 17, // only the last ticket took the last place
		},
		{
			name: "slow start: one per full success, so it doubles in a round trip",
			max:  128,
			run: func(t *testing.T, l *bindLimiter) {
				// Each ticket released and retaken at once keeps the
				// window full: every success grows the limit.
				for range 16 {
					tk := fill(t, l)
					l.release(tk[len(tk)-1], nil)
					for range tk[:len(tk)-1] {
						l.releaseNoSignal()
					}
				}
			},
			want: 32,
		},
		{
			name: "never above max",
			max:  18,
			run: func(t *testing.T, l *bindLimiter) {
				for range 10 {
					tk := fill(t, l)
					for _, x := range tk {
						l.release(x, nil)
					}
				}
			},
			want: 18,
		},
		{
			name: "successes below the limit do not grow it",
			max:  128,
			run: func(t *testing.T, l *bindLimiter) {
				for range 100 {
					l.release(l.acquire(), nil)
				}
			},
			want: 16,
		},
		{
			name: "a 429 halves",
			max:  128,
			run: func(t *testing.T, l *bindLimiter) {
				l.release(l.acquire(), tooMany)
			},
			want: 8,
		},
		{
			name: "overloads of calls started in the same round trip halve once",
			max:  128,
			run: func(t *testing.T, l *bindLimiter) {
				for _, tk := range fill(t, l) {
					l.release(tk, apierrors.NewInternalError(errors.New("etcd")))
				}
			},
			want: 8,
		},
		{
			name: "a later round trip halves again, never below one",
			max:  128,
			run: func(t *testing.T, l *bindLimiter) {
				for range 10 {
					l.release(l.acquire(), context.DeadlineExceeded)
				}
			},
			want: 1,
		},
		{
			name: "other errors change nothing",
			max:  128,
			run: func(t *testing.T, l *bindLimiter) {
				for _, tk := range fill(t, l) {
					l.release(tk, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("bound")))
				}
			},
			want: 16,
		},
		{
			name: "after an overload, a full window adds one per limit successes",
			max:  128,
			run: func(t *testing.T, l *bindLimiter) {
				l.release(l.acquire(), tooMany) // 8
				// Each full success adds 1/limit: nine of them take
				// the limit from 8 to just over 9 (eight to 8.98).
				for range 9 {
					tk := fill(t, l)
					for range tk[:len(tk)-1] {
						l.releaseNoSignal()
					}
					l.release(tk[len(tk)-1], nil)
				}
			},
			want: 9,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newBindLimiter(tt.max, nil)
			tt.run(t, l)
			if got, inFlight := l.current(); got != tt.want || inFlight != 0 {
				t.Errorf("limit %d with %d in flight, want %d with none", got, inFlight, tt.want)
			}
		})
	}
}

func TestBindLimiterBlocksAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newBindLimiter(2, nil)
		a, b := l.acquire(), l.acquire()
		got := make(chan bindTicket)
		go func() { got <- l.acquire() }()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("a third call started with a limit of 2")
		default:
		}
		l.release(a, nil)
		c := <-got
		l.release(b, nil)
		l.release(c, nil)
		if _, inFlight := l.current(); inFlight != 0 {
			t.Errorf("%d in flight after every release", inFlight)
		}
	})
}

func TestOverloaded(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err  error
		want bool
	}{
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{fmt.Errorf("binding pod a/b: %w", apierrors.NewTooManyRequests("slow down", 1)), true},
		{apierrors.NewInternalError(errors.New("boom")), true},
		{apierrors.NewServiceUnavailable("later"), true},
		{apierrors.NewServerTimeout(gr, "create", 1), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("posting the binding: %w", context.DeadlineExceeded), true},
		{apierrors.NewNotFound(gr, "p"), false},
		{apierrors.NewConflict(gr, "p", errors.New("bound")), false},
		{apierrors.NewForbidden(gr, "p", errors.New("no")), false},
		{errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := overloaded(tt.err); got != tt.want {
				t.Errorf("overloaded(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestBindLimiterLetsEveryWaiterThrough(t *testing.T) {
	// synctest fails the test if every goroutine blocks for good: a
	// wake-up lost among many waiters would be a deadlock.
	synctest.Test(t, func(t *testing.T) {
		l := newBindLimiter(4, nil)
		tooMany := apierrors.NewTooManyRequests("slow down", 1)
		var wg sync.WaitGroup
		for i := range 500 {
			wg.Go(func() {
				tk := l.acquire()
				if _, inFlight := l.current(); inFlight > 4 {
					t.Errorf("%d in flight, more than the maximum of 4", inFlight)
				}
				var err error
				if i%7 == 0 {
					err = tooMany
				}
				l.release(tk, err)
			})
		}
		wg.Wait()
		if _, inFlight := l.current(); inFlight != 0 {
			t.Errorf("%d in flight after every release", inFlight)
		}
	})
}

// The loop stops popping jobs while twice the bind limit (at least
// minBindBacklog) pods wait for their bind, and goes on when one finishes.
func TestLoopWaitsForBindRoom(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	hook := &hookPlugin{bind: func(*v1.Pod, string) *framework.Status {
		calls.Add(1)
		<-release
		return framework.NewStatus(framework.Skip)
	}}
	h := newHarnessWith(t, harnessConfig{hook: hook, opts: func(o *Options) { o.BindConcurrency = 1 }})
	h.addNode("n1", "100")
	for i := range minBindBacklog + 1 {
		h.addPod(st.MakePod().Name(fmt.Sprintf("p-%02d", i)).Req(res{"cpu": "1"}).Obj())
	}
	ctx := t.Context()
	done, cancel := context.WithCancel(ctx)
	cancel()
	for range minBindBacklog {
		if !h.sched.waitForBindRoom(done) {
			t.Fatalf("no room with %d binds pending", h.sched.pendingBinds.Load())
		}
		h.sched.scheduleOne(ctx)
	}
	if got := h.sched.pendingBinds.Load(); got != minBindBacklog {
		t.Fatalf("%d binds pending, want %d", got, minBindBacklog)
	}
	if h.sched.waitForBindRoom(done) {
		t.Errorf("room for another job with %d binds pending and a bind limit of 1", minBindBacklog)
	}
	release <- struct{}{}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		return h.sched.waitForBindRoom(done), nil
	}); err != nil {
		t.Errorf("no room after a bind finished: %v", err)
	}
	close(release)
	h.sched.bindWG.Wait()
	if got := h.sched.pendingBinds.Load(); got != 0 {
		t.Errorf("%d binds pending after all finished", got)
	}
}
