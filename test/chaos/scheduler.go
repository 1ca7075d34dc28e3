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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/debugger"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Scheduler is a batch-scheduler binary running as a child process
// (harness.Process), so that it can be killed with SIGKILL. It serves its
// endpoints on plain HTTP on a loopback port (--insecure-port) and logs to
// a file.
type Scheduler struct {
	// Binary and Args start it (Args without --insecure-port).
	Binary string
	Args   []string
	// LogPath receives its output (appended to across restarts).
	LogPath string
	// Port is its --insecure-port.
	Port int
	// Env is added to the environment it inherits.
	Env []string

	client *http.Client
	spec   harness.ProcessSpec

	// mu guards p, which Start replaces.
	mu sync.Mutex
	p  *harness.Process
}

// StartScheduler starts binary with args and env (added to this
// process's environment) on a free loopback port, logging to logPath
// (a file name ending in .log).
func StartScheduler(binary, logPath string, env []string, args ...string) (*Scheduler, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Scheduler{Binary: binary, Args: args, Env: env, LogPath: logPath, Port: port, client: &http.Client{Timeout: 90 * time.Second}}
	s.spec = harness.ProcessSpec{Name: strings.TrimSuffix(filepath.Base(logPath), ".log"), Dir: filepath.Dir(logPath), Bin: binary,
		Args: append([]string{"--insecure-port", strconv.Itoa(port), "--insecure-bind-address", "127.0.0.1"}, args...),
		Env:  append(os.Environ(), env...)}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start starts the process (again, after Kill or Stop).
func (s *Scheduler) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil && !s.p.Exited() {
		return fmt.Errorf("starting %s: it is still running", s.Binary)
	}
	p, err := harness.StartProcess(context.Background(), s.spec)
	if err != nil {
		return err
	}
	s.p = p
	return nil
}

func (s *Scheduler) proc() *harness.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// Kill sends SIGKILL and waits for the process to exit.
func (s *Scheduler) Kill() error {
	if p := s.proc(); p != nil {
		p.Kill()
	}
	return nil
}

// Stop sends SIGTERM and waits up to harness.StopTimeout for the process
// to exit, then kills it. Stopping a process that has exited (killed, or
// on its own) does nothing.
func (s *Scheduler) Stop() error {
	p := s.proc()
	if p == nil || p.Exited() {
		return nil
	}
	return p.Stop()
}

// Exited says whether the process has exited, and how.
func (s *Scheduler) Exited() (bool, error) {
	p := s.proc()
	if p == nil {
		return true, nil
	}
	if !p.Exited() {
		return false, nil
	}
	return true, p.Alive()
}

// alive is the alive function of harness.Poll.
func (s *Scheduler) alive() error {
	if done, err := s.Exited(); done {
		return fmt.Errorf("the scheduler exited (%v)", err)
	}
	return nil
}

// Log returns what the process wrote so far.
func (s *Scheduler) Log() string {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return fmt.Sprintf("<reading %s: %v>", s.LogPath, err)
	}
	return string(b)
}

// Get fetches path from the scheduler's plain HTTP port.
func (s *Scheduler) Get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", s.Port, path), nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// WaitReady polls /readyz until it answers 200 or timeout passes.
func (s *Scheduler) WaitReady(ctx context.Context, timeout time.Duration) error {
	var last string
	err := harness.Poll(ctx, timeout, "/readyz to answer 200", s.alive, func() (bool, error) {
		code, body, err := s.Get(ctx, "/readyz")
		last = fmt.Sprintf("%d %s %v", code, body, err)
		return code == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the scheduler's /readyz (last answer: %s): %w", last, err)
	}
	return nil
}

// Difference is one difference the consistency checker reports, as
// /debug/cache/verify serves it.
type Difference = debugger.Difference

// VerifyResult is the answer of GET /debug/cache/verify.
type VerifyResult struct {
	StartedAt       time.Time        `json:"startedAt"`
	DurationSeconds float64          `json:"durationSeconds"`
	Consistent      bool             `json:"consistent"`
	Counts          map[string]int64 `json:"counts"`
	Differences     []Difference     `json:"differences"`
	// InFlight counts the candidate differences that re-checks showed
	// to be events in flight (not reported).
	InFlight int    `json:"inFlight"`
	Error    string `json:"error"`
}

// ErrNoChecker is returned when the scheduler has no
// /debug/cache/verify endpoint (404).
var ErrNoChecker = errors.New("the scheduler serves no /debug/cache/verify (404)")

// Verify runs the consistency checker once.
func (s *Scheduler) Verify(ctx context.Context) (*VerifyResult, error) {
	code, body, err := s.Get(ctx, "/debug/cache/verify")
	if err != nil {
		return nil, fmt.Errorf("GET /debug/cache/verify: %w", err)
	}
	if code == http.StatusNotFound {
		return nil, ErrNoChecker
	}
	var r VerifyResult
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decoding /debug/cache/verify (%d): %w: %.200s", code, err, body)
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /debug/cache/verify: %d %s", code, r.Error)
	}
	return &r, nil
}

// Recovery is how the checker came back to no difference after a fault.
type Recovery struct {
	// Took is from the call to the first answer with no difference.
	Took time.Duration
	// Recovered is false if the bound passed first.
	Recovered bool
	// Differences are the distinct differences reported before (by
	// kind, name and field), and Runs the answers seen.
	Differences []Difference
	Runs        int
	// InFlight sums the answers' candidates found to be in flight.
	InFlight int
	// Expected counts the distinct differences the caller expected
	// (and did not count as a failure) in the last answer.
	Expected int
	// LastErr is the last failure to get an answer (the scheduler down,
	// a list failing, no checker).
	LastErr error
}

// WaitConsistentExcept polls the checker until it reports no difference
// that expected (nil: none) does not accept, or bound passes. Accepted
// differences are not recorded.
func (s *Scheduler) WaitConsistentExcept(ctx context.Context, bound time.Duration, expected func(Difference) bool) Recovery {
	start := time.Now()
	var rec Recovery
	seen := map[string]bool{}
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, bound, true, func(ctx context.Context) (bool, error) {
		r, err := s.Verify(ctx)
		if err != nil {
			rec.LastErr = err
			return errors.Is(err, ErrNoChecker), nil
		}
		rec.Runs++
		rec.InFlight += r.InFlight
		left := 0
		rec.Expected = 0
		for _, d := range r.Differences {
			if expected != nil && expected(d) {
				rec.Expected++
				continue
			}
			left++
			k := d.Kind + "\x00" + d.Name + "\x00" + d.Field
			if !seen[k] {
				seen[k] = true
				rec.Differences = append(rec.Differences, d)
			}
		}
		if left == 0 && (r.Consistent || expected != nil) {
			rec.Recovered, rec.Took, rec.LastErr = true, time.Since(start), nil
			return true, nil
		}
		return false, nil
	})
	if !rec.Recovered {
		rec.Took = time.Since(start)
	}
	return rec
}

// Metrics fetches /metrics and returns the samples of the metric name.
func (s *Scheduler) Metrics(ctx context.Context, name string) (model.Vector, error) {
	code, body, err := s.Get(ctx, "/metrics")
	if err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d %w", code, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	fam, ok := fams[name]
	if !ok {
		return nil, nil
	}
	vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, fam)
	if err != nil {
		return nil, fmt.Errorf("reading metric %s: %w", name, err)
	}
	sort.Slice(vec, func(i, j int) bool { return vec[i].Metric.String() < vec[j].Metric.String() })
	return vec, nil
}

// Sum returns the sum of the samples of name whose labels include
// labels.
func (s *Scheduler) Sum(ctx context.Context, name string, labels map[string]string) (float64, bool, error) {
	vec, err := s.Metrics(ctx, name)
	if err != nil {
		return 0, false, err
	}
	var sum float64
	found := false
	for _, smp := range vec {
		match := true
		for k, v := range labels {
			if string(smp.Metric[model.LabelName(k)]) != v {
				match = false
			}
		}
		if match {
			sum += float64(smp.Value)
			found = true
		}
	}
	return sum, found, nil
}

// freePort returns a loopback port nobody listens on now.
func freePort() (int, error) { return controlplane.FreePort("127.0.0.1") }
