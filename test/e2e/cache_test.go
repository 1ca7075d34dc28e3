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
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

type res = map[v1.ResourceName]string

func mustNode(t *testing.T, n *v1.Node) {
	t.Helper()
	if _, err := controlplane.CreateNode(t.Context(), cp.Client, n); err != nil {
		t.Fatal(err)
	}
	deleteNodesAfter(t, n.Name)
}

func mustPod(t *testing.T, p *v1.Pod) *v1.Pod {
	t.Helper()
	created, err := controlplane.CreatePod(t.Context(), cp.Client, p)
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// Nodes and pods created, updated and deleted through the API show up in
// /debug/cache.
func TestCacheFollowsTheAPI(t *testing.T) {
	ns := createNamespace(t)
	s := startScheduler(t, cp.KubeconfigPath)
	s.waitReady(t)

	mustNode(t, st.MakeNode().Name("follow-a").Capacity(res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Label("pool", "batch").Obj())
	mustNode(t, st.MakeNode().Name("follow-b").Capacity(res{"cpu": "2", "memory": "4Gi", "pods": "10"}).Obj())
	// Pending pods of ours that no node can take, so they stay pending.
	mustPod(t, st.MakePod().Namespace(ns).Name("solo").NodeSelector(nowhere).Req(res{"cpu": "1"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("g-0").Group("g").MinAvailable("2").NodeSelector(nowhere).Req(res{"cpu": "1"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("g-1").Group("g").MinAvailable("2").NodeSelector(nowhere).Req(res{"cpu": "1"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("not-ours").Scheduler("default-scheduler").Obj())

	d := s.waitForDump(t, "nodes and jobs", func(d *cache.Dump) bool {
		a, b := node(d, "follow-a"), node(d, "follow-b")
		g := job(d, ns+"/g")
		return a != nil && b != nil && a.Schedulable.MilliCPU == 4000 && b.Schedulable.MilliCPU == 2000 &&
			job(d, ns+"/pod:solo") != nil && g != nil && len(g.Tasks) == 2 && g.MinAvailable == 2
	})
	if job(d, ns+"/pod:not-ours") != nil {
		t.Error("a pending pod of another scheduler is in the cache")
	}
	if l := d.Queue.Lengths; l.Active+l.Backoff+l.Unschedulable+l.InFlight < 2 {
		t.Errorf("queue = %+v, want at least the two jobs of this test queued", l)
	}

	// Update: allocatable grows.
	b, err := cp.Client.CoreV1().Nodes().Get(t.Context(), "follow-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("8")
	if _, err := cp.Client.CoreV1().Nodes().UpdateStatus(t.Context(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitForDump(t, "follow-b allocatable 8 cpu", func(d *cache.Dump) bool {
		n := node(d, "follow-b")
		return n != nil && n.Schedulable.MilliCPU == 8000 && n.Idle.MilliCPU == 8000
	})

	// Delete: the single pod's job goes, a gang member leaves its gang.
	for _, name := range []string{"solo", "g-1"} {
		if err := cp.Client.CoreV1().Pods(ns).Delete(t.Context(), name, now); err != nil {
			t.Fatal(err)
		}
	}
	s.waitForDump(t, "deleted pods gone", func(d *cache.Dump) bool {
		g := job(d, ns+"/g")
		return job(d, ns+"/pod:solo") == nil && g != nil && len(g.Tasks) == 1
	})
	if err := cp.Client.CoreV1().Nodes().Delete(t.Context(), "follow-a", now); err != nil {
		t.Fatal(err)
	}
	s.waitForDump(t, "follow-a gone", func(d *cache.Dump) bool { return node(d, "follow-a") == nil })
}

// Pods bound by someone else, including a pending pod of ours that another
// party binds through the binding subresource, are counted on their node;
// terminating pods stay counted until they are gone, finished ones do not.
func TestPodsBoundElsewhereAreCounted(t *testing.T) {
	ns := createNamespace(t)
	s := startScheduler(t, cp.KubeconfigPath)
	s.waitReady(t)
	mustNode(t, st.MakeNode().Name("bound-a").Capacity(res{"cpu": "8", "memory": "16Gi", "pods": "20"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("web").Scheduler("default-scheduler").Node("bound-a").Phase(v1.PodRunning).
		Req(res{"cpu": "1", "memory": "1Gi"}).SidecarReq(res{"cpu": "500m"}).Obj())
	// A pending pod of ours that no node can take (its selector matches
	// none), so that it is still pending when someone else binds it.
	mustPod(t, st.MakePod().Namespace(ns).Name("mine").NodeSelector(nowhere).Req(res{"cpu": "2"}).Obj())
	s.waitForDump(t, "web counted, mine pending", func(d *cache.Dump) bool {
		n, j := node(d, "bound-a"), job(d, ns+"/pod:mine")
		return n != nil && n.Requested.MilliCPU == 1500 && j != nil && j.Tasks[0].Status == framework.TaskPending
	})

	binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"}, Target: v1.ObjectReference{Kind: "Node", Name: "bound-a"}}
	if err := cp.Client.CoreV1().Pods(ns).Bind(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitForDump(t, "mine bound and counted", func(d *cache.Dump) bool {
		n, j := node(d, "bound-a"), job(d, ns+"/pod:mine")
		return n != nil && n.Requested.MilliCPU == 3500 && j != nil && j.Tasks[0].Status == framework.TaskBound && j.Tasks[0].Node == "bound-a"
	})

	// Graceful deletion without a kubelet leaves "web" terminating: still
	// counted.
	if err := cp.Client.CoreV1().Pods(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// "mine" finishes: no longer counted. The scheduler may still be writing
	// the condition of its last failed attempt, so a conflict is retried.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mine, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), "mine", metav1.GetOptions{})
		if err != nil {
			return err
		}
		mine.Status.Phase = v1.PodSucceeded
		_, err = cp.Client.CoreV1().Pods(ns).UpdateStatus(t.Context(), mine, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("marking %s/mine succeeded: %v", ns, err)
	}
	s.waitForDump(t, "finished pod freed, terminating pod counted", func(d *cache.Dump) bool {
		n := node(d, "bound-a")
		return n != nil && n.Requested.MilliCPU == 1500 && len(n.Pods) == 2
	})
	if err := cp.Client.CoreV1().Pods(ns).Delete(t.Context(), "web", now); err != nil {
		t.Fatal(err)
	}
	s.waitForDump(t, "terminating pod gone", func(d *cache.Dump) bool {
		n := node(d, "bound-a")
		return n != nil && n.Requested.MilliCPU == 0 && len(n.Pods) == 1
	})
}

// A node deleted while pods run on it becomes a placeholder that keeps them
// counted; it disappears with its last pod. A pod whose node does not exist
// yet waits on a placeholder that the node fills.
func TestNodeDeletedWithPods(t *testing.T) {
	ns := createNamespace(t)
	s := startScheduler(t, cp.KubeconfigPath)
	s.waitReady(t)
	mustNode(t, st.MakeNode().Name("gone-a").Capacity(res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("p").Scheduler("default-scheduler").Node("gone-a").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("early").Scheduler("default-scheduler").Node("late-node").Phase(v1.PodRunning).Req(res{"cpu": "2"}).Obj())
	s.waitForDump(t, "pods accounted", func(d *cache.Dump) bool {
		a, late := node(d, "gone-a"), node(d, "late-node")
		return a != nil && !a.Placeholder && a.Requested.MilliCPU == 1000 && late != nil && late.Placeholder && late.Requested.MilliCPU == 2000
	})

	if err := cp.Client.CoreV1().Nodes().Delete(t.Context(), "gone-a", now); err != nil {
		t.Fatal(err)
	}
	mustNode(t, st.MakeNode().Name("late-node").Capacity(res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Obj())
	s.waitForDump(t, "gone-a a placeholder, late-node real", func(d *cache.Dump) bool {
		a, late := node(d, "gone-a"), node(d, "late-node")
		return a != nil && a.Placeholder && a.Requested.MilliCPU == 1000 && late != nil && !late.Placeholder && late.Idle.MilliCPU == 2000
	})
	if err := cp.Client.CoreV1().Pods(ns).Delete(t.Context(), "p", now); err != nil {
		t.Fatal(err)
	}
	s.waitForDump(t, "placeholder gone with its last pod", func(d *cache.Dump) bool { return node(d, "gone-a") == nil })
}

// nowhere is a node selector no node matches: pods of ours with it stay
// pending, which the cache tests need now that the scheduler places pods.
var nowhere = map[string]string{"e2e": "nowhere"}

// comparable strips what legitimately differs between two runs of the
// scheduler over the same cluster: generations, event counters, the
// informer registrations' state, and which sub-queue a job waits in (a
// fresh scheduler has not tried the jobs yet).
func comparable(d *cache.Dump) any {
	nodes := append([]cache.NodeDump(nil), d.Nodes...)
	for i := range nodes {
		nodes[i].Generation = 0
	}
	l := d.Queue.Lengths
	return struct {
		Nodes  []cache.NodeDump
		Jobs   []cache.JobDump
		Queued int
	}{nodes, d.Jobs, l.Active + l.Backoff + l.Unschedulable + l.InFlight}
}

// A restarted scheduler rebuilds exactly the same cache from the API.
func TestRestartRebuildsTheSameCache(t *testing.T) {
	ns := createNamespace(t)
	mustNode(t, st.MakeNode().Name("restart-a").Capacity(res{"cpu": "4", "memory": "8Gi", "pods": "20"}).Obj())
	mustNode(t, st.MakeNode().Name("restart-b").Capacity(res{"cpu": "2", "memory": "4Gi", "pods": "10"}).Taint("dedicated", "x", v1.TaintEffectNoSchedule).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("run").Scheduler("default-scheduler").Node("restart-a").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj())
	mustPod(t, st.MakePod().Namespace(ns).Name("orphan").Scheduler("default-scheduler").Node("restart-missing").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj())
	for i := 0; i < 3; i++ {
		mustPod(t, st.MakePod().Namespace(ns).Name("g-"+string(rune('a'+i))).Group("g").MinAvailable("2").NodeSelector(nowhere).Req(res{"cpu": "1"}).Obj())
	}
	mustPod(t, st.MakePod().Namespace(ns).Name("bad").Group("bad").MinAvailable("zero").NodeSelector(nowhere).Obj())

	ready := func(d *cache.Dump) bool {
		g := job(d, ns+"/g")
		return node(d, "restart-a") != nil && node(d, "restart-b") != nil && node(d, "restart-missing") != nil &&
			g != nil && len(g.Tasks) == 3 && job(d, ns+"/bad") != nil
	}
	first := startScheduler(t, cp.KubeconfigPath)
	first.waitReady(t)
	before := first.waitForDump(t, "first cache complete", ready)
	if code := first.stop(t); code != 0 {
		t.Fatalf("first scheduler exited with %d", code)
	}
	if job(before, ns+"/bad").ValidationError == "" {
		t.Error("the bad min-available annotation was not reported")
	}

	second := startScheduler(t, cp.KubeconfigPath)
	second.waitReady(t)
	// Ready means every initial list was delivered: the cache must be
	// complete at once, without polling.
	after := second.dump(t)
	if !reflect.DeepEqual(comparable(before), comparable(after)) {
		t.Errorf("cache after restart differs:\nbefore %+v\nafter  %+v", comparable(before), comparable(after))
	}
}

// gatedProxy forwards TCP connections to target only once opened; until
// then connections wait, like an API server that is not reachable yet.
type gatedProxy struct {
	ln     net.Listener
	target string
	open   chan struct{}
	once   sync.Once
}

func newGatedProxy(t *testing.T, target string) *gatedProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gatedProxy{ln: ln, target: target, open: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *gatedProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			<-p.open
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { _, _ = io.Copy(up, c) }()
			_, _ = io.Copy(c, up)
		}()
	}
}

func (p *gatedProxy) Open() { p.once.Do(func() { close(p.open) }) }

// /readyz stays unready, naming what has not synced, until every handler
// registration has delivered its initial list.
func TestReadyzWaitsForTheSyncBarrier(t *testing.T) {
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newGatedProxy(t, u.Host)
	cfg := rest.CopyConfig(cp.Config)
	cfg.Host = "https://" + proxy.ln.Addr().String()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	s := startScheduler(t, kubeconfig)
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, _, _ := s.get("/healthz")
		return code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatal("/healthz never answered")
	}
	// Several answers while the API server is out of reach: all unready.
	for i := 0; i < 5; i++ {
		code, body, err := s.get("/readyz")
		if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(body), "Pod") || !strings.Contains(string(body), "Node") {
			t.Fatalf("/readyz before sync = %d %q %v; want 503 naming Pod and Node", code, body, err)
		}
		if d := s.dump(t); d.Handlers.Synced {
			t.Fatal("the dump claims the handlers synced before the API server was reachable")
		}
		time.Sleep(100 * time.Millisecond)
	}
	proxy.Open()
	s.waitReady(t)
	if d := s.dump(t); !d.Handlers.Synced {
		t.Errorf("ready, but the dump says handlers are not synced: %+v", d.Handlers)
	}
}
