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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/standing"
)

// standingReport is the scheduler's GET /debug/standing (pkg/standing):
// where each pending job stands and when it is expected to start.
type standingReport = standing.Report

// parseStanding decodes a /debug/standing answer.
func parseStanding(r io.Reader) (standingReport, error) {
	var rep standingReport
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return rep, fmt.Errorf("decoding /debug/standing: %w", err)
	}
	return rep, nil
}

// estimateSeen is one start estimate of a gang: reported at at (the
// report's now), start estimated on basis.
type estimateSeen struct {
	at, start time.Time
	basis     string
}

// standingPoller polls a scheduler's /debug/standing every interval and
// keeps the start estimates it reports of each gang, in order. A 404
// means the scheduler has no such endpoint: the poller stops and says so.
type standingPoller struct {
	url      string
	client   *http.Client
	interval time.Duration

	mu sync.Mutex
	// unavailable says why there are no estimates at all (empty: there
	// may be).
	unavailable     string
	polls, failures int
	firstErr        error
	// seen holds the estimates of each gang by job id; gangs every gang
	// reported, with an estimate or not.
	seen  map[string][]estimateSeen
	gangs map[string]bool
}

func newStandingPoller(addr string, interval time.Duration) *standingPoller {
	return &standingPoller{url: "http://" + addr + "/debug/standing", client: &http.Client{Timeout: 2 * time.Second}, interval: interval,
		seen: map[string][]estimateSeen{}, gangs: map[string]bool{}}
}

// run polls until ctx ends or the endpoint answers 404.
func (p *standingPoller) run(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for p.pollOnce(ctx) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollOnce polls once; false means stop (ctx ended or 404).
func (p *standingPoller) pollOnce(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		p.fail(fmt.Errorf("GET %s: %w", p.url, err))
		return false
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		p.fail(fmt.Errorf("GET %s: %w", p.url, err))
		return true
	}
	defer resp.Body.Close()
	received := time.Now()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		p.mu.Lock()
		p.unavailable = "GET /debug/standing answered 404: the scheduler has no start estimates"
		p.mu.Unlock()
		return false
	default:
		_, _ = io.Copy(io.Discard, resp.Body)
		p.fail(fmt.Errorf("GET %s: %s", p.url, resp.Status))
		return true
	}
	rep, err := parseStanding(resp.Body)
	if err != nil {
		p.fail(err)
		return true
	}
	if rep.Now.IsZero() {
		rep.Now = received
	}
	p.record(rep)
	return true
}

func (p *standingPoller) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures++
	if p.firstErr == nil {
		p.firstErr = err
	}
}

// record keeps the estimates of the gangs of rep.
func (p *standingPoller) record(rep standingReport) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.polls++
	for _, j := range rep.Jobs {
		if !j.Gang {
			continue
		}
		p.gangs[j.Job] = true
		if j.EstimatedStart != nil {
			p.seen[j.Job] = append(p.seen[j.Job], estimateSeen{at: rep.Now, start: *j.EstimatedStart, basis: j.EstimateBasis})
		}
	}
}

// estimateStats sums up the errors (real start − estimate) of one kind of
// estimate: their number, the median and the 90th percentile of their
// absolute value, and their mean (positive: the gangs started later than
// estimated), in seconds.
type estimateStats struct {
	n              int
	p50, p90, bias float64
}

func summarizeErrors(errs []float64) estimateStats {
	if len(errs) == 0 {
		return estimateStats{}
	}
	abs := make([]float64, len(errs))
	var sum float64
	for i, e := range errs {
		abs[i] = max(e, -e)
		sum += e
	}
	sort.Float64s(abs)
	q := func(f float64) float64 { return abs[min(len(abs)-1, int(f*float64(len(abs))))] }
	return estimateStats{n: len(errs), p50: q(0.5), p90: q(0.9), bias: sum / float64(len(errs))}
}

// estimateResult is what the poller found of one scheduler.
type estimateResult struct {
	// unavailable says why there is no estimate at all.
	unavailable     string
	polls, failures int
	firstErr        string
	// gangsStarted are the gangs that started in the window, withEstimate
	// those of them with an estimate seen before their start.
	gangsStarted, withEstimate int
	// stats are by "first-" or "last-" and the estimate's basis: the
	// first and the last estimate seen of each gang before its start.
	stats map[string]estimateStats
}

// result compares the estimates seen with starts, the real start (quorum
// live) of each gang by job id: the first and the last estimate of each
// gang reported before its start.
func (p *standingPoller) result(starts map[string]time.Time) estimateResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := estimateResult{unavailable: p.unavailable, polls: p.polls, failures: p.failures, gangsStarted: len(starts), stats: map[string]estimateStats{}}
	if p.firstErr != nil {
		r.firstErr = p.firstErr.Error()
	}
	if r.unavailable == "" && p.polls == 0 {
		r.unavailable = "no answer from GET /debug/standing"
		if p.firstErr != nil {
			r.unavailable += ": " + p.firstErr.Error()
		}
	}
	errs := map[string][]float64{}
	for job, start := range starts {
		var before []estimateSeen
		for _, e := range p.seen[job] {
			if e.at.Before(start) {
				before = append(before, e)
			}
		}
		if len(before) == 0 {
			continue
		}
		r.withEstimate++
		first, last := before[0], before[len(before)-1]
		errs["first-"+first.basis] = append(errs["first-"+first.basis], start.Sub(first.start).Seconds())
		errs["last-"+last.basis] = append(errs["last-"+last.basis], start.Sub(last.start).Seconds())
	}
	for k, v := range errs {
		r.stats[k] = summarizeErrors(v)
	}
	return r
}

// keys are the kinds of estimate of r, sorted: first-* before last-*.
func (r estimateResult) keys() []string {
	var out []string
	for k := range r.stats {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
