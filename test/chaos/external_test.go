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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// externalAgreeBound is how soon after an external manager answers again
// the cache must agree with it (issue 12, fault 4).
const externalAgreeBound = 5 * time.Second

// vmSpec is a VM on a node: its CPU in millicores (memory is 1Gi).
type vmSpec struct {
	node  string
	milli int64
}

// manager is an external resource manager serving ExternalWorkloads on
// a fixed loopback address, as a VM manager next to the cluster would.
type manager struct {
	store  *resourcemanager.Store
	srv    *http.Server
	served chan error
}

// startManager serves vms on addr; bumps updates each VM that many times
// first, so that its resourceVersions run high.
func startManager(addr string, vms map[string]vmSpec, bumps int) (*manager, error) {
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: bsv1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         bsv1.ExternalWorkloadsResource,
		Example:          &bsv1.ExternalWorkload{},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager's store: %w", err)
	}
	names := make([]string, 0, len(vms))
	for name := range vms {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		w := vmObject(name, vms[name])
		if err := store.Create(w); err != nil {
			store.Close()
			return nil, fmt.Errorf("creating VM %s: %w", name, err)
		}
		for i := range bumps {
			w.Labels = map[string]string{"generation": fmt.Sprint(i)}
			if err := store.Update(w); err != nil {
				store.Close()
				return nil, fmt.Errorf("updating VM %s: %w", name, err)
			}
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("listening for the manager on %s: %w", addr, err)
	}
	m := &manager{store: store, served: make(chan error, 1),
		srv: &http.Server{Handler: store.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	go func() { m.served <- m.srv.Serve(ln) }()
	return m, nil
}

// kill drops the manager's connections at once, as a crash would, then
// frees its store.
func (m *manager) kill() error {
	err := m.srv.Close()
	m.store.Close()
	if serveErr := <-m.served; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

func vmObject(name string, s vmSpec) *bsv1.ExternalWorkload {
	return &bsv1.ExternalWorkload{
		TypeMeta:   metav1.TypeMeta{APIVersion: bsv1.SchemeGroupVersion.String(), Kind: "ExternalWorkload"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: bsv1.ExternalWorkloadSpec{NodeName: s.node, WorkloadKind: "vm", Owner: "chaos",
			Resources: v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(s.milli, resource.DecimalSI), v1.ResourceMemory: resource.MustParse("1Gi")}},
	}
}

// externalTruth is the external usage as the test knows it over time:
// before the restart, the old state; for externalAgreeBound after it, the
// smaller of both (the scheduler may still act on the old one); then the
// new state.
type externalTruth struct {
	mu        sync.Mutex
	before    map[string]vmSpec
	after     map[string]vmSpec
	restarted time.Time
}

func perNode(vms map[string]vmSpec) map[string]int64 {
	out := map[string]int64{}
	for _, vm := range vms {
		out[vm.node] += vm.milli
	}
	return out
}

func (x *externalTruth) usage(node string, at time.Time) podwatch.Capacity {
	x.mu.Lock()
	defer x.mu.Unlock()
	count := func(vms map[string]vmSpec) podwatch.Capacity {
		var c podwatch.Capacity
		for _, vm := range vms {
			if vm.node == node {
				c.MilliCPU += vm.milli
				c.Memory += 1 << 30
			}
		}
		return c
	}
	old := count(x.before)
	if x.restarted.IsZero() || at.Before(x.restarted) {
		return old
	}
	cur := count(x.after)
	if at.Before(x.restarted.Add(externalAgreeBound)) {
		return podwatch.Capacity{MilliCPU: min(old.MilliCPU, cur.MilliCPU), Memory: min(old.Memory, cur.Memory)}
	}
	return cur
}

// Fault 4: the external manager killed, then started again with other
// VMs and resourceVersions lower than before; the cache must agree with it
// within 5 s of its answering again.
func TestExternalManagerRestartedWithOlderState(t *testing.T) {
	addr := func() string {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("127.0.0.1:%d", port)
	}()
	truth := &externalTruth{}
	var mgr *manager
	e := setup(t, options{external: truth.usage, prepare: func(e *env) []string {
		truth.before = map[string]vmSpec{"vm-a": {e.nodes[0], 2000}, "vm-b": {e.nodes[1], 1000}}
		truth.after = map[string]vmSpec{"vm-a": {e.nodes[0], 3000}, "vm-c": {e.nodes[2], 1000}}
		var err error
		if mgr, err = startManager(addr, truth.before, 30); err != nil {
			t.Fatal(err)
		}
		config := writeFile(t, "config.yaml", fmt.Sprintf(`apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
customInformers:
- name: vms
  resource: ExternalWorkload
  source:
    http:
      url: http://%s
`, addr))
		return []string{"--config-path", config}
	}})
	t.Cleanup(func() { _ = mgr.kill() })
	e.waitBinds(5, 60*time.Second, "scheduling before the fault")
	agrees := func(want map[string]vmSpec) func(context.Context) (bool, error) {
		milli := perNode(want)
		return func(ctx context.Context) (bool, error) {
			code, body, err := e.sched().Get(ctx, "/debug/cache")
			if err != nil || code != http.StatusOK {
				return false, nil
			}
			var d cache.Dump
			if err := json.Unmarshal(body, &d); err != nil {
				return false, fmt.Errorf("decoding /debug/cache: %w", err)
			}
			for _, n := range d.Nodes {
				if !slices.Contains(e.nodes, n.Name) {
					continue
				}
				var keys []string
				for name, vm := range want {
					if vm.node == n.Name {
						keys = append(keys, "externalworkload/"+name)
					}
				}
				sort.Strings(keys)
				if n.External.MilliCPU != milli[n.Name] || !slices.Equal(n.ExternalKeys, keys) {
					return false, nil
				}
			}
			return true, nil
		}
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, agrees(truth.before)); err != nil {
		t.Fatalf("the cache never agreed with the first manager: %v", err)
	}
	var o outcome
	var worst time.Duration
	down := 5 * time.Second
	if full {
		down = 15 * time.Second
	}
	for round := range rounds() {
		podwatch.Pause(t.Context(), phase()/2)
		if err := mgr.kill(); err != nil {
			t.Fatalf("killing the manager: %v", err)
		}
		podwatch.Pause(t.Context(), down) // down, the load goes on
		// Each restart brings other VMs, with versions from 1 again.
		before, after := truth.after, truth.before
		if round == 0 {
			before, after = truth.before, truth.after
		}
		// Strictly lower versions at each restart (the first manager went
		// up to about 62): 42, 22, then 2 in the full run. A restart whose
		// versions equal the last ones seen would let a watch resume as if
		// nothing had changed, which no client can detect.
		bumps := 10 * (rounds() - 1 - round)
		var err error
		if mgr, err = startManager(addr, after, bumps); err != nil {
			t.Fatal(err)
		}
		answering := time.Now()
		truth.mu.Lock()
		truth.before, truth.after, truth.restarted = before, after, answering
		truth.mu.Unlock()
		// Measure how long it really takes (up to 90 s), then judge.
		err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 90*time.Second, true, agrees(after))
		took := time.Since(answering)
		worst = max(worst, took)
		if err != nil {
			t.Errorf("round %d: the cache did not agree with the restarted manager within 90 s", round)
		} else if took > externalAgreeBound {
			t.Errorf("round %d: the cache agreed with the restarted manager %.1f s after it answered again, want <= %s "+
				"(the reflector's backoff; fixed on branch h-custominformer)", round, took.Seconds(), externalAgreeBound)
		} else {
			t.Logf("round %d: the cache agreed with the restarted manager %.2f s after it answered again", round, took.Seconds())
		}
		e.recover(e.sched(), &o)
	}
	o.note = fmt.Sprintf("down %s per round; cache agreed with the restarted manager at worst %.1f s after it answered (bound %s)", down, worst.Seconds(), externalAgreeBound)
	e.finish("4. external manager restarted, older resourceVersions", &o)
}
