package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

const (
	// waitTimeout bounds every wait of the demo: for /readyz, for the
	// expected outcome of a step, for the cache to agree with the API, and
	// for the scheduler to stop.
	waitTimeout = 30 * time.Second
	// pollInterval is how often the endpoints are asked while waiting.
	pollInterval = 50 * time.Millisecond
)

// scheduler is the batch-scheduler command running in this process.
type scheduler struct {
	// addr is the host:port of its secure port.
	addr   string
	client *http.Client
	cancel context.CancelFunc

	// done is closed when the command has returned, with its exit code in
	// code and whatever it printed on stderr (its error) in stderr.
	done   chan struct{}
	code   int
	stderr strings.Builder
}

// startScheduler runs the real command in a goroutine, connected to the API
// server of cp, configured by the file at configPath, serving its
// endpoints on the secure port at addr and logging to logs, with extraArgs
// after the demo's own flags. It stops when
// ctx is done or stop is called.
//
// The demo reads the endpoints as the control plane's admin: with the
// client certificate of cp's kubeconfig, which the scheduler verifies
// against the client CA the API server publishes, and which belongs to
// system:masters, a group always allowed. It trusts the serving
// certificate it generates for the scheduler here.
func startScheduler(ctx context.Context, cp *controlplane.ControlPlane, addr, configPath string, logs io.Writer, extraArgs ...string) (*scheduler, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("splitting %s: %w", addr, err)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{net.ParseIP(host)}, nil)
	if err != nil {
		return nil, fmt.Errorf("generating the scheduler's serving certificate: %w", err)
	}
	certFile, keyFile := filepath.Join(cp.Dir, "scheduler.crt"), filepath.Join(cp.Dir, "scheduler.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return nil, fmt.Errorf("writing the scheduler's serving certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("writing the scheduler's serving key: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		return nil, errors.New("the generated serving certificate does not parse")
	}
	admin, err := tls.X509KeyPair(cp.Config.CertData, cp.Config.KeyData)
	if err != nil {
		return nil, fmt.Errorf("loading the client certificate of the control plane's admin: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	s := &scheduler{
		addr: addr,
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs:      roots,
			Certificates: []tls.Certificate{admin},
			MinVersion:   tls.VersionTLS12,
		}}},
		cancel: cancel,
		done:   make(chan struct{}),
	}
	cmd := app.NewSchedulerCommand(app.WithLogOutput(logs))
	// Leader election off: a single replica schedules as soon as its cache
	// has synced, instead of first acquiring a Lease. -v 2 logs every
	// placement and every unschedulable job (to the log file).
	cmd.SetArgs(append([]string{"--kubeconfig", cp.KubeconfigPath, "--config-path", configPath, "--leader-elect=false", "-v", schedulerVerbosity,
		"--bind-address", host, "--secure-port", port, "--tls-cert-file", certFile, "--tls-private-key-file", keyFile}, extraArgs...))
	cmd.SetContext(ctx)
	cmd.SetErr(&s.stderr)
	go func() {
		defer close(s.done)
		s.code = app.Execute(cmd)
	}()
	return s, nil
}

// exited reports whether the command has returned. It should run until
// stopped; stop reports its exit code and error.
func (s *scheduler) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// stop cancels the command and waits for it to return.
func (s *scheduler) stop() error {
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(waitTimeout):
		return fmt.Errorf("batch-scheduler did not stop within %s of being cancelled", waitTimeout)
	}
	if s.code != 0 {
		return fmt.Errorf("batch-scheduler exited with code %d: %s", s.code, strings.TrimSpace(s.stderr.String()))
	}
	return nil
}

// get fetches path from the scheduler's secure port.
func (s *scheduler) get(ctx context.Context, path string) (status int, body []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+s.addr+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// dump fetches and decodes /debug/cache.
func (s *scheduler) dump(ctx context.Context) (*cache.Dump, error) {
	status, body, err := s.get(ctx, "/debug/cache")
	if err != nil {
		return nil, fmt.Errorf("GET /debug/cache: %w", err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET /debug/cache: %d %s", status, strings.TrimSpace(string(body)))
	}
	d := &cache.Dump{}
	if err := json.Unmarshal(body, d); err != nil {
		return nil, fmt.Errorf("decoding /debug/cache: %w", err)
	}
	return d, nil
}

// waitReady waits until /readyz answers 200: every informer has delivered
// its initial list to the event handler.
func (s *scheduler) waitReady(ctx context.Context) error {
	return s.poll(ctx, "/readyz to answer 200", func() (bool, error) {
		status, body, err := s.get(ctx, "/readyz")
		if err != nil {
			return false, err // not listening yet
		}
		if status != http.StatusOK {
			return false, fmt.Errorf("/readyz: %d %s", status, strings.TrimSpace(string(body)))
		}
		return true, nil
	})
}

// waitForDump waits until /debug/cache satisfies cond, described by what,
// and returns that dump.
func (s *scheduler) waitForDump(ctx context.Context, what string, cond func(*cache.Dump) bool) (*cache.Dump, error) {
	var d *cache.Dump
	err := s.poll(ctx, "/debug/cache to show "+what, func() (bool, error) {
		var err error
		if d, err = s.dump(ctx); err != nil {
			return false, err
		}
		return cond(d), nil
	})
	return d, err
}

// errExited ends a wait when the command has returned.
var errExited = errors.New("batch-scheduler exited")

// finalError is an error from a poll's check that waiting cannot mend
// (e.g. a pod bound to the wrong node): it ends the wait at once.
type finalError struct{ error }

func (e finalError) Unwrap() error { return e.error }

// poll calls check every pollInterval until it reports true, the command
// exits, ctx is done or waitTimeout passes. An error from check is not
// fatal, unless it is a finalError: the wait goes on, and the last such
// error is reported if it times out.
func (s *scheduler) poll(ctx context.Context, what string, check func() (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, waitTimeout, true, func(context.Context) (bool, error) {
		if s.exited() {
			return false, errExited // ends the wait; reported below
		}
		ok, err := check()
		last = err
		if fe := (finalError{}); errors.As(err, &fe) {
			return false, err
		}
		return ok, nil
	})
	var fe finalError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &fe):
		return fmt.Errorf("while waiting for %s: %w", what, fe.error)
	case s.exited():
		return fmt.Errorf("batch-scheduler exited while the demo waited for %s", what)
	case last != nil:
		return fmt.Errorf("timed out after %s waiting for %s (last error: %w)", waitTimeout, what, last)
	default:
		return fmt.Errorf("timed out after %s waiting for %s", waitTimeout, what)
	}
}

// freeLoopbackAddress returns a loopback address with a port that was free
// a moment ago.
func freeLoopbackAddress() (string, error) {
	port, err := controlplane.FreePort("127.0.0.1")
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}
