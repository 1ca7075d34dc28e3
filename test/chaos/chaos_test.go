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

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// Fault 1: kube-apiserver killed (SIGKILL) mid-stream and restarted on the
// same port and data.
func TestAPIServerKilledAndRestarted(t *testing.T) {
	e := setup(t, options{})
	e.waitBinds(5, 60*time.Second, "scheduling before the fault")
	var o outcome
	for range rounds() {
		podwatch.Pause(t.Context(), phase()/2)
		if err := cp.KillAPIServer(t.Context()); err != nil {
			t.Fatal(err)
		}
		podwatch.Pause(t.Context(), 2*time.Second) // down: the load's calls fail
		if err := cp.RestartAPIServer(t.Context()); err != nil {
			t.Fatal(err)
		}
		e.checkAlive()
		e.recover(e.sched(), &o)
	}
	o.note = "SIGKILL, 2 s down, restart until /readyz"
	e.finish("1. kube-apiserver killed and restarted", &o)
}

// Fault 2: every watch of the scheduler cut every 2 s for a phase.
func TestWatchesCutRepeatedly(t *testing.T) {
	e := setup(t, options{})
	e.waitBinds(5, 60*time.Second, "scheduling before the fault")
	var o outcome
	cuts := 0
	for range rounds() {
		end := time.Now().Add(phase())
		for time.Now().Before(end) {
			podwatch.Pause(t.Context(), 2*time.Second)
			cuts += e.proxy.CutWatches()
		}
		e.checkAlive()
		e.recover(e.sched(), &o)
	}
	if cuts == 0 {
		t.Error("the proxy cut no watch: the fault was not injected")
	}
	o.note = fmt.Sprintf("%d watch streams cut, every 2 s", cuts)
	e.finish("2. watches cut repeatedly", &o)
}

// Fault 3: the scheduler's watches cut and held back while the load goes
// on, etcd compacted at its current revision, then the watches let
// through: they resume from compacted revisions and must relist (410).
//
// It runs on a control plane of its own whose kube-apiserver has no watch
// cache: with one (the default), a resumed watch is served from the
// cache's window of recent events, which an etcd compaction does not
// shorten, so no 410 would come.
func TestEtcdCompactionForcesRelists(t *testing.T) {
	own, err := controlplane.Start(controlplane.WithAPIServerFlag("watch-cache", "false"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := own.Stop(); err != nil {
			t.Errorf("stopping the control plane without watch cache: %v", err)
		}
	})
	cp := own
	e := setup(t, options{cp: own})
	e.waitBinds(5, 60*time.Second, "scheduling before the fault")
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{cp.EtcdEndpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("connecting to etcd at %s: %v", cp.EtcdEndpoint(), err)
	}
	defer etcd.Close()
	var o outcome
	for range rounds() {
		e.proxy.HoldWatches(true)
		e.proxy.CutWatches()
		podwatch.Pause(t.Context(), phase()/2) // the load writes; the scheduler does not see it
		resp, err := etcd.Get(t.Context(), "compact-revision-probe")
		if err != nil {
			t.Fatalf("reading etcd's revision: %v", err)
		}
		if _, err := etcd.Compact(t.Context(), resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
			t.Fatalf("compacting etcd at revision %d: %v", resp.Header.Revision, err)
		}
		before := e.proxy.Stats().Expired
		e.proxy.HoldWatches(false)
		// The resumed watches must be told their version is gone.
		err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return e.proxy.Stats().Expired > before, nil
		})
		if err != nil {
			t.Errorf("no answer through the proxy said 410 (resourceVersion too old) within 30 s: the compaction forced no relist (proxy %+v)", e.proxy.Stats())
		}
		e.checkAlive()
		e.recover(e.sched(), &o)
	}
	st := e.proxy.Stats()
	o.note = fmt.Sprintf("%d answers 410 (too old) through the proxy", st.Expired)
	e.finish("3. etcd compaction forcing relists", &o)
}

// Fault 5a: the scheduler SIGKILLed while binds are in flight (the proxy
// holds each bind 300 ms, and sends it on even once the scheduler is
// gone), and started again.
func TestSchedulerKilledMidBind(t *testing.T) {
	e := setup(t, options{})
	e.proxy.DelayBinds(300 * time.Millisecond)
	e.waitBinds(5, 60*time.Second, "scheduling before the fault")
	var o outcome
	inFlight := 0
	for range rounds() {
		podwatch.Pause(t.Context(), phase()/2)
		err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return e.proxy.BindsInFlight() > 0, nil
		})
		if err != nil {
			t.Fatal("no bind in flight to kill the scheduler in the middle of")
		}
		inFlight += e.proxy.BindsInFlight()
		if err := e.sched().Kill(); err != nil {
			t.Fatal(err)
		}
		// The dead process's binds still reach the API server (the proxy
		// holds them past their client's death). A restart faster than
		// that, which no real process start is against a bind of a few
		// milliseconds, would place pods on nodes those binds then fill:
		// a new incarnation cannot see a bind not yet made. Restart once
		// they have landed, so that the test measures what the new
		// process does with pods its predecessor bound.
		err = wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return e.proxy.BindsInFlight() == 0, nil
		})
		if err != nil {
			t.Fatal("the killed scheduler's binds never landed")
		}
		if err := e.sched().Start(); err != nil {
			t.Fatal(err)
		}
		if err := e.sched().WaitReady(t.Context(), 60*time.Second); err != nil {
			t.Fatal(err)
		}
		e.recover(e.sched(), &o)
	}
	o.note = fmt.Sprintf("SIGKILL with %d binds in flight, restart until /readyz", inFlight)
	e.finish("5a. scheduler SIGKILLed mid-bind", &o)
}

// Fault 5b: two replicas with leader election; the leader SIGKILLed, the
// other takes over.
func TestLeaderFailover(t *testing.T) {
	e := setup(t, options{replicas: 2})
	leader := func() int {
		for i, s := range e.scheds {
			if done, _ := s.Exited(); !done && strings.Contains(s.Log(), "Became the leader") {
				return i
			}
		}
		return -1
	}
	var first int
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		first = leader()
		return first >= 0, nil
	})
	if err != nil {
		t.Fatal("no replica became the leader")
	}
	if err := e.scheds[first].WaitReady(t.Context(), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	e.waitBinds(5, 60*time.Second, "scheduling before the fault")
	podwatch.Pause(t.Context(), phase()/2)
	killed := time.Now()
	if err := e.scheds[first].Kill(); err != nil {
		t.Fatal(err)
	}
	e.gone[first] = true
	other := 1 - first
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(e.scheds[other].Log(), "Became the leader"), nil
	})
	if err != nil {
		t.Fatalf("the other replica did not take over within 60 s\n%s", tail(e.scheds[other].Log(), 40))
	}
	takeover := time.Since(killed)
	var o outcome
	e.recover(e.scheds[other], &o)
	o.note = fmt.Sprintf("takeover %.1f s after SIGKILL (lease 4 s)", takeover.Seconds())
	e.finish("5b. leader failover (2 replicas)", &o)
}

// Fault 8: a fraction of binds, pod status writes and event writes
// answered 429 (Retry-After: 1) or 500.
func TestAPIErrors429And500(t *testing.T) {
	e := setup(t, options{})
	e.waitBinds(5, 60*time.Second, "scheduling before the fault")
	match := func(r *http.Request) bool { return IsBind(r) || IsStatusWrite(r) || IsEventWrite(r) }
	var o outcome
	for range rounds() {
		e.proxy.FailRequests(0.3, match, http.StatusTooManyRequests, http.StatusInternalServerError)
		podwatch.Pause(t.Context(), phase())
		e.proxy.FailRequests(0, nil)
		e.checkAlive()
		e.recover(e.sched(), &o)
	}
	st := e.proxy.Stats()
	if st.Injected == 0 {
		t.Error("no request was answered with an injected error: the fault was not injected")
	}
	o.note = fmt.Sprintf("30%% of binds, status and event writes failed (%d answers 429/500)", st.Injected)
	e.finish("8. API answers 429 and 500", &o)
}
