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
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/debugger"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Scheduler is a batch-scheduler binary running as a child process, so
// that it can be killed with SIGKILL. It serves its endpoints on plain
// HTTP on a loopback port (--insecure-port) and logs to a file.
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

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	// exitErr is what cmd.Wait returned, once exited is closed.
	exitErr error
}

// StartScheduler starts binary with args and env (added to this
// process's environment) on a free loopback port.
func StartScheduler(binary, logPath string, env []string, args ...string) (*Scheduler, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Scheduler{Binary: binary, Args: args, Env: env, LogPath: logPath, Port: port, client: &http.Client{Timeout: 90 * time.Second}}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start starts the process (again, after Kill or Stop).
func (s *Scheduler) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		select {
		case <-s.exited:
		default:
			return fmt.Errorf("starting %s: it is still running (pid %d)", s.Binary, s.cmd.Process.Pid)
		}
	}
	out, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("opening the scheduler log %s: %w", s.LogPath, err)
	}
	args := append([]string{"--insecure-port", strconv.Itoa(s.Port), "--insecure-bind-address", "127.0.0.1"}, s.Args...)
	cmd := exec.Command(s.Binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), s.Env...)
	// Its own process group: a Ctrl-C of the test does not reach it
	// first, and Kill reaches only it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("starting %s: %w", s.Binary, err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited = cmd, exited
	go func() {
		err := cmd.Wait()
		_ = out.Close()
		s.mu.Lock()
		s.exitErr = err
		s.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Kill sends SIGKILL and waits for the process to exit.
func (s *Scheduler) Kill() error { return s.signal(syscall.SIGKILL, 10*time.Second) }

// Stop sends SIGTERM and waits up to 30 s for the process to exit, then
// kills it.
func (s *Scheduler) Stop() error {
	err := s.signal(syscall.SIGTERM, 30*time.Second)
	if err != nil {
		_ = s.Kill()
	}
	return err
}

func (s *Scheduler) signal(sig syscall.Signal, timeout time.Duration) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending %s to the scheduler (pid %d): %w", sig, cmd.Process.Pid, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("the scheduler (pid %d) did not exit within %s of %s", cmd.Process.Pid, timeout, sig)
	}
}

// Exited says whether the process has exited, and how.
func (s *Scheduler) Exited() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return true, nil
	}
	select {
	case <-s.exited:
		return true, s.exitErr
	default:
		return false, nil
	}
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
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if done, err := s.Exited(); done {
			return false, fmt.Errorf("the scheduler exited (%v)", err)
		}
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
