package cache

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/signal"

	"k8s.io/klog/v2"
)

// VerifyPath is where the scheduler serves VerifyHandler.
const VerifyPath = "/debug/cache/verify"

// VerifyHandler runs Verify with opts for each GET and serves the
// VerifyResult as indented JSON with 200, or {"error": "..."} with 503
// when a source could not be listed. Runs are serialised: a request that
// arrives during a run waits for it to end, then runs its own. Other
// methods than GET and HEAD get 405.
func (c *SchedulerCache) VerifyHandler(opts VerifyOptions) http.Handler {
	sem := make(chan struct{}, 1)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		res, err := c.Verify(r.Context(), opts)
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
func (c *SchedulerCache) VerifyOnSignal(ctx context.Context, opts VerifyOptions, sigs ...os.Signal) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-ch:
			klog.InfoS("Checking the scheduler cache against its sources", "signal", sig.String())
			res, err := c.Verify(ctx, opts)
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
