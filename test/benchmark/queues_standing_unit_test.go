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

package benchmark

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The answer of /debug/standing as the scheduler words it: a gang that
// holds a reservation, one whose start is unknown, a single pod.
const standingSample = `{"now":"2026-12-02T14:00:00Z","jobs":[
 {"job":"ns/big-00001","gang":true,"queue":"big","position":1,"queueLength":7,"pendingPods":8,
  "estimatedStart":"2026-12-02T14:00:30Z","estimateBasis":"reservation",
  "reservation":{"nodes":["n1","n2"],"waitFor":3,"since":"2026-12-02T13:59:50Z","start":"2026-12-02T14:00:30Z"}},
 {"job":"ns/big-00002","gang":true,"queue":"big","position":2,"queueLength":7,"pendingPods":16,"estimateBasis":"capacity"},
 {"job":"ns/small-b-00003","gang":false,"queue":"small-b","position":1,"queueLength":40,"pendingPods":1,
  "estimatedStart":"2026-12-02T14:00:05Z","estimateBasis":"capacity"}]}`

func TestParseStanding(t *testing.T) {
	rep, err := parseStanding(strings.NewReader(standingSample))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC); !rep.Now.Equal(want) || len(rep.Jobs) != 3 {
		t.Fatalf("now %s, %d jobs; want %s, 3", rep.Now, len(rep.Jobs), want)
	}
	j := rep.Jobs[0]
	if j.Job != "ns/big-00001" || !j.Gang || j.Queue != "big" || j.Position != 1 || j.QueueLength != 7 || j.PendingPods != 8 || j.EstimateBasis != "reservation" ||
		j.EstimatedStart == nil || j.EstimatedStart.Sub(rep.Now) != 30*time.Second {
		t.Errorf("job 0 = %+v", j)
	}
	if r := j.Reservation; r == nil || len(r.Nodes) != 2 || r.WaitFor != 3 || r.Start == nil {
		t.Errorf("job 0's reservation = %+v", r)
	}
	if rep.Jobs[1].EstimatedStart != nil || rep.Jobs[1].Reservation != nil {
		t.Errorf("job 1 has an estimate or a reservation: %+v", rep.Jobs[1])
	}
	if _, err := parseStanding(strings.NewReader(`{"now":`)); err == nil {
		t.Error("a truncated answer parsed")
	}
}

// fakeStanding serves /debug/standing from answers, one per request (the
// last one again once they run out); with status other than 200, that.
type fakeStanding struct {
	mu      sync.Mutex
	answers []string
	status  int
}

func (f *fakeStanding) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/debug/standing" {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status != 0 && f.status != http.StatusOK {
		http.Error(w, "no", f.status)
		return
	}
	a := f.answers[0]
	if len(f.answers) > 1 {
		f.answers = f.answers[1:]
	}
	fmt.Fprint(w, a)
}

// standingAt is an answer at now (seconds after t0) with gang g's
// estimate (seconds after t0, basis) if basis is not empty.
func standingAt(t0 time.Time, now int, g string, est int, basis string) string {
	at := func(s int) string { return t0.Add(time.Duration(s) * time.Second).Format(time.RFC3339) }
	job := fmt.Sprintf(`{"job":%q,"gang":true,"queue":"big","position":1,"queueLength":1,"pendingPods":4,"estimateBasis":%q`, g, basis)
	if basis != "" {
		job += fmt.Sprintf(`,"estimatedStart":%q`, at(est))
	}
	return fmt.Sprintf(`{"now":%q,"jobs":[%s}]}`, at(now), job)
}

// The poller keeps each gang's estimates; the result takes the first and
// the last seen before the gang's real start, by basis, and ignores the
// gangs without an estimate and the estimates seen after the start.
func TestStandingPollerEstimateErrors(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	f := &fakeStanding{answers: []string{
		standingAt(t0, 0, "ns/g1", 60, "capacity"),    // first of g1: 60 s
		standingAt(t0, 1, "ns/g1", 40, "reservation"), // last of g1 before its start: 40 s
		standingAt(t0, 2, "ns/g2", 10, "capacity"),    // g2's only one
		standingAt(t0, 50, "ns/g1", 90, "capacity"),   // after g1's start: ignored
		standingAt(t0, 51, "ns/g3", 0, ""),            // g3: no estimate
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := newStandingPoller(strings.TrimPrefix(srv.URL, "http://"), time.Millisecond)
	for range 5 {
		if !p.pollOnce(t.Context()) {
			t.Fatalf("pollOnce stopped: %+v", p.result(nil))
		}
	}
	// g1 starts at 45 s, g2 at 4 s, g3 at 60 s.
	r := p.result(map[string]time.Time{"ns/g1": t0.Add(45 * time.Second), "ns/g2": t0.Add(4 * time.Second), "ns/g3": t0.Add(time.Minute)})
	if r.unavailable != "" || r.polls != 5 || r.failures != 0 || r.gangsStarted != 3 || r.withEstimate != 2 {
		t.Fatalf("result %+v", r)
	}
	want := map[string]estimateStats{
		"first-capacity":   {n: 2, p50: 15, p90: 15, bias: (-15 - 6) / 2.0}, // g1 45-60, g2 4-10
		"last-reservation": {n: 1, p50: 5, p90: 5, bias: 5},                 // g1 45-40
		"last-capacity":    {n: 1, p50: 6, p90: 6, bias: -6},                // g2
	}
	if len(r.stats) != len(want) {
		t.Errorf("stats %+v, want %+v", r.stats, want)
	}
	for k, w := range want {
		if g := r.stats[k]; g.n != w.n || math.Abs(g.p50-w.p50) > 1e-9 || math.Abs(g.p90-w.p90) > 1e-9 || math.Abs(g.bias-w.bias) > 1e-9 {
			t.Errorf("%s: %+v, want %+v", k, g, w)
		}
	}
}

// A scheduler without the endpoint (404) makes the poller stop and say
// the estimates are not available; other failures are counted and
// polling goes on.
func TestStandingPollerUnavailable(t *testing.T) {
	f := &fakeStanding{status: http.StatusNotFound}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := newStandingPoller(strings.TrimPrefix(srv.URL, "http://"), time.Millisecond)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(t.Context())
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the poller did not stop on 404")
	}
	if r := p.result(nil); !strings.Contains(r.unavailable, "404") || len(r.stats) != 0 {
		t.Errorf("result %+v, want unavailable (404)", r)
	}

	f.status = http.StatusInternalServerError
	p = newStandingPoller(strings.TrimPrefix(srv.URL, "http://"), time.Millisecond)
	if !p.pollOnce(t.Context()) {
		t.Fatal("the poller stopped on a 500")
	}
	if r := p.result(nil); r.failures != 1 || r.unavailable == "" || !strings.Contains(r.firstErr, "500") {
		t.Errorf("result %+v, want one failure and no answer", r)
	}
}

// Waits count the jobs started in the window by class; those still
// waiting count apart, with the oldest's age.
func TestBacklogWaits(t *testing.T) {
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	started := []jobStart{
		{job: "early", size: 20, created: at(0), started: at(5)}, // before the window
		{job: "g20", size: 20, created: at(0), started: at(30)},
		{job: "g16", size: 16, created: at(20), started: at(40)},
		{job: "g4", size: 4, created: at(20), started: at(21)},
		{job: "s", size: 1, single: true, created: at(25), started: at(27)},
		{job: "late", size: 1, single: true, created: at(25), started: at(200)}, // after it
	}
	waiting := []jobStart{{job: "w32", size: 32, created: at(10)}, {job: "w1", size: 1, single: true, created: at(99)}}
	w := backlogWaits(started, waiting, at(10), at(100))
	if w[0].n != 2 || w[0].p50 != 30*time.Second || w[0].max != 30*time.Second || w[0].waiting != 1 || w[0].oldest != 90*time.Second {
		t.Errorf("big gangs %+v", w[0])
	}
	if w[1].n != 1 || w[1].p99 != time.Second || w[1].waiting != 0 {
		t.Errorf("small gangs %+v", w[1])
	}
	if w[2].n != 1 || w[2].p99 != 2*time.Second || w[2].waiting != 1 || w[2].oldest != time.Second {
		t.Errorf("single pods %+v", w[2])
	}
	if g := gangStarts("ns", started, at(10), at(100)); len(g) != 3 || !g["ns/g16"].Equal(at(40)) {
		t.Errorf("gangStarts = %v", g)
	}
}
