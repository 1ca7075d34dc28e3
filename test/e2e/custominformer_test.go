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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// vmManager is an external resource manager publishing ExternalWorkloads
// over HTTP, as a VM manager next to the cluster would.
type vmManager struct {
	store *resourcemanager.Store
	srv   *http.Server
	url   string
}

// newVMStore returns an empty store of ExternalWorkloads, closed when the
// test ends.
func newVMStore(t *testing.T) *resourcemanager.Store {
	t.Helper()
	s, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: bsv1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         bsv1.ExternalWorkloadsResource,
		Example:          &bsv1.ExternalWorkload{},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// serveVMs serves store on ln until the test ends.
func serveVMs(t *testing.T, store *resourcemanager.Store, ln net.Listener) *vmManager {
	t.Helper()
	m := &vmManager{store: store, url: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: store.Handler(), ReadHeaderTimeout: 10 * time.Second}}
	served := make(chan error, 1)
	go func() { served <- m.srv.Serve(ln) }()
	t.Cleanup(func() {
		// End the watch streams first, so that Close has no long
		// responses to cut.
		store.Close()
		_ = m.srv.Close()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("VM manager on %s: %v", m.url, err)
		}
	})
	return m
}

// startVMManager listens on a free loopback port and serves a new store.
func startVMManager(t *testing.T) *vmManager {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveVMs(t, newVMStore(t), ln)
}

// vm is a running VM of cpu on node.
func vm(name, node, cpu string) *bsv1.ExternalWorkload {
	return &bsv1.ExternalWorkload{
		TypeMeta:   metav1.TypeMeta{APIVersion: bsv1.SchemeGroupVersion.String(), Kind: "ExternalWorkload"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: bsv1.ExternalWorkloadSpec{NodeName: node, WorkloadKind: "vm", Owner: "e2e",
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("1Gi")}},
	}
}

// writeSchedulerConfig writes a configuration file and returns its path.
func writeSchedulerConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	content := "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n" + body
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// httpInformerConfig is a configuration with one custom informer "vms" of
// ExternalWorkloads listed and watched at url.
func httpInformerConfig(t *testing.T, url string) string {
	return writeSchedulerConfig(t, fmt.Sprintf(`customInformers:
- name: vms
  resource: ExternalWorkload
  source:
    http:
      url: %s
`, url))
}

// externalOn says whether node n carries exactly the external CPU milli
// and the keys.
func externalOn(d *cache.Dump, n string, milli int64, keys ...string) bool {
	nd := node(d, n)
	if nd == nil {
		return false
	}
	return nd.External.MilliCPU == milli && slices.Equal(nd.ExternalKeys, keys)
}

// checkNoOvercommit fails if a node of names has more requested plus
// external CPU than it can schedule.
func checkNoOvercommit(t *testing.T, d *cache.Dump, names ...string) {
	t.Helper()
	for _, n := range names {
		nd := node(d, n)
		if nd == nil {
			continue
		}
		if used := nd.Requested.MilliCPU + nd.External.MilliCPU; used > nd.Schedulable.MilliCPU {
			t.Errorf("node %s is over-committed: requested %dm + external %dm > schedulable %dm (pods %v, external %v)",
				n, nd.Requested.MilliCPU, nd.External.MilliCPU, nd.Schedulable.MilliCPU, nd.Pods, nd.ExternalKeys)
		}
	}
}

// queuedJob finds id in any sub-queue of the dump, with the sub-queue's
// name.
func queuedJob(d *cache.Dump, id string) (string, *schedulingqueue.JobDump) {
	for _, q := range []struct {
		name string
		jobs []schedulingqueue.JobDump
	}{{"active", d.Queue.Active}, {"backoff", d.Queue.Backoff}, {"unschedulable", d.Queue.Unschedulable},
		{"inFlight", d.Queue.InFlight}, {"awaitingBinding", d.Queue.AwaitingBinding}} {
		for i := range q.jobs {
			if q.jobs[i].ID == id {
				return q.name, &q.jobs[i]
			}
		}
	}
	return "", nil
}

// waitPodBoundTo waits until pod is bound to nodeName. why says what freed
// the room; on failure the message shows where the job waits in the queue
// and which events may wake it, next to the node's idle capacity.
func waitPodBoundTo(t *testing.T, s *scheduler, ns, pod, nodeName, why string) {
	t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 45*time.Second, true, func(context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p.Spec.NodeName
		return got != "", nil
	})
	if err == nil && got == nodeName {
		return
	}
	d := s.dump(t)
	where, qj := queuedJob(d, ns+"/pod:"+pod)
	var idle int64
	if n := node(d, nodeName); n != nil {
		idle = n.Idle.MilliCPU
	}
	queued := "not queued"
	if qj != nil {
		queued = fmt.Sprintf("in the %s queue, attempts %d, waiting for events %v, last failure %q", where, qj.Attempts, qj.Events, qj.LastFailure)
	}
	t.Fatalf("after %s, pod %s/%s is bound to %q, want %s (%v); %s has %dm CPU idle; the job is %s",
		why, ns, pod, got, nodeName, err, nodeName, idle, queued)
}

// podsOn returns the pods of placements bound to nodeName, sorted.
func podsOn(placements map[string]string, nodeName string) []string {
	var out []string
	for p, n := range placements {
		if n == nodeName {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// isUnschedulable reports whether pod has PodScheduled=False/Unschedulable.
func isUnschedulable(t *testing.T, ns, pod string) bool {
	t.Helper()
	p, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// informerMetric reads the sample of the custom informer metric
// batch_scheduler_custom_informer_<name> with the given labels (as
// exposed: sorted, quoted, e.g. `informer="vms",type="added"`) from
// /metrics; ok is false when there is none.
func informerMetric(t *testing.T, s *scheduler, name, labels string) (v float64, ok bool) {
	t.Helper()
	code, body, err := s.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	prefix := "batch_scheduler_custom_informer_" + name + "{" + labels + "} "
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if rest, found := strings.CutPrefix(sc.Text(), prefix); found {
			f, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("metric %s%s: %v", prefix, rest, err)
			}
			return f, true
		}
	}
	return 0, false
}

// checkInformerMetric fails unless the metric is exposed and ok(value).
func checkInformerMetric(t *testing.T, s *scheduler, name, labels, want string, ok func(float64) bool) {
	t.Helper()
	v, found := informerMetric(t, s, name, labels)
	if !found {
		t.Errorf("/metrics has no batch_scheduler_custom_informer_%s{%s}", name, labels)
		return
	}
	if !ok(v) {
		t.Errorf("batch_scheduler_custom_informer_%s{%s} = %v, want %s", name, labels, v, want)
	}
}

func eq(want float64) func(float64) bool      { return func(v float64) bool { return v == want } }
func atLeast(want float64) func(float64) bool { return func(v float64) bool { return v >= want } }

// A VM published by an HTTP resource manager takes capacity away from the
// node it runs on: pods that would fit only if the VM were ignored do not
// land there. When the VM shrinks and then goes away, the freed room is
// used by the pods that were waiting.
func TestExternalWorkloadsFromHTTPManagerShrinkCapacity(t *testing.T) {
	started := time.Now()
	ns := createNamespace(t)
	mgr := startVMManager(t)
	// The VM's name is cluster-wide in the protocol; the pool keeps it
	// apart from other tests' in logs.
	vmName := "vm-" + pool(t)
	key := "externalworkload/" + vmName
	nodeA, nodeB := "ew-http-a", "ew-http-b"
	four := res{"cpu": "4", "memory": "8Gi", "pods": "20"}
	mustNode(t, poolNode(t, nodeA, four).Obj())
	mustNode(t, poolNode(t, nodeB, four).Obj())
	if err := mgr.store.Create(vm(vmName, nodeA, "3")); err != nil {
		t.Fatal(err)
	}
	s := startPoolScheduler(t, "--config-path", httpInformerConfig(t, mgr.url))
	s.waitReady(t)
	// Ready means the custom informer's initial list was delivered too.
	d := s.dump(t)
	if !externalOn(d, nodeA, 3000, key) || !externalOn(d, nodeB, 0) {
		b, _ := json.MarshalIndent(d.Nodes, "", "  ")
		t.Fatalf("ready, but the VM's 3 CPU are not accounted on %s alone:\n%s", nodeA, b)
	}
	if n := node(d, nodeA); n.Idle.MilliCPU != 1000 {
		t.Errorf("%s idle = %dm CPU, want 1000m (4 minus the VM's 3)", nodeA, n.Idle.MilliCPU)
	}
	if !slices.ContainsFunc(d.Handlers.Registrations, func(r cache.RegistrationStatus) bool { return r.Name == "custom/vms" && r.Synced }) {
		t.Errorf("no synced registration custom/vms in the dump: %+v", d.Handlers.Registrations)
	}

	// Three pods of 2 CPU: without the VM, two would fit on each node.
	// With it, A has 1 CPU left: two land on B and one waits.
	for i := 0; i < 3; i++ {
		mustPod(t, st.MakePod().Namespace(ns).Name(fmt.Sprintf("p-%d", i)).Req(res{"cpu": "2"}).Obj())
	}
	// Settled: every pod bound, or two bound and the third found
	// unschedulable.
	var waiting string
	placed := waitForPods(t, ns, "the pods placed or found unschedulable", func(n map[string]string) bool {
		waiting = ""
		for p, node := range n {
			if node == "" {
				if waiting != "" {
					return false
				}
				waiting = p
			}
		}
		return waiting == "" || isUnschedulable(t, ns, waiting)
	})
	if onA := podsOn(placed, nodeA); len(onA) > 0 {
		d := s.dump(t)
		checkNoOvercommit(t, d, nodeA, nodeB)
		a := node(d, nodeA)
		t.Fatalf("pods %v (2 CPU each) were bound to %s, which has 4 CPU and runs a 3 CPU VM: the scheduler ignored the external usage "+
			"it accounts (%s now: requested %dm, external %dm %v, idle %dm); placements %v",
			onA, nodeA, nodeA, a.Requested.MilliCPU, a.External.MilliCPU, a.ExternalKeys, a.Idle.MilliCPU, placed)
	}
	if waiting == "" {
		t.Fatalf("all pods were bound: %v", placed)
	}
	waitUnschedulable(t, ns, waiting, "0/2 nodes are available", "2 Insufficient cpu")
	if now := podNodes(t, ns); !maps.Equal(now, placed) {
		t.Fatalf("placements changed while %s was unschedulable: %v, then %v", waiting, placed, now)
	}
	d = s.waitForDump(t, "two pods on B, the VM on A", func(d *cache.Dump) bool {
		b := node(d, nodeB)
		return externalOn(d, nodeA, 3000, key) && b != nil && b.Requested.MilliCPU == 4000 && len(b.Pods) == 2
	})
	checkNoOvercommit(t, d, nodeA, nodeB)

	// The VM shrinks to 1 CPU: A has 3 CPU free and the waiting pod takes 2.
	shrunk := vm(vmName, nodeA, "1")
	if err := mgr.store.Update(shrunk); err != nil {
		t.Fatal(err)
	}
	waitPodBoundTo(t, s, ns, waiting, nodeA, "the VM shrank from 3 to 1 CPU on "+nodeA)
	d = s.waitForDump(t, "A holds the pod and the shrunk VM", func(d *cache.Dump) bool {
		a := node(d, nodeA)
		return externalOn(d, nodeA, 1000, key) && a.Requested.MilliCPU == 2000 && a.Idle.MilliCPU == 1000
	})
	checkNoOvercommit(t, d, nodeA, nodeB)

	// Another 2 CPU pod: A has 1 CPU left, B none.
	mustPod(t, st.MakePod().Namespace(ns).Name("late").Req(res{"cpu": "2"}).Obj())
	waitUnschedulable(t, ns, "late", "0/2 nodes are available", "2 Insufficient cpu")
	if n := podNodes(t, ns)["late"]; n != "" {
		t.Fatalf("late was bound to %s although no node has 2 CPU free", n)
	}

	// The VM goes away: A has 2 CPU free, which late takes.
	if err := mgr.store.Delete("", vmName); err != nil {
		t.Fatal(err)
	}
	waitPodBoundTo(t, s, ns, "late", nodeA, "the VM on "+nodeA+" was deleted")
	d = s.waitForDump(t, "no external usage left on A", func(d *cache.Dump) bool {
		a := node(d, nodeA)
		return externalOn(d, nodeA, 0) && a.Requested.MilliCPU == 4000 && len(a.Pods) == 2
	})
	checkNoOvercommit(t, d, nodeA, nodeB)

	// The source's metrics: synced, one update and one delete seen on the
	// watch (the VM that existed at start came with the list), no errors.
	checkInformerMetric(t, s, "synced", `informer="vms"`, "1", eq(1))
	checkInformerMetric(t, s, "events_total", `informer="vms",type="modified"`, "1", eq(1))
	checkInformerMetric(t, s, "events_total", `informer="vms",type="deleted"`, "1", eq(1))
	checkInformerMetric(t, s, "list_errors_total", `informer="vms"`, "0", eq(0))
	checkInformerMetric(t, s, "last_event_timestamp_seconds", `informer="vms"`, "a time since the test began",
		atLeast(float64(started.Unix())))
}

// A scheduler whose resource manager is not up yet keeps running but is not
// ready, and says which custom informer it waits for; once the manager
// answers on that address, it becomes ready with the manager's objects.
func TestCustomInformerManagerDownThenUp(t *testing.T) {
	addr := freeAddress(t) // nothing listens here until the manager starts
	nodeA := "ew-late-a"
	mustNode(t, poolNode(t, nodeA, res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Obj())
	store := newVMStore(t)
	vmName := "vm-" + pool(t)
	if err := store.Create(vm(vmName, nodeA, "2500m")); err != nil {
		t.Fatal(err)
	}
	s := startPoolScheduler(t, "--config-path", httpInformerConfig(t, "http://"+addr))
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, _, _ := s.get("/healthz")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatal("/healthz never answered")
	}
	// The native informers sync at once; the custom one cannot: readyz
	// ends up waiting for it alone.
	want := "[-]handler-sync failed: waiting for custom/vms\n"
	waitingForVMsAlone := func(code int, body []byte) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(string(body), want) && strings.Count(string(body), "[-]") == 1
	}
	var last string
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, body, err := s.get("/readyz")
		last = fmt.Sprintf("%d %q %v", code, body, err)
		return waitingForVMsAlone(code, body), nil
	})
	if err != nil {
		t.Fatalf("/readyz with the manager down never waited for custom/vms alone; last answer %s", last)
	}
	// And so it stays while the reflector retries.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		code, body, err := s.get("/readyz")
		if err != nil || !waitingForVMsAlone(code, body) {
			t.Fatalf("/readyz with the manager down = %d %q %v; want 503 %q", code, body, err, want)
		}
		d := s.dump(t)
		if d.Handlers.Synced {
			t.Fatal("the dump claims the handlers synced while the manager is down")
		}
		if !slices.ContainsFunc(d.Handlers.Registrations, func(r cache.RegistrationStatus) bool { return r.Name == "custom/vms" && !r.Synced }) {
			t.Fatalf("the dump has no unsynced registration custom/vms: %+v", d.Handlers.Registrations)
		}
	}
	checkInformerMetric(t, s, "synced", `informer="vms"`, "0", eq(0))
	checkInformerMetric(t, s, "list_errors_total", `informer="vms"`, "at least 1", atLeast(1))
	if code, exited := s.h.ExitCode(); exited {
		t.Fatalf("batch-scheduler exited with %d while the manager was down", code)
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("starting the manager on %s: %v", addr, err)
	}
	serveVMs(t, store, ln)
	s.waitReady(t)
	d := s.dump(t)
	if !externalOn(d, nodeA, 2500, "externalworkload/"+vmName) {
		b, _ := json.MarshalIndent(node(d, nodeA), "", "  ")
		t.Errorf("ready, but the manager's VM is not accounted on %s:\n%s", nodeA, b)
	}
	checkInformerMetric(t, s, "synced", `informer="vms"`, "1", eq(1))
	// And the watch is live: a change shows up.
	if err := store.Delete("", vmName); err != nil {
		t.Fatal(err)
	}
	s.waitForDump(t, "the VM gone from "+nodeA, func(d *cache.Dump) bool { return externalOn(d, nodeA, 0) })
	checkInformerMetric(t, s, "events_total", `informer="vms",type="deleted"`, "1", eq(1))
}

// The kubeconfig source lists and watches ExternalWorkload objects of a real
// apiserver (here the test's own control plane, through its kubeconfig
// file); creates, updates, status changes and deletes reach the cache.
func TestKubeconfigSourceAgainstRealAPIServer(t *testing.T) {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, dyn)
	workloads := dyn.Resource(bsv1.SchemeGroupVersion.WithResource(bsv1.ExternalWorkloadsResource))
	nodeA, nodeB := "ew-kc-a", "ew-kc-b"
	mustNode(t, poolNode(t, nodeA, res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Obj())
	mustNode(t, poolNode(t, nodeB, res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Obj())
	first, second := "vm-1-"+pool(t), "vm-2-"+pool(t)
	keyFirst, keySecond := "externalworkload/"+first, "externalworkload/"+second
	for _, name := range []string{first, second} {
		t.Cleanup(func() { _ = workloads.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	// One exists before the scheduler starts (initial list), one after
	// (watch).
	if _, err := createWhenServed(t, workloads, toUnstructured(t, vm(first, nodeA, "1500m"))); err != nil {
		t.Fatalf("creating %s: %v", first, err)
	}
	cfg := writeSchedulerConfig(t, fmt.Sprintf(`customInformers:
- name: vms
  resource: ExternalWorkload
  source:
    kubeconfig:
      kubeconfig: %s
`, cp.KubeconfigPath))
	s := startPoolScheduler(t, "--config-path", cfg)
	s.waitReady(t)
	d := s.dump(t)
	if !externalOn(d, nodeA, 1500, keyFirst) {
		b, _ := json.MarshalIndent(node(d, nodeA), "", "  ")
		t.Fatalf("ready, but %s is not accounted on %s:\n%s", first, nodeA, b)
	}

	if _, err := workloads.Create(t.Context(), toUnstructured(t, vm(second, nodeA, "1")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitForDump(t, "both VMs on A", func(d *cache.Dump) bool {
		return externalOn(d, nodeA, 2500, keyFirst, keySecond) && node(d, nodeA).Idle.MilliCPU == 1500
	})

	// Update: the first shrinks, the second moves to B.
	update := func(name string, change func(w *bsv1.ExternalWorkload)) {
		t.Helper()
		u, err := workloads.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var w bsv1.ExternalWorkload
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
			t.Fatal(err)
		}
		change(&w)
		if _, err := workloads.Update(t.Context(), toUnstructured(t, &w), metav1.UpdateOptions{}); err != nil {
			t.Fatalf("updating %s: %v", name, err)
		}
	}
	update(first, func(w *bsv1.ExternalWorkload) { w.Spec.Resources[v1.ResourceCPU] = resource.MustParse("500m") })
	update(second, func(w *bsv1.ExternalWorkload) { w.Spec.NodeName = nodeB })
	s.waitForDump(t, "the first shrunk on A, the second on B", func(d *cache.Dump) bool {
		return externalOn(d, nodeA, 500, keyFirst) && externalOn(d, nodeB, 1000, keySecond)
	})

	// Status: a Stopped VM uses nothing (status goes through the status
	// subresource).
	u, err := workloads.Get(t.Context(), second, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, string(bsv1.ExternalWorkloadStopped), "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if _, err := workloads.UpdateStatus(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitForDump(t, "the stopped VM no longer counted on B", func(d *cache.Dump) bool {
		return externalOn(d, nodeB, 0) && externalOn(d, nodeA, 500, keyFirst)
	})

	if err := workloads.Delete(t.Context(), first, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitForDump(t, "the deleted VM gone from A", func(d *cache.Dump) bool {
		a := node(d, nodeA)
		return externalOn(d, nodeA, 0) && a.Idle.MilliCPU == 4000
	})
	// At least what this test did came through the watch (other objects
	// of the shared apiserver may add to it).
	checkInformerMetric(t, s, "synced", `informer="vms"`, "1", eq(1))
	checkInformerMetric(t, s, "events_total", `informer="vms",type="added"`, "at least 1", atLeast(1))
	checkInformerMetric(t, s, "events_total", `informer="vms",type="modified"`, "at least 3", atLeast(3))
	checkInformerMetric(t, s, "events_total", `informer="vms",type="deleted"`, "at least 1", atLeast(1))
}
