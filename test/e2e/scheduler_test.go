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
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// scheduler is a batch-scheduler command running in this process
// (harness.Scheduler), its secure port read with the tokens of
// endpointAccess.
type scheduler struct {
	h       *harness.Scheduler
	access  *endpointAccess
	stopped bool
}

// startScheduler runs the real command with kubeconfig and args, and stops
// it when the test ends.
func startScheduler(t *testing.T, kubeconfig string, args ...string) *scheduler {
	t.Helper()
	return startSchedulerWith(t, nil, kubeconfig, args...)
}

// startSchedulerWith is startScheduler for an out-of-tree build of the
// command with opts.
func startSchedulerWith(t *testing.T, opts []app.Option, kubeconfig string, args ...string) *scheduler {
	t.Helper()
	access := endpoints(t)
	// Leader election is tested on its own (the harness turns it off);
	// elsewhere it would only add the wait for a lease released by the
	// previous test's scheduler. Tokens are reviewed by the API server
	// directly, also when kubeconfig goes through a proxy (see
	// TestReadyzWaitsForTheSyncBarrier).
	h, err := harness.StartScheduler(context.Background(), harness.SchedulerOptions{
		Kubeconfig: kubeconfig,
		Secure:     cp,
		Serving:    &harness.Serving{CertFile: access.certFile, KeyFile: access.keyFile, Client: access.client},
		Args: append([]string{"--authentication-kubeconfig", cp.KubeconfigPath, "--authorization-kubeconfig", cp.KubeconfigPath},
			args...),
		AppOptions: opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &scheduler{h: h, access: access}
	t.Cleanup(func() {
		if code := s.stop(t); code != 0 {
			t.Errorf("batch-scheduler exited with %d: %s", code, h.Stderr())
		}
	})
	return s
}

// stop cancels the command and returns its exit code; calling it again
// returns 0.
func (s *scheduler) stop(t *testing.T) int {
	t.Helper()
	if s.stopped {
		return 0
	}
	s.stopped = true
	_ = s.h.Stop() // its error says what ExitCode tells
	code, exited := s.h.ExitCode()
	if !exited {
		t.Fatalf("batch-scheduler did not stop within %s of being cancelled", harness.SchedulerStopTimeout)
	}
	return code
}

// get fetches path from the secure port with the token of a
// ServiceAccount allowed to read /metrics and /debug/*.
func (s *scheduler) get(path string) (int, []byte, error) {
	return s.getAs(s.access.token, path)
}

// getAs fetches path from the secure port with token; an empty token
// sends no credentials.
func (s *scheduler) getAs(token, path string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, s.h.URL+path, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.access.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// dump fetches /debug/cache.
func (s *scheduler) dump(t *testing.T) *cache.Dump {
	t.Helper()
	code, body, err := s.get("/debug/cache")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /debug/cache: %d %v", code, err)
	}
	var d cache.Dump
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("decoding /debug/cache: %v", err)
	}
	return &d
}

// waitReady polls /readyz until it answers 200.
func (s *scheduler) waitReady(t *testing.T) {
	t.Helper()
	var last string
	err := harness.Poll(t.Context(), 60*time.Second, "/readyz to answer 200", s.h.Alive, func() (bool, error) {
		code, body, err := s.get("/readyz")
		last = fmt.Sprintf("%d %s %v", code, body, err)
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("/readyz never became ready (%v); last answer: %s", err, last)
	}
}

// waitForDump polls /debug/cache until cond holds, failing with what and
// the last dump otherwise.
func (s *scheduler) waitForDump(t *testing.T, what string, cond func(d *cache.Dump) bool) *cache.Dump {
	t.Helper()
	var last *cache.Dump
	err := harness.Poll(t.Context(), 30*time.Second, what, s.h.Alive, func() (bool, error) {
		last = s.dump(t)
		return cond(last), nil
	})
	if err != nil {
		b, _ := json.MarshalIndent(last, "", "  ")
		t.Fatalf("waiting for %s: %v\nlast dump:\n%s", what, err, b)
	}
	return last
}

func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func node(d *cache.Dump, name string) *cache.NodeDump {
	for i := range d.Nodes {
		if d.Nodes[i].Name == name {
			return &d.Nodes[i]
		}
	}
	return nil
}

func job(d *cache.Dump, id string) *cache.JobDump {
	for i := range d.Jobs {
		if d.Jobs[i].ID == id {
			return &d.Jobs[i]
		}
	}
	return nil
}

// createNamespace creates a namespace for one test and deletes it after.
func createNamespace(t *testing.T) string {
	t.Helper()
	// A deleted namespace lingers until the namespace controller emptied
	// it, so a random suffix lets a test run again at once.
	name := "e2e-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 56 {
		name = name[:56]
	}
	name += "-" + utilrand.String(5)
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		// Most nodes here are plain API objects (CreateNode) that no
		// kubelet backs: their pods are deleted with grace period 0, or
		// they would stay terminating; the namespace controller deletes
		// the rest.
		ctx := context.Background()
		_ = cp.Client.CoreV1().Pods(name).DeleteCollection(ctx, now, metav1.ListOptions{})
		_ = cp.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// now deletes at once, as a kubelet would after the containers stopped.
var now = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}

// deleteNodesAfter removes the nodes when the test ends, so that tests do
// not see each other's nodes.
func deleteNodesAfter(t *testing.T, names ...string) {
	t.Cleanup(func() {
		for _, n := range names {
			_ = cp.Client.CoreV1().Nodes().Delete(context.Background(), n, now)
		}
	})
}
