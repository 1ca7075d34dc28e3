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

package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"
)

// leaderWatchdogTimeout is how long past the expiry of its own lease a
// leader may go without renewing before /healthz and /livez fail: the
// elector is stuck, and a restart hands the lease to another replica.
const leaderWatchdogTimeout = 20 * time.Second

// healthChecks are the checks of /healthz, /livez and /readyz.
type healthChecks struct {
	// live are the checks of /healthz and /livez: failing them means a
	// restart may help.
	live []healthz.HealthChecker
	// ready are the checks of /readyz: failing them means the scheduler
	// should not be counted on now (it is starting or stopping).
	ready []healthz.HealthChecker
}

// newHealthChecks returns the checks. handlersSynced reports whether every
// event handler registration has delivered its initial list, and if not,
// which are pending (SchedulerCache.HandlersSynced). watchdog, nil without
// leader election, fails while this replica leads on an expired lease.
// /readyz fails from the moment ctx is done: the scheduler is shutting
// down.
//
// Handler sync is a readiness check only: a scheduler whose informers
// cannot sync (an external resource manager down) is waiting, not broken,
// and restarting it would not help.
func newHealthChecks(ctx context.Context, handlersSynced func() (bool, []string), watchdog *leaderelection.HealthzAdaptor) healthChecks {
	var c healthChecks
	if watchdog != nil {
		c.live = append(c.live, watchdog)
		c.ready = append(c.ready, watchdog)
	}
	c.ready = append(c.ready,
		healthz.NewShutdownHealthz(ctx.Done()),
		healthz.NamedCheck("handler-sync", func(*http.Request) error {
			synced, pending := handlersSynced()
			switch {
			case synced:
				return nil
			case len(pending) == 0:
				return errors.New("the scheduler cache has not started its informers yet")
			default:
				return fmt.Errorf("waiting for %s", strings.Join(pending, ", "))
			}
		}))
	if len(c.live) == 0 {
		c.live = []healthz.HealthChecker{healthz.PingHealthz}
	}
	return c
}

// informerSyncCheck is the /readyz check "informer-sync": it fails while
// an informer started from factory has not delivered its initial list,
// naming its type. The event handlers' sync (check "handler-sync") covers
// the informers the cache registers handlers on; this one also covers
// those only plugins and preemption read through listers (namespaces for
// InterPodAffinity, PodDisruptionBudgets, storage), which otherwise fail
// silently: a plugin waiting for an informer that cannot list (a missing
// RBAC rule) retries its pods forever while the replica looks ready.
func informerSyncCheck(factory informers.SharedInformerFactory) healthz.HealthChecker {
	// WaitForCacheSync with a closed channel checks each informer once
	// and does not wait.
	closed := make(chan struct{})
	close(closed)
	return healthz.NamedCheck("informer-sync", func(*http.Request) error {
		if factory == nil {
			return nil
		}
		var pending []string
		for typ, synced := range factory.WaitForCacheSync(closed) {
			if !synced {
				pending = append(pending, typ.String())
			}
		}
		if len(pending) == 0 {
			return nil
		}
		slices.Sort(pending)
		return fmt.Errorf("informers not synced (can the scheduler list and watch them?): %s", strings.Join(pending, ", "))
	})
}

// eventBacklogCheck is the /readyz check "event-backlog": it fails while
// the oldest event pending in the event handler of some informer has
// waited longer than maxDelay, naming each such informer, how long its
// oldest event has waited and how many are pending. A scheduler whose
// handler lags acts on a stale cluster; it recovers by itself once the
// handler catches up, so this is not a liveness check. maxDelay 0
// disables the check (it always passes).
func eventBacklogCheck(backlog func() []cache.InformerBacklog, maxDelay time.Duration) healthz.HealthChecker {
	return healthz.NamedCheck("event-backlog", func(*http.Request) error {
		if maxDelay <= 0 {
			return nil
		}
		var late []string
		for _, b := range backlog() {
			if b.Pending > 0 && b.OldestPending > maxDelay {
				late = append(late, fmt.Sprintf("informer %s: oldest pending event waited %s (--max-event-delay %s), %d pending",
					b.Informer, b.OldestPending.Round(time.Millisecond), maxDelay, b.Pending))
			}
		}
		if len(late) > 0 {
			return errors.New(strings.Join(late, "; "))
		}
		return nil
	})
}

// install adds /healthz, /livez and /readyz to mux.
func (c healthChecks) install(mux *http.ServeMux) {
	mux.Handle("/healthz", healthHandler("healthz", c.live))
	mux.Handle("/livez", healthHandler("livez", c.live))
	mux.Handle("/readyz", healthHandler("readyz", c.ready))
}

// healthHandler runs checks on every request. It answers 200 "ok" when all
// pass (with ?verbose, one line per check), else 503 with one line per
// check, naming why each failed check failed: these endpoints are for
// operators and probes, and what they name (informer names, shutting
// down, the lease) is no secret. The k8s.io/apiserver healthz handler
// answers 500 and withholds the reasons, which is why it is not used here.
func healthHandler(name string, checks []healthz.HealthChecker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var out strings.Builder
		var failed []string
		for _, c := range checks {
			if err := c.Check(r); err != nil {
				failed = append(failed, c.Name())
				fmt.Fprintf(&out, "[-]%s failed: %v\n", c.Name(), err)
				continue
			}
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name())
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if len(failed) > 0 {
			klog.V(4).InfoS("Health check failed", "endpoint", name, "failed", failed)
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(&out, "%s check failed\n", name)
			_, _ = w.Write([]byte(out.String()))
			return
		}
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprintf(&out, "%s check passed\n", name)
			_, _ = w.Write([]byte(out.String()))
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
}

// endpointsMux serves the health endpoints, /metrics, and others, each of
// which must be /demand or under /debug/ (e.g. /debug/cache). On the
// secure port the health endpoints are in --authorization-always-allow-paths
// (by default); /metrics, /demand and /debug/* need a user allowed "get" on
// the non-resource URL.
func endpointsMux(checks healthChecks, metrics http.Handler, others map[string]http.Handler) (*http.ServeMux, error) {
	mux := http.NewServeMux()
	checks.install(mux)
	mux.Handle("/metrics", metrics)
	for path, h := range others {
		if path != demand.Path && path != ConfigzPath && !strings.HasPrefix(path, "/debug/") {
			return nil, fmt.Errorf("endpoint %q is neither %s, %s nor under /debug/", path, demand.Path, ConfigzPath)
		}
		mux.Handle(path, h)
	}
	return mux, nil
}
