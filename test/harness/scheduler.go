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

package harness

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
	"sync"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// SchedulerStopTimeout bounds the wait for a cancelled scheduler to
// return.
const SchedulerStopTimeout = 30 * time.Second

// SchedulerOptions say how to run batch-scheduler. Leader election is
// always off: a single replica schedules as soon as its cache has synced.
type SchedulerOptions struct {
	// Kubeconfig is --kubeconfig.
	Kubeconfig string
	// Secure, when set, serves the endpoints on the secure port of a free
	// loopback address with a serving certificate generated into its Dir,
	// and the Scheduler reads them as Secure's admin: with the client
	// certificate of its kubeconfig, which belongs to system:masters. The
	// insecure port is then off unless Args set it.
	Secure *controlplane.ControlPlane
	// Serving, with Secure, serves the secure port with the caller's
	// certificate instead of a generated one, read with the caller's
	// client (for endpoints read with other credentials than the admin's).
	Serving *Serving
	// InsecureAddr is --insecure-port's loopback address
	// ("127.0.0.1:<port>") when Secure is nil; empty picks a free port.
	// The secure port is off then.
	InsecureAddr string
	// Args come after the harness's flags (they may override them).
	Args []string
	// LogOutput, if set, receives the command's log (app.WithLogOutput);
	// AppOptions build an out-of-tree command.
	LogOutput  io.Writer
	AppOptions []app.Option
}

// Serving is a serving certificate and the client that reads the
// endpoints served with it.
type Serving struct {
	// CertFile and KeyFile are --tls-cert-file and --tls-private-key-file.
	CertFile, KeyFile string
	// Client trusts the certificate; the caller adds its credentials to
	// each request (a token), or sets them in its transport.
	Client *http.Client
}

// Scheduler is the batch-scheduler command running in this process.
type Scheduler struct {
	// URL is the base URL of the endpoints; Flags are the flags the
	// harness passed before Args (to show them).
	URL   string
	Flags []string

	opts   SchedulerOptions
	client *http.Client

	// mu guards the run's fields below, which Restart replaces.
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	code   int
	stderr *st.SyncBuffer
}

// StartScheduler runs the real command in a goroutine with o; it stops
// when ctx is done or Stop is called. It does not wait for /readyz.
func StartScheduler(ctx context.Context, o SchedulerOptions) (*Scheduler, error) {
	s := &Scheduler{opts: o, client: &http.Client{Timeout: 10 * time.Second}}
	s.Flags = []string{"--kubeconfig", o.Kubeconfig, "--leader-elect=false"}
	if o.Secure != nil {
		addr, err := FreeAddress()
		if err != nil {
			return nil, err
		}
		host, port, _ := net.SplitHostPort(addr)
		s.URL = "https://" + addr
		var certFile, keyFile string
		if o.Serving != nil {
			certFile, keyFile, s.client = o.Serving.CertFile, o.Serving.KeyFile, o.Serving.Client
		} else {
			var tlsConfig *tls.Config
			if certFile, keyFile, tlsConfig, err = adminTLS(o.Secure, host); err != nil {
				return nil, err
			}
			s.client.Transport = &http.Transport{TLSClientConfig: tlsConfig}
		}
		s.Flags = append(s.Flags, "--bind-address", host, "--secure-port", port, "--tls-cert-file", certFile, "--tls-private-key-file", keyFile)
	} else {
		addr := o.InsecureAddr
		if addr == "" {
			var err error
			if addr, err = FreeAddress(); err != nil {
				return nil, err
			}
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("splitting %s: %w", addr, err)
		}
		s.URL = "http://" + addr
		s.Flags = append(s.Flags, "--secure-port=0", "--insecure-bind-address", host, "--insecure-port", port)
	}
	s.launch(ctx)
	return s, nil
}

// adminTLS writes a serving certificate for host into cp.Dir and returns
// its files and the client configuration that trusts it and presents the
// admin's client certificate.
func adminTLS(cp *controlplane.ControlPlane, host string) (certFile, keyFile string, cfg *tls.Config, err error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{net.ParseIP(host)}, nil)
	if err != nil {
		return "", "", nil, fmt.Errorf("generating the scheduler's serving certificate: %w", err)
	}
	certFile, keyFile = filepath.Join(cp.Dir, "scheduler.crt"), filepath.Join(cp.Dir, "scheduler.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", nil, fmt.Errorf("writing the scheduler's serving certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", nil, fmt.Errorf("writing the scheduler's serving key: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		return "", "", nil, errors.New("the generated serving certificate does not parse")
	}
	admin, err := tls.X509KeyPair(cp.Config.CertData, cp.Config.KeyData)
	if err != nil {
		return "", "", nil, fmt.Errorf("loading the client certificate of the control plane's admin: %w", err)
	}
	return certFile, keyFile, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{admin}, MinVersion: tls.VersionTLS12}, nil
}

// launch runs the command with the scheduler's flags.
func (s *Scheduler) launch(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var opts []app.Option
	if s.opts.LogOutput != nil {
		opts = append(opts, app.WithLogOutput(s.opts.LogOutput))
	}
	cmd := app.NewSchedulerCommand(append(opts, s.opts.AppOptions...)...)
	cmd.SetArgs(append(append([]string(nil), s.Flags...), s.opts.Args...))
	cmd.SetContext(ctx)
	stderr, done := &st.SyncBuffer{}, make(chan struct{})
	cmd.SetErr(stderr)
	s.mu.Lock()
	s.cancel, s.done, s.stderr, s.code = cancel, done, stderr, 0
	s.mu.Unlock()
	go func() {
		code := app.Execute(cmd)
		s.mu.Lock()
		s.code = code
		s.mu.Unlock()
		close(done)
	}()
}

// Alive is nil while the command runs, and says how it ended once it
// returned: the alive function of Poll.
func (s *Scheduler) Alive() error {
	s.mu.Lock()
	done, stderr := s.done, s.stderr
	s.mu.Unlock()
	select {
	case <-done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("batch-scheduler exited with %d: %s", s.code, strings.TrimSpace(stderr.String()))
	default:
		return nil
	}
}

// Stop cancels the command and waits (at most SchedulerStopTimeout) for
// it to return; it is an error if it does not, or returns non-zero.
// Stopping a stopped scheduler does nothing.
func (s *Scheduler) Stop() error {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
	case <-time.After(SchedulerStopTimeout):
		return fmt.Errorf("batch-scheduler did not stop within %s of being cancelled", SchedulerStopTimeout)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code != 0 {
		return fmt.Errorf("batch-scheduler exited with %d: %s", s.code, strings.TrimSpace(s.stderr.String()))
	}
	return nil
}

// Restart stops the command and runs it again with the same flags.
func (s *Scheduler) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	s.Start(ctx)
	return nil
}

// Start runs the command again with the same flags, after Stop.
func (s *Scheduler) Start(ctx context.Context) {
	s.launch(ctx)
}

// ExitCode is the code the command returned with, and whether it has
// returned, since it was last started.
func (s *Scheduler) ExitCode() (code int, exited bool) {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	select {
	case <-done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.code, true
	default:
		return 0, false
	}
}

// Stderr is what the command printed on stderr (its error) so far.
func (s *Scheduler) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// Get fetches path from the scheduler's endpoints.
func (s *Scheduler) Get(ctx context.Context, path string) (status int, body []byte, err error) {
	return get(ctx, s.client, s.URL+path)
}

func get(ctx context.Context, c *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// WaitReady waits until /readyz answers 200 (every informer has delivered
// its initial list to the event handler), the command exits, or timeout
// passes.
func (s *Scheduler) WaitReady(ctx context.Context, timeout time.Duration) error {
	return waitReady(ctx, s.client, s.URL, timeout, s.Alive)
}

func waitReady(ctx context.Context, c *http.Client, base string, timeout time.Duration, alive func() error) error {
	return Poll(ctx, timeout, base+"/readyz to answer 200", alive, func() (bool, error) {
		status, body, err := get(ctx, c, base+"/readyz")
		if err != nil {
			return false, err // not listening yet
		}
		if status != http.StatusOK {
			return false, fmt.Errorf("/readyz: %d %s", status, strings.TrimSpace(string(body)))
		}
		return true, nil
	})
}

// Dump fetches and decodes /debug/cache.
func (s *Scheduler) Dump(ctx context.Context) (*cache.Dump, error) {
	d := &cache.Dump{}
	return d, getJSON(ctx, s.client, s.URL+"/debug/cache", d)
}

// VerifyPath is the scheduler's consistency checker.
const VerifyPath = "/debug/cache/verify"

// verifyResult is what Verify reads of the checker's answer.
type verifyResult struct {
	Consistent  bool `json:"consistent"`
	Differences []struct {
		Kind, Name, Field, Cache, Truth, Message string
	} `json:"differences"`
	Truncated int `json:"truncated"`
}

// Verify runs the scheduler's consistency checker once (VerifyPath: the
// cache against fresh lists of its sources) and returns an error listing
// the differences it found, if any.
func (s *Scheduler) Verify(ctx context.Context) error {
	var r verifyResult
	if err := getJSON(ctx, s.client, s.URL+VerifyPath, &r); err != nil {
		return err
	}
	if r.Consistent {
		return nil
	}
	var diffs []string
	for _, d := range r.Differences {
		diffs = append(diffs, fmt.Sprintf("%s %s %s: cache %q, truth %q (%s)", d.Kind, d.Name, d.Field, d.Cache, d.Truth, d.Message))
	}
	return fmt.Errorf("%s: %d differences: %s", VerifyPath, len(r.Differences)+r.Truncated, strings.Join(diffs, "; "))
}

// DemandURL is where an allocator reads the scheduler's demand.
func (s *Scheduler) DemandURL() string { return s.URL + demand.Path }

// Demand fetches the scheduler's demand report.
func (s *Scheduler) Demand(ctx context.Context) (*demand.Report, error) {
	return demand.Fetch(ctx, s.client, s.DemandURL())
}

func getJSON(ctx context.Context, c *http.Client, url string, out any) error {
	status, body, err := get(ctx, c, url)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("GET %s: %d %.300s", url, status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decoding GET %s: %w", url, err)
	}
	return nil
}

// FreeAddress returns a loopback address with a port that nothing listens
// on now.
func FreeAddress() (string, error) {
	port, err := controlplane.FreePort("127.0.0.1")
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

func splitHostPort(addr string) (host, port string, err error) {
	host, port, err = net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("splitting %s: %w", addr, err)
	}
	return host, port, nil
}
