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

package debugger

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"time"

	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
)

// DumpPath is where the scheduler serves DumpHandler.
const DumpPath = "/debug/cache"

// VerifyPath is where the scheduler serves VerifyHandler.
const VerifyPath = "/debug/cache/verify"

// VerifyHandler runs Verify with opts for each GET and serves the
// VerifyResult as indented JSON with 200, or {"error": "..."} with 503
// when a source could not be listed. Runs are serialised: a request that
// arrives during a run waits for it to end, then runs its own. Other
// methods than GET and HEAD get 405.
//
// Two query parameters override opts for one run: grace (a Go duration,
// e.g. "100ms", at most 10s) and rechecks (0 to 10); a bad value gets 400
// with {"error": "..."} naming it.
func VerifyHandler(c *cache.SchedulerCache, opts VerifyOptions) http.Handler {
	sem := make(chan struct{}, 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		runOpts, err := verifyQuery(opts, r.URL.Query())
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		res, err := Verify(r.Context(), c, runOpts)
		<-sem
		var body any = res
		status := http.StatusOK
		if err != nil {
			klog.ErrorS(err, "Scheduler cache consistency check failed")
			body, status = map[string]string{"error": err.Error()}, http.StatusServiceUnavailable
		}
		out, err := json.MarshalIndent(body, "", "  ")
		if err != nil {
			klog.ErrorS(err, "Encoding the scheduler cache consistency check")
			http.Error(w, "encoding the result failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		if _, err := w.Write(append(out, '\n')); err != nil {
			klog.V(4).InfoS("Writing the scheduler cache consistency check", "err", err)
		}
	})
}

// VerifyOnSignal runs Verify with opts and logs the result
// (LogVerifyResult) each time the process receives one of sigs (the
// scheduler uses SIGUSR2), until ctx ends. Signals that arrive during a
// run are merged into one more run.
func VerifyOnSignal(ctx context.Context, c *cache.SchedulerCache, opts VerifyOptions, sigs ...os.Signal) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-ch:
			klog.InfoS("Checking the scheduler cache against its sources", "signal", sig.String())
			res, err := Verify(ctx, c, opts)
			if err != nil {
				if ctx.Err() == nil {
					klog.ErrorS(err, "Scheduler cache consistency check failed")
				}
				continue
			}
			LogVerifyResult(res)
		}
	}
}

// Bounds of the query parameters of VerifyHandler.
const (
	maxQueryGrace    = 10 * time.Second
	maxQueryRechecks = 10
)

// verifyQuery applies the query parameters grace and rechecks to opts.
func verifyQuery(opts VerifyOptions, q url.Values) (VerifyOptions, error) {
	if v := q.Get("grace"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxQueryGrace {
			return opts, fmt.Errorf("query parameter grace=%q: want a duration above 0 and at most %v, such as 250ms", v, maxQueryGrace)
		}
		opts.Grace = d
	}
	if v := q.Get("rechecks"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxQueryRechecks {
			return opts, fmt.Errorf("query parameter rechecks=%q: want a whole number from 0 to %d", v, maxQueryRechecks)
		}
		opts.Rechecks = n
		if n == 0 {
			opts.Rechecks = -1
		}
	}
	return opts, nil
}

// DumpHandler serves c.Dump() as indented JSON. It answers GET (and
// HEAD) only; other methods get 405 Method Not Allowed.
func DumpHandler(c *cache.SchedulerCache) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := json.MarshalIndent(c.Dump(), "", "  ")
		if err != nil {
			klog.ErrorS(err, "Encoding the scheduler cache dump")
			http.Error(w, "encoding the cache dump failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		body = append(body, '\n')
		if _, err := w.Write(body); err != nil {
			klog.V(4).InfoS("Writing the scheduler cache dump", "err", err)
		}
	})
}
