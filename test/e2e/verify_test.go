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

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache/debugger"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// ignoredLabel marks the pods the test's handler drops: their events never
// reach the cache, as if the handler had a bug.
const ignoredLabel = "e2e-verify-ignored"

// droppingHandler is the default handler with a bug: it drops the events
// of pods labelled ignoredLabel. Its rules for what the cache records
// (eventhandlers.StateRules, inherited) still say those pods belong there,
// so the checker must report them. (A Policy that ignores them would be
// the handler's rule, which the checker follows.)
type droppingHandler struct{ *defaulthandler.Handler }

func dropped(obj any) bool {
	p, ok := obj.(*v1.Pod)
	return ok && p.Labels[ignoredLabel] != ""
}

func (h droppingHandler) AddPod(obj any) {
	if !dropped(obj) {
		h.Handler.AddPod(obj)
	}
}

func (h droppingHandler) UpdatePod(oldObj, newObj any) {
	if !dropped(newObj) {
		h.Handler.UpdatePod(oldObj, newObj)
	}
}

func (h droppingHandler) DeletePod(obj any) {
	if !dropped(obj) {
		h.Handler.DeletePod(obj)
	}
}

// verify fetches /debug/cache/verify with query ("" or "?...").
func (s *scheduler) verify(t *testing.T, query string) *debugger.VerifyResult {
	t.Helper()
	code, body, err := s.get(debugger.VerifyPath + query)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %.300s %v", debugger.VerifyPath, code, body, err)
	}
	var res debugger.VerifyResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatalf("decoding %s: %v: %.300s", debugger.VerifyPath, err, body)
	}
	return &res
}

// On a steady cluster the checker reports no difference; a pod whose
// events the handler drops by mistake is reported, and counted in the metric; the
// endpoint has the same authorization as /debug/cache.
func TestVerifyEndpoint(t *testing.T) {
	ns := createNamespace(t)
	ignoring := func(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
		h, err := defaulthandler.New(ctx, c, cfg, rc)
		if err != nil {
			return nil, err
		}
		return droppingHandler{h}, nil
	}
	s := startSchedulerWith(t, []app.Option{app.WithEventHandler("e2e-ignoring", ignoring)}, cp.KubeconfigPath, "--event-handler=e2e-ignoring")
	s.waitReady(t)

	mustNode(t, st.MakeNode().Name("verify-a").Capacity(res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("bound").Node("verify-a").Req(res{"cpu": "1"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("waiting").NodeSelector(nowhere).Req(res{"cpu": "1"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("g-0").Group("g").MinAvailable("2").NodeSelector(nowhere).Obj())
	s.waitForDump(t, "the test's pods", func(d *cache.Dump) bool {
		return job(d, ns+"/pod:bound") != nil && job(d, ns+"/pod:waiting") != nil && job(d, ns+"/g") != nil
	})

	// Steady: consistent. Other tests' objects may be changing meanwhile;
	// the checker's re-checks absorb that, so one answer suffices.
	steady := s.verify(t, "")
	if !steady.Consistent || len(steady.Differences) != 0 {
		t.Fatalf("steady cluster: differences %+v", steady.Differences)
	}
	if steady.Counts.Nodes < 1 || steady.Counts.Pods < 3 {
		t.Errorf("counts = %+v, want at least this test's node and pods", steady.Counts)
	}
	t.Logf("steady cluster: %+v in %.3fs, longest lock hold %.6fs", steady.Counts, steady.DurationSeconds, steady.LongestLockHoldSeconds)

	// Injected: a bound pod the handler never gives the cache.
	mustPod(t, st.MakePod().Namespace(ns).Name("hidden").Label(ignoredLabel, "yes").Node("verify-a").Req(res{"cpu": "2"}).Obj())
	var last *debugger.VerifyResult
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		// Re-checks short enough for the client's 10s timeout.
		last = s.verify(t, "?grace=100ms&rechecks=3")
		return !last.Consistent, nil
	})
	if err != nil {
		t.Fatalf("the ignored pod was never reported: %v; last %+v", err, last)
	}
	want := debugger.Difference{Kind: debugger.DiffPod, Name: ns + "/hidden", Field: "state", Cache: "absent", Truth: "bound to verify-a"}
	found := false
	for _, d := range last.Differences {
		if d.Kind == want.Kind && d.Name == want.Name && d.Field == want.Field && d.Cache == want.Cache && d.Truth == want.Truth {
			found = true
		} else {
			t.Errorf("unexpected difference %+v", d)
		}
	}
	if !found {
		t.Errorf("differences %+v do not include %+v", last.Differences, want)
	}
	if last.Rechecks == 0 {
		t.Error("a difference was reported without a re-check")
	}

	code, body, err := s.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	for _, series := range []string{
		`batch_scheduler_cache_verify_differences_total{kind="Pod"}`,
		"batch_scheduler_cache_verify_runs_total ",
		"batch_scheduler_cache_verify_duration_seconds_count ",
	} {
		if !strings.Contains(string(body), "\n"+series) {
			t.Errorf("/metrics has no %s", series)
		}
	}

	unprivileged, err := serviceAccountToken(t.Context(), "endpoints-nobody", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{"", unprivileged} {
		code, body, err := s.getAs(token, debugger.VerifyPath)
		if err != nil || code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("%s with token %q = %d %.200q %v, want 401 or 403", debugger.VerifyPath, fmt.Sprintf("%.8s", token), code, body, err)
		}
	}
}
