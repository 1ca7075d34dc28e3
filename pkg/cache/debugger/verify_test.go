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

package debugger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// verifyFixture is a cache fed directly through its API as the default
// event handler would feed it, and the sources that agree with it: a fake
// API server and a custom source of ExternalWorkloads. A test breaks the
// agreement on one side only.
type verifyFixture struct {
	c         *cache.SchedulerCache
	client    *fake.Clientset
	workloads *fcache.FakeControllerSource
}

func newVerifyFixture(t *testing.T) *verifyFixture {
	t.Helper()
	client := fake.NewClientset()
	c, _ := newTestCache(t, cache.Options{Client: client})
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	inf := toolscache.NewSharedIndexInformer(src, &v1alpha1.ExternalWorkload{}, 0, toolscache.Indexers{})
	mustNoErr(t, "adding the custom informer", c.AddCustomInformer(cache.CustomInformer{
		Name: "vms", Resource: framework.ExternalWorkload, Informer: inf, ListerWatcher: src}))
	f := &verifyFixture{c: c, client: client, workloads: src}

	f.node(t, bigNode("n1"), true)
	f.node(t, bigNode("n2"), true)
	f.pod(t, st.MakePod().Name("bound").Node("n1").Req(res{v1.ResourceCPU: "1"}).Obj(), true)
	f.pod(t, st.MakePod().Name("theirs").Scheduler("default-scheduler").Node("n2").Req(res{v1.ResourceCPU: "2"}).Obj(), true)
	f.pod(t, st.MakePod().Name("done").Node("n1").Phase(v1.PodSucceeded).Req(res{v1.ResourceCPU: "3"}).Obj(), true)
	f.pod(t, st.MakePod().Name("solo").Req(res{v1.ResourceCPU: "1"}).Obj(), true)
	f.pod(t, st.MakePod().Name("g-0").Group("g").MinAvailable("2").Obj(), true)
	f.pod(t, st.MakePod().Name("g-1").Group("g").MinAvailable("2").Obj(), true)
	// Untracked: another scheduler's pending pod, a gated pod.
	f.pod(t, st.MakePod().Name("other").Scheduler("default-scheduler").Obj(), false)
	gated := st.MakePod().Name("gated").Obj()
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}}
	f.pod(t, gated, false)
	f.workload(t, workload("vm-1", "n1", "1"), true)
	f.workload(t, workload("vm-off", "n2", "1", v1alpha1.ExternalWorkloadStopped), false)
	return f
}

func workload(name, node, cpu string, phase ...v1alpha1.ExternalWorkloadPhase) *v1alpha1.ExternalWorkload {
	w := &v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec:       v1alpha1.ExternalWorkloadSpec{NodeName: node, WorkloadKind: "vm", Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}},
		Status:     v1alpha1.ExternalWorkloadStatus{Phase: v1alpha1.ExternalWorkloadRunning},
	}
	if len(phase) > 0 {
		w.Status.Phase = phase[0]
	}
	return w
}

// node creates n in the API server and, if toCache, in the cache.
func (f *verifyFixture) node(t *testing.T, n *v1.Node, toCache bool) {
	t.Helper()
	if _, err := f.client.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if toCache {
		mustNoErr(t, "adding node", f.c.AddOrUpdateNode(n))
	}
}

// pod creates p in the API server and, if toCache, in the cache as bound
// or pending.
func (f *verifyFixture) pod(t *testing.T, p *v1.Pod, toCache bool) {
	t.Helper()
	if _, err := f.client.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !toCache {
		return
	}
	if p.Spec.NodeName != "" {
		mustNoErr(t, "adding pod", f.c.AddPod(p))
	} else {
		mustNoErr(t, "adding pending pod", f.c.AddPendingPod(p))
	}
}

// workload adds w to the custom source and, if toCache, its usage to the
// cache.
func (f *verifyFixture) workload(t *testing.T, w *v1alpha1.ExternalWorkload, toCache bool) {
	t.Helper()
	f.workloads.Add(w)
	if toCache {
		mustNoErr(t, "setting external usage", f.c.SetExternalUsage(externalWorkloadKey(w), w.Spec.NodeName, resources.FromList(w.Spec.Resources)))
	}
}

// quick re-checks once, at once: what the first comparison finds and the
// re-check confirms is reported.
var quick = VerifyOptions{Rechecks: 1, Grace: time.Millisecond}

func mustVerify(t *testing.T, c *cache.SchedulerCache, opts VerifyOptions) *VerifyResult {
	t.Helper()
	res, err := Verify(t.Context(), c, opts)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return res
}

func TestVerifyConsistent(t *testing.T) {
	f := newVerifyFixture(t)
	res := mustVerify(t, f.c, quick)
	if !res.Consistent || len(res.Differences) != 0 {
		t.Fatalf("Verify of a consistent cache = %+v", res.Differences)
	}
	// Jobs are the records: bound, solo, g and done, but not theirs,
	// another scheduler's bound pod outside any gang, which has none.
	want := VerifyCounts{Nodes: 2, Pods: 8, ExternalWorkloads: 2, Jobs: 4, QueuedJobs: 2, CustomSources: 1}
	if res.Counts != want {
		t.Errorf("counts = %+v, want %+v", res.Counts, want)
	}
	if res.Rechecks != 0 || res.InFlight != 0 {
		t.Errorf("rechecks, inFlight = %d, %d; want 0, 0 when nothing differs", res.Rechecks, res.InFlight)
	}
	// An assumed pod (bind in flight) is no difference.
	solo, _ := f.client.CoreV1().Pods("default").Get(t.Context(), "solo", metav1.GetOptions{})
	mustNoErr(t, "assuming", f.c.AssumePod(solo, "n2"))
	if res := mustVerify(t, f.c, quick); !res.Consistent {
		t.Errorf("Verify with an assumed pod = %+v", res.Differences)
	}
}

// Each kind of difference, injected on one side only, is found.
func TestVerifyFindsDifferences(t *testing.T) {
	ctx := t.Context
	for _, tc := range []struct {
		name   string
		inject func(t *testing.T, f *verifyFixture)
		// alter corrupts the cache's state as every copy of it shows it.
		alter func(v *cache.View)
		// want are kind/name/field of differences that must be reported.
		want []string
	}{{
		name:   "node missing from the cache",
		inject: func(t *testing.T, f *verifyFixture) { f.node(t, bigNode("n3"), false) },
		want:   []string{"Node/n3/presence"},
	}, {
		name:   "node the API server does not have",
		inject: func(t *testing.T, f *verifyFixture) { mustNoErr(t, "add", f.c.AddOrUpdateNode(bigNode("ghost"))) },
		want:   []string{"Node/ghost/presence"},
	}, {
		name: "allocatable changed without an event",
		inject: func(t *testing.T, f *verifyFixture) {
			n := st.MakeNode().Name("n2").Capacity(res{v1.ResourceCPU: "20", v1.ResourceMemory: "10Gi", v1.ResourcePods: "110"}).Obj()
			if _, err := f.client.CoreV1().Nodes().Update(ctx(), n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"Node/n2/allocatable"},
	}, {
		name: "bound pod missing",
		inject: func(t *testing.T, f *verifyFixture) {
			f.pod(t, st.MakePod().Name("late").Node("n2").Req(res{v1.ResourceCPU: "1"}).Obj(), false)
		},
		want: []string{"Pod/default/late/state"},
	}, {
		name: "pod that was deleted",
		inject: func(t *testing.T, f *verifyFixture) {
			if err := f.client.CoreV1().Pods("default").Delete(ctx(), "bound", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"Pod/default/bound/state"},
	}, {
		name: "pod counted on the wrong node",
		inject: func(t *testing.T, f *verifyFixture) {
			p := st.MakePod().Name("bound").Node("n2").Req(res{v1.ResourceCPU: "1"}).RV("2").Obj()
			if _, err := f.client.CoreV1().Pods("default").Update(ctx(), p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"Pod/default/bound/node"},
	}, {
		name: "pending pod bound without an event",
		inject: func(t *testing.T, f *verifyFixture) {
			p := st.MakePod().Name("solo").Node("n1").Req(res{v1.ResourceCPU: "1"}).RV("2").Obj()
			if _, err := f.client.CoreV1().Pods("default").Update(ctx(), p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		// Still pending in the cache, and its job still queued.
		want: []string{"Pod/default/solo/state", "Queue/default/pod:solo/presence"},
	}, {
		name: "finished pod still counted",
		inject: func(t *testing.T, f *verifyFixture) {
			p := st.MakePod().Name("bound").Node("n1").Phase(v1.PodFailed).Req(res{v1.ResourceCPU: "1"}).RV("2").Obj()
			if _, err := f.client.CoreV1().Pods("default").Update(ctx(), p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"Pod/default/bound/counted"},
	}, {
		name: "pod moved to another job",
		inject: func(t *testing.T, f *verifyFixture) {
			p := st.MakePod().Name("solo").Group("g").MinAvailable("2").Req(res{v1.ResourceCPU: "1"}).RV("2").Obj()
			if _, err := f.client.CoreV1().Pods("default").Update(ctx(), p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"Pod/default/solo/job", "Queue/default/g/pods", "Queue/default/pod:solo/presence"},
	}, {
		name:  "requested corrupted",
		alter: func(v *cache.View) { v.Nodes["n1"].Requested.MilliCPU += 250 },
		want:  []string{"Accounting/n1/requested"},
	}, {
		name:  "own requested corrupted",
		alter: func(v *cache.View) { v.Nodes["n2"].OwnRequested.MilliCPU += 1000 },
		want:  []string{"Accounting/n2/ownRequested"},
	}, {
		name:  "external usage corrupted",
		alter: func(v *cache.View) { v.Nodes["n1"].External.MilliCPU = 0 },
		want:  []string{"Accounting/n1/external"},
	}, {
		name:   "external workload missing",
		inject: func(t *testing.T, f *verifyFixture) { f.workload(t, workload("vm-2", "n2", "2"), false) },
		want:   []string{"ExternalWorkload/externalworkload/vm-2/presence"},
	}, {
		name:   "external workload moved",
		inject: func(t *testing.T, f *verifyFixture) { f.workloads.Modify(workload("vm-1", "n2", "1")) },
		want:   []string{"ExternalWorkload/externalworkload/vm-1/node"},
	}, {
		name: "external workload stopped",
		inject: func(t *testing.T, f *verifyFixture) {
			f.workloads.Modify(workload("vm-1", "n1", "1", v1alpha1.ExternalWorkloadStopped))
		},
		want: []string{"ExternalWorkload/externalworkload/vm-1/presence"},
	}, {
		name:   "external workload grew",
		inject: func(t *testing.T, f *verifyFixture) { f.workloads.Modify(workload("vm-1", "n1", "3")) },
		want:   []string{"ExternalWorkload/externalworkload/vm-1/usage"},
	}, {
		name:   "external workload deleted",
		inject: func(t *testing.T, f *verifyFixture) { f.workloads.Delete(workload("vm-1", "n1", "1")) },
		want:   []string{"ExternalWorkload/externalworkload/vm-1/presence"},
	}, {
		name: "cap corrupted",
		inject: func(t *testing.T, f *verifyFixture) {
			mustNoErr(t, "cap", f.c.SetNodeCap("n1", resources.Resource{MilliCPU: 100}))
		},
		alter: func(v *cache.View) { v.Nodes["n1"].Cap = &resources.Resource{MilliCPU: 5000} },
		want:  []string{"Cap/n1/cap", "Cap/n1/exceeded"},
	}, {
		name: "job lost a task",
		alter: func(v *cache.View) {
			id := framework.JobID{Namespace: "default", Name: "g", Gang: true}
			j := v.Jobs[id]
			j.Tasks = slices.DeleteFunc(slices.Clone(j.Tasks), func(t *framework.TaskInfo) bool { return t.GetUID() == "uid-g-1" })
			v.Jobs[id] = j
		},
		want: []string{"Job/default/g/tasks"},
	}, {
		name: "pending job left the queue",
		inject: func(t *testing.T, f *verifyFixture) {
			f.c.Queue().PodRemoved(framework.JobID{Namespace: "default", Name: "solo"}, "uid-solo")
		},
		want: []string{"Queue/default/pod:solo/presence"},
	}, {
		name: "all pods bound, job still queued",
		inject: func(t *testing.T, f *verifyFixture) {
			for _, name := range []string{"g-0", "g-1"} {
				p := st.MakePod().Name(name).Group("g").MinAvailable("2").Node("n2").RV("2").Obj()
				if _, err := f.client.CoreV1().Pods("default").Update(ctx(), p, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		},
		want: []string{"Queue/default/g/presence", "Pod/default/g-0/state", "Pod/default/g-1/state"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newVerifyFixture(t)
			if tc.inject != nil {
				tc.inject(t, f)
			}
			opts := quick
			opts.alterView = tc.alter
			res := mustVerify(t, f.c, opts)
			got := map[string]bool{}
			for _, d := range res.Differences {
				got[d.Kind+"/"+d.Name+"/"+d.Field] = true
				if d.Message == "" || d.Cache == d.Truth {
					t.Errorf("difference %+v: want a message and different cache and truth values", d)
				}
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("difference %s not reported; got %+v", w, res.Differences)
				}
			}
			if res.Consistent {
				t.Error("result is consistent")
			}
		})
	}
}

// A difference that the cache catches up with during the grace period
// (an event in flight) is not reported; one that persists is.
func TestVerifyIgnoresEventsInFlight(t *testing.T) {
	f := newVerifyFixture(t)
	late := st.MakePod().Name("late").Node("n2").Req(res{v1.ResourceCPU: "1"}).Obj()
	f.pod(t, late, false)
	f.node(t, bigNode("n3"), false)
	opts := VerifyOptions{Rechecks: 3, Grace: time.Millisecond}
	rounds := 0
	opts.beforeRecheck = func(round int) {
		rounds++
		if round == 1 {
			// The pod's event arrives during the second wait; the
			// node's never does.
			mustNoErr(t, "adding pod", f.c.AddPod(late))
		}
	}
	res := mustVerify(t, f.c, opts)
	if len(res.Differences) != 1 || res.Differences[0].Kind != DiffNode || res.Differences[0].Name != "n3" {
		t.Errorf("differences = %+v, want only node n3 missing", res.Differences)
	}
	if res.InFlight != 1 || res.Rechecks != 3 || rounds != 3 {
		t.Errorf("inFlight, rechecks, rounds = %d, %d, %d; want 1, 3, 3", res.InFlight, res.Rechecks, rounds)
	}
}

func TestVerifyHandlerAndMetrics(t *testing.T) {
	f := newVerifyFixture(t)
	f.node(t, bigNode("n3"), false)
	srv := httptest.NewServer(VerifyHandler(f.c, quick))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var raw map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("GET = %d %q, want 200 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, key := range []string{"startedAt", "durationSeconds", "consistent", "counts", "differences"} {
		if _, ok := raw[key]; !ok {
			t.Errorf("result has no %q: %v", key, raw)
		}
	}
	if _, err := time.Parse(time.RFC3339, raw["startedAt"].(string)); err != nil {
		t.Errorf("startedAt: %v", err)
	}
	diffs, _ := raw["differences"].([]any)
	if len(diffs) != 1 {
		t.Fatalf("differences = %v, want 1", raw["differences"])
	}
	d := diffs[0].(map[string]any)
	for _, key := range []string{"kind", "name", "field", "cache", "truth", "message"} {
		if _, ok := d[key]; !ok {
			t.Errorf("difference has no %q: %v", key, d)
		}
	}
	if got := metricstest.CounterValue(t, f.c.Metrics().CacheVerifyRuns); got != 1 {
		t.Errorf("runs = %v, want 1", got)
	}
	if got := metricstest.CounterValue(t, f.c.Metrics().CacheVerifyDifferences.WithLabelValues(DiffNode)); got != 1 {
		t.Errorf("Node differences = %v, want 1", got)
	}
	if got := metricstest.HistogramCount(t, f.c.Metrics().CacheVerifyDuration.ObserverMetric); got != 1 {
		t.Errorf("durations observed = %d, want 1", got)
	}

	// A list that fails gives 503 with the error.
	f.client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcd is on fire")
	})
	resp2, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp2.Body.Close() }()
	var e map[string]string
	if err := json.NewDecoder(resp2.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp2.StatusCode != http.StatusServiceUnavailable || !strings.Contains(e["error"], "etcd is on fire") || !strings.Contains(e["error"], "pods") {
		t.Errorf("GET with a failing list = %d %v, want 503 naming pods and the cause", resp2.StatusCode, e)
	}
	if got := metricstest.CounterValue(t, f.c.Metrics().CacheVerifyRuns); got != 2 {
		t.Errorf("runs = %v, want 2", got)
	}

	for _, q := range []struct{ query, names string }{
		{"?grace=forever", "grace"}, {"?grace=0s", "grace"}, {"?grace=1h", "grace"},
		{"?rechecks=-1", "rechecks"}, {"?rechecks=11", "rechecks"}, {"?rechecks=two", "rechecks"},
	} {
		resp, err := http.Get(srv.URL + q.query)
		if err != nil {
			t.Fatal(err)
		}
		var e map[string]string
		err = json.NewDecoder(resp.Body).Decode(&e)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(e["error"], q.names) {
			t.Errorf("GET %s = %d %v %v, want 400 naming %s", q.query, resp.StatusCode, e, err, q.names)
		}
	}

	req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	resp3, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp3.Body.Close()
	if resp3.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d, want 405", resp3.StatusCode)
	}
}

// Differences beyond MaxDifferences are counted, not listed, and still
// counted in the metric.
func TestVerifyTruncates(t *testing.T) {
	f := newVerifyFixture(t)
	for _, name := range []string{"n3", "n4", "n5"} {
		f.node(t, bigNode(name), false)
	}
	res := mustVerify(t, f.c, VerifyOptions{Rechecks: -1, MaxDifferences: 2})
	if len(res.Differences) != 2 || res.Truncated != 1 {
		t.Errorf("differences, truncated = %d, %d; want 2, 1", len(res.Differences), res.Truncated)
	}
	if got := metricstest.CounterValue(t, f.c.Metrics().CacheVerifyDifferences.WithLabelValues(DiffNode)); got != 3 {
		t.Errorf("Node differences counted = %v, want 3", got)
	}
}

// The log of a run is bounded: a summary, at most 100 differences, and a
// line for the rest.
func TestLogVerifyResult(t *testing.T) {
	var buf bytes.Buffer
	klog.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf))))
	defer klog.ClearLogger()

	res := &VerifyResult{Truncated: 20}
	for i := range 130 {
		res.Differences = append(res.Differences, Difference{Kind: DiffPod, Name: fmt.Sprintf("ns/p-%d", i), Field: "state",
			Cache: "absent", Truth: "pending", Message: "a pending pod of this scheduler is missing from the cache"})
	}
	LogVerifyResult(res)
	klog.Flush()
	out := buf.String()
	for _, c := range []struct {
		text string
		want int
	}{
		{`"Scheduler cache differs from its sources" differences=150`, 1},
		{`"Scheduler cache difference" kind="Pod" name="ns/p-`, 100},
		{`notLogged=50`, 1},
	} {
		if got := strings.Count(out, c.text); got != c.want {
			t.Errorf("%q logged %d times, want %d; log:\n%.2000s", c.text, got, c.want, out)
		}
	}

	buf.Reset()
	LogVerifyResult(&VerifyResult{Consistent: true, Counts: VerifyCounts{Nodes: 3}})
	klog.Flush()
	if out := buf.String(); !strings.Contains(out, `"Scheduler cache is consistent with its sources" nodes=3`) || strings.Count(out, "\n") != 1 {
		t.Errorf("consistent result logged as:\n%s", out)
	}
}

// SIGUSR2 runs the checker and logs the result.
func TestVerifyOnSignal(t *testing.T) {
	var buf st.SyncBuffer
	klog.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf))))
	defer klog.ClearLogger()
	f := newVerifyFixture(t)
	f.node(t, bigNode("n3"), false)
	// Keep the signal's default action (ending the process) away while
	// VerifyOnSignal installs its own handler.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGUSR2)
	defer signal.Stop(guard)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		VerifyOnSignal(ctx, f.c, quick, syscall.SIGUSR2)
	}()
	defer func() { cancel(); <-done }()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		// A signal sent before VerifyOnSignal listens only reaches
		// guard: send it again.
		if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
			return false, err
		}
		return strings.Contains(buf.String(), `"Scheduler cache difference" kind="Node" name="n3" field="presence"`), nil
	})
	if err != nil {
		t.Errorf("no difference logged after SIGUSR2: %v; log:\n%.2000s", err, buf.String())
	}
}

// With ExternalWorkloadNodeLabel, a workload's label names its node, as
// for the default handler with externalWorkloadNodeLabel.
func TestVerifyExternalWorkloadNodeLabel(t *testing.T) {
	f := newVerifyFixture(t)
	w := workload("vm-labelled", "n1", "1")
	w.Labels = map[string]string{"example.com/host": "n2"}
	f.workloads.Add(w)
	mustNoErr(t, "setting external usage", f.c.SetExternalUsage(externalWorkloadKey(w), "n2", resources.FromList(w.Spec.Resources)))
	if res := mustVerify(t, f.c, VerifyOptions{Rechecks: -1, ExternalWorkloadNodeLabel: "example.com/host"}); !res.Consistent {
		t.Errorf("with the node label: differences %+v", res.Differences)
	}
	res := mustVerify(t, f.c, VerifyOptions{Rechecks: -1})
	if len(res.Differences) != 1 || res.Differences[0].Field != "node" || res.Differences[0].Truth != "n1" {
		t.Errorf("without the node label: differences %+v, want the workload on n1", res.Differences)
	}
}

// A re-check reads the objects again: a pod deleted, or a node added to
// the cache, during the grace period clears its candidate, whether the
// re-check GETs each object or, past MaxTargeted, lists everything again.
func TestVerifyRecheckReadsAgain(t *testing.T) {
	for _, maxTargeted := range []int{50, 1} {
		t.Run(fmt.Sprintf("maxTargeted=%d", maxTargeted), func(t *testing.T) {
			f := newVerifyFixture(t)
			f.pod(t, st.MakePod().Name("short-lived").Node("n1").Obj(), false)
			f.node(t, bigNode("n3"), false)
			opts := VerifyOptions{Rechecks: 1, Grace: time.Millisecond, MaxTargeted: maxTargeted}
			opts.beforeRecheck = func(round int) {
				if round != 0 {
					return
				}
				// The pod's delete and the node's add reach the cache
				// (which never had the pod) while it waits.
				if err := f.client.CoreV1().Pods("default").Delete(t.Context(), "short-lived", metav1.DeleteOptions{}); err != nil {
					t.Error(err)
				}
				mustNoErr(t, "adding node", f.c.AddOrUpdateNode(bigNode("n3")))
			}
			res := mustVerify(t, f.c, opts)
			if !res.Consistent || res.InFlight != 2 {
				t.Errorf("consistent, inFlight = %v, %d; want true, 2; differences %+v", res.Consistent, res.InFlight, res.Differences)
			}
		})
	}
}
