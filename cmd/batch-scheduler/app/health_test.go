package app

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
)

func TestHealthEndpoints(t *testing.T) {
	synced := func() (bool, []string) { return true, nil }
	pending := func() (bool, []string) { return false, []string{"Pod", "custom/vms"} }
	notStarted := func() (bool, []string) { return false, nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	type want struct {
		code     int
		contains []string
		absent   []string
	}
	tests := []struct {
		name     string
		ctx      context.Context
		synced   func() (bool, []string)
		watchdog bool
		path     string
		want     want
	}{
		{name: "ready", ctx: t.Context(), synced: synced, path: "/readyz", want: want{code: 200, contains: []string{"ok"}, absent: []string{"[+]"}}},
		{name: "ready, verbose", ctx: t.Context(), synced: synced, path: "/readyz?verbose", want: want{code: 200,
			contains: []string{"[+]shutdown ok\n", "[+]handler-sync ok\n", "readyz check passed\n"}}},
		{name: "syncing", ctx: t.Context(), synced: pending, path: "/readyz", want: want{code: 503,
			contains: []string{"[+]shutdown ok\n", "[-]handler-sync failed: waiting for Pod, custom/vms\n", "readyz check failed\n"}}},
		{name: "cache not started", ctx: t.Context(), synced: notStarted, path: "/readyz", want: want{code: 503,
			contains: []string{"[-]handler-sync failed: the scheduler cache has not started"}}},
		{name: "shutting down", ctx: cancelled, synced: synced, path: "/readyz", want: want{code: 503,
			contains: []string{"[-]shutdown failed: process is shutting down\n", "[+]handler-sync ok\n"}}},
		{name: "live while syncing", ctx: t.Context(), synced: pending, path: "/livez", want: want{code: 200, contains: []string{"ok"}}},
		{name: "healthy while shutting down", ctx: cancelled, synced: pending, path: "/healthz?verbose", want: want{code: 200,
			contains: []string{"[+]ping ok\n", "healthz check passed\n"}}},
		{name: "leader watchdog on /livez", ctx: t.Context(), synced: synced, watchdog: true, path: "/livez?verbose", want: want{code: 200,
			contains: []string{"[+]leaderElection ok\n"}, absent: []string{"ping"}}},
		{name: "leader watchdog on /healthz", ctx: t.Context(), synced: synced, watchdog: true, path: "/healthz?verbose", want: want{code: 200,
			contains: []string{"[+]leaderElection ok\n"}}},
		{name: "leader watchdog on /readyz", ctx: t.Context(), synced: synced, watchdog: true, path: "/readyz?verbose", want: want{code: 200,
			contains: []string{"[+]leaderElection ok\n", "[+]handler-sync ok\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wd *leaderelection.HealthzAdaptor
			if tt.watchdog {
				wd = leaderelection.NewLeaderHealthzAdaptor(time.Second)
			}
			mux, err := endpointsMux(newHealthChecks(tt.ctx, tt.synced, wd), http.NotFoundHandler(), nil)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tt.want.code {
				t.Errorf("%s = %d %q, want %d", tt.path, rec.Code, body, tt.want.code)
			}
			for _, w := range tt.want.contains {
				if !strings.Contains(string(body), w) {
					t.Errorf("%s = %q, want it to contain %q", tt.path, body, w)
				}
			}
			for _, w := range tt.want.absent {
				if strings.Contains(string(body), w) {
					t.Errorf("%s = %q, want no %q", tt.path, body, w)
				}
			}
		})
	}
}

func TestDebugEndpointsMustBeUnderDebug(t *testing.T) {
	_, err := endpointsMux(newHealthChecks(t.Context(), func() (bool, []string) { return true, nil }, nil), http.NotFoundHandler(),
		map[string]http.Handler{"/cache": http.NotFoundHandler()})
	if err == nil || !strings.Contains(err.Error(), `"/cache"`) {
		t.Fatalf("err = %v, want one naming /cache", err)
	}
}
