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
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
)

// SchedulerProcess is batch-scheduler run from a built binary as a child
// process, for tests that kill it (SIGKILL) and start it again. Its
// endpoints are on a plain loopback port (--insecure-port).
type SchedulerProcess struct {
	*Process
	// URL is the base URL of its endpoints.
	URL string
}

// StartSchedulerProcess starts bin with leader election and the secure
// port off, its endpoints on addr ("127.0.0.1:<port>"; empty picks a free
// one), logging to dir/<name>.log, and args. It does not wait for
// /readyz.
func StartSchedulerProcess(ctx context.Context, name, bin, dir, kubeconfig, addr string, args ...string) (*SchedulerProcess, error) {
	if addr == "" {
		var err error
		if addr, err = FreeAddress(); err != nil {
			return nil, err
		}
	}
	_, port, err := splitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, err := StartProcess(ctx, ProcessSpec{Name: name, Bin: bin, Dir: dir, Args: append([]string{"--kubeconfig", kubeconfig,
		"--leader-elect=false", "--secure-port=0", "--insecure-bind-address=127.0.0.1", "--insecure-port", port}, args...)})
	if err != nil {
		return nil, err
	}
	return &SchedulerProcess{Process: p, URL: "http://" + addr}, nil
}

// WaitReady waits until /readyz answers 200, the process exits, or
// timeout passes.
func (s *SchedulerProcess) WaitReady(ctx context.Context, timeout time.Duration) error {
	return waitReady(ctx, httpClient, s.URL, timeout, s.Alive)
}

// DemandURL is where an allocator reads the scheduler's demand.
func (s *SchedulerProcess) DemandURL() string { return s.URL + demand.Path }

// Get fetches path from the scheduler's endpoints.
func (s *SchedulerProcess) Get(ctx context.Context, path string) (int, []byte, error) {
	return get(ctx, httpClient, s.URL+path)
}
