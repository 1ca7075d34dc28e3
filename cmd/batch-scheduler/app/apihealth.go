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
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// apiHealth watches the scheduler's requests to the API server and says
// why they fail. client-go's informers retry a failing list or watch-list
// quietly (at -v=2), so an unreachable or unauthorized API server left
// nothing in the log at the default verbosity, and /readyz said only
// which informers it waited for. apiHealth logs the first failure at once
// and then at most every apiFailureLogInterval while failures go on, logs
// when requests succeed again, and backs the /readyz check "api-server".
type apiHealth struct {
	now func() time.Time
	// failingFlag mirrors failing, for the lock-free path of a success.
	failingFlag atomic.Bool

	mu sync.Mutex
	// failing is set from the first failure after a success (or the
	// start) until the next success.
	failing bool
	since   time.Time
	lastErr string
	count   int
	// logged is when the failure was last logged.
	logged time.Time
}

// apiFailureLogInterval bounds how often a continuing failure is logged.
const apiFailureLogInterval = 30 * time.Second

func newAPIHealth() *apiHealth { return &apiHealth{now: time.Now} }

// wrap makes cfg's requests report to h.
func (h *apiHealth) wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			switch {
			case err != nil:
				if req.Context().Err() == nil {
					h.failed(req, err.Error())
				}
			case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
				h.failed(req, fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
			case resp.StatusCode < 400:
				h.succeeded()
			}
			return resp, err
		})
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (h *apiHealth) failed(req *http.Request, why string) {
	now := h.now()
	h.mu.Lock()
	if !h.failing {
		h.failing, h.since, h.count = true, now, 0
		h.failingFlag.Store(true)
	}
	h.count++
	h.lastErr = fmt.Sprintf("%s %s: %s", req.Method, req.URL.Path, why)
	logNow := now.Sub(h.logged) >= apiFailureLogInterval
	if logNow {
		h.logged = now
	}
	lastErr, count, since := h.lastErr, h.count, h.since
	h.mu.Unlock()
	if logNow {
		klog.ErrorS(errors.New(lastErr), "Requests to the API server fail; retrying", "host", req.URL.Host,
			"failures", count, "failingFor", now.Sub(since).Round(time.Second))
	}
}

func (h *apiHealth) succeeded() {
	if !h.failingFlag.Load() {
		return
	}
	h.mu.Lock()
	if !h.failing {
		h.mu.Unlock()
		return
	}
	count, since := h.count, h.since
	h.failing, h.logged = false, time.Time{}
	h.failingFlag.Store(false)
	h.mu.Unlock()
	klog.InfoS("Requests to the API server succeed again", "failures", count, "failedFor", h.now().Sub(since).Round(time.Second))
}

// readyCheck is the /readyz check "api-server": while the informers have
// not synced (synced), it fails with why requests to the API server fail,
// if they do. After the sync it passes: one forbidden optional resource
// must not make a working scheduler unready.
func (h *apiHealth) readyCheck(synced func() (bool, []string)) healthz.HealthChecker {
	return healthz.NamedCheck("api-server", func(*http.Request) error {
		if ok, _ := synced(); ok {
			return nil
		}
		return h.err()
	})
}

// err returns why requests fail now, or nil.
func (h *apiHealth) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.failing {
		return nil
	}
	return fmt.Errorf("requests to the API server fail (%d failures in %s), last: %s",
		h.count, h.now().Sub(h.since).Round(time.Second), h.lastErr)
}
