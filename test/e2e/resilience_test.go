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
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// fastClient is an admin client without the default 5 QPS limit, for tests
// that create many objects.
func fastClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deleteBeforeBind is a Bind plugin that, for pods labelled doomed=true,
// waits for release, deletes the pod and then leaves the bind to the next
// binder, which finds the pod gone: the race of a pod deleted while its
// bind is in flight, made certain.
type deleteBeforeBind struct {
	h       framework.Handle
	release chan struct{}
}

func (p *deleteBeforeBind) Name() string { return "DeleteBeforeBind" }

func (p *deleteBeforeBind) Bind(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, _ string) *framework.Status {
	if pod.Labels["doomed"] == "true" {
		select {
		case <-p.release:
		case <-ctx.Done():
			return framework.AsStatus(ctx.Err())
		}
		if err := p.h.ClientSet().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, now); err != nil {
			return framework.AsStatus(err)
		}
	}
	return framework.NewStatus(framework.Skip)
}

// A pod deleted while its bind is in flight is rolled back: its capacity is
// free again and nothing is left assumed.
func TestPodDeletedWhileBinding(t *testing.T) {
	ns := createNamespace(t)
	mustNode(t, poolNode(t, "inflight-a", res{"cpu": "1", "memory": "2Gi", "pods": "10"}).Obj())
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: batch-scheduler
  plugins:
    bind:
    - name: DeleteBeforeBind
    - name: DefaultBinder
`), 0o600); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	plugin := app.WithPlugin("DeleteBeforeBind", func(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
		return &deleteBeforeBind{h: h, release: release}, nil
	})
	s := startSchedulerWith(t, []app.Option{plugin}, cp.KubeconfigPath, "--node-selector", poolLabel+"="+pool(t), "--config-path", cfg)
	s.waitReady(t)

	// Both want the whole node. "doomed" is placed first and its bind held
	// back, so "next" finds the node full and waits; then "doomed" is
	// deleted in flight, and the capacity it gives back must wake "next".
	mustPod(t, st.MakePod().Namespace(ns).Name("doomed").Label("doomed", "true").Req(res{"cpu": "1"}).Obj())
	s.waitForDump(t, "doomed assumed", func(d *cache.Dump) bool {
		n := node(d, "inflight-a")
		return n != nil && len(n.AssumedPods) == 1
	})
	mustPod(t, st.MakePod().Namespace(ns).Name("next").Req(res{"cpu": "1"}).Obj())
	waitUnschedulable(t, ns, "next", "Insufficient cpu")
	close(release)
	s.waitForDump(t, "next bound and nothing left of doomed", func(d *cache.Dump) bool {
		n, j := node(d, "inflight-a"), job(d, ns+"/pod:next")
		return n != nil && len(n.AssumedPods) == 0 && n.Requested.MilliCPU == 1000 && job(d, ns+"/pod:doomed") == nil &&
			j != nil && len(j.Tasks) == 1 && j.Tasks[0].Node == "inflight-a" && j.Tasks[0].Status == framework.TaskBound
	})
	if n := podNodes(t, ns); len(n) != 1 || n["next"] != "inflight-a" {
		t.Errorf("pods in the API = %v, want only next, on inflight-a", n)
	}
}

// metricValue reads one unlabelled sample from a scheduler's /metrics.
func metricValue(t *testing.T, s *scheduler, name string) float64 {
	t.Helper()
	code, body, err := s.get("/metrics")
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return f
		}
	}
	return 0
}

// Two replicas with leader election: only the leader binds; when it stops,
// the other takes over.
func TestLeaderElectionOneBinder(t *testing.T) {
	ns := createNamespace(t)
	mustNode(t, poolNode(t, "le-a", res{"cpu": "16", "memory": "32Gi", "pods": "100"}).Obj())
	lease := "e2e-" + pool(t)
	args := []string{"--node-selector", poolLabel + "=" + pool(t), "--leader-elect=true",
		"--leader-elect-resource-name", lease, "--leader-elect-lease-duration=3s",
		"--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=250ms"}
	a := startScheduler(t, cp.KubeconfigPath, args...)
	b := startScheduler(t, cp.KubeconfigPath, args...)
	a.waitReady(t)
	b.waitReady(t)

	create := func(prefix string, n int) {
		for i := 0; i < n; i++ {
			mustPod(t, st.MakePod().Namespace(ns).Name(fmt.Sprintf("%s-%d", prefix, i)).Req(res{"cpu": "100m"}).Obj())
		}
	}
	allBound := func(n map[string]string) bool {
		for _, node := range n {
			if node == "" {
				return false
			}
		}
		return true
	}
	create("first", 10)
	waitForPods(t, ns, "the first pods bound", allBound)
	boundA, boundB := metricValue(t, a, "batch_scheduler_pods_bound_total"), metricValue(t, b, "batch_scheduler_pods_bound_total")
	if boundA+boundB != 10 || (boundA != 0 && boundB != 0) {
		t.Fatalf("pods bound by a=%v b=%v; want all 10 by one replica", boundA, boundB)
	}
	leader, follower := a, b
	if boundB > 0 {
		leader, follower = b, a
	}
	if code := leader.stop(t); code != 0 {
		t.Fatalf("the leader exited with %d", code)
	}
	create("second", 5)
	waitForPods(t, ns, "the second pods bound by the new leader", allBound)
	if got := metricValue(t, follower, "batch_scheduler_pods_bound_total"); got != 5 {
		t.Errorf("the new leader bound %v pods, want 5", got)
	}
}

// Under churn (pods created and deleted at random while the scheduler
// works), no node's bound requests ever exceed its allocatable and no pod
// is bound twice. An informer watches every transition, not just the end.
func TestChurnNeverOvercommits(t *testing.T) {
	ns := createNamespace(t)
	const nodes, pods = 10, 1000
	alloc := resources.FromList(poolNode(t, "x", res{"cpu": "16", "memory": "32Gi", "pods": "110"}).Obj().Status.Allocatable)
	for i := 0; i < nodes; i++ {
		mustNode(t, poolNode(t, fmt.Sprintf("churn-%d", i), res{"cpu": "16", "memory": "32Gi", "pods": "110"}).Obj())
	}
	s := startPoolScheduler(t, "--kube-api-qps=500", "--kube-api-burst=1000")
	s.waitReady(t)

	// The checker: the cluster as the API reports it, event by event.
	client := fastClient(t)
	var (
		mu        sync.Mutex
		boundTo   = map[types.UID]string{}
		perNode   = map[string]map[types.UID]resources.Resource{}
		violation []string
	)
	record := func(pod *v1.Pod, deleted bool) {
		mu.Lock()
		defer mu.Unlock()
		if pod.Spec.NodeName == "" {
			return
		}
		if prev, ok := boundTo[pod.UID]; ok && prev != pod.Spec.NodeName {
			violation = append(violation, fmt.Sprintf("pod %s bound to %s and then %s", pod.Name, prev, pod.Spec.NodeName))
		}
		boundTo[pod.UID] = pod.Spec.NodeName
		if perNode[pod.Spec.NodeName] == nil {
			perNode[pod.Spec.NodeName] = map[types.UID]resources.Resource{}
		}
		if deleted || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			delete(perNode[pod.Spec.NodeName], pod.UID)
			return
		}
		perNode[pod.Spec.NodeName][pod.UID] = resources.PodRequests(pod)
		var sum resources.Resource
		for _, r := range perNode[pod.Spec.NodeName] {
			sum.Add(r)
		}
		if !alloc.Fits(sum) {
			violation = append(violation, fmt.Sprintf("node %s holds %s > allocatable %s", pod.Spec.NodeName, sum, alloc))
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record(obj.(*v1.Pod), false) },
		UpdateFunc: func(_, obj any) { record(obj.(*v1.Pod), false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				record(p, true)
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	// The churn: 8 workers create pods of random size and delete random
	// earlier ones.
	rng := rand.New(rand.NewPCG(7, 11))
	var rngMu sync.Mutex
	randInt := func(n int) int { rngMu.Lock(); defer rngMu.Unlock(); return rng.IntN(n) }
	var created atomic.Int64
	var live sync.Map
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				name := fmt.Sprintf("c-%d", i)
				cpu := fmt.Sprintf("%dm", 250+250*randInt(6))
				pod := st.MakePod().Namespace(ns).Name(name).Req(res{"cpu": cpu, "memory": "128Mi"}).Obj()
				pod.ResourceVersion = ""
				if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Errorf("creating %s: %v", name, err)
					continue
				}
				created.Add(1)
				live.Store(name, true)
				if randInt(10) < 4 {
					victim := fmt.Sprintf("c-%d", randInt(i+1))
					if _, ok := live.LoadAndDelete(victim); ok {
						_ = client.CoreV1().Pods(ns).Delete(ctx, victim, now)
					}
				}
			}
		}()
	}
	for i := 0; i < pods; i++ {
		work <- i
	}
	close(work)
	wg.Wait()

	// Settle: every live pod is bound or has been found unschedulable.
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				continue
			}
			settled := false
			for _, c := range p.Status.Conditions {
				settled = settled || c.Type == v1.PodScheduled && c.Reason == v1.PodReasonUnschedulable
			}
			if !settled {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the cluster did not settle: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(violation) > 0 {
		t.Fatalf("%d violations, first: %s", len(violation), violation[0])
	}
	bound := 0
	for _, m := range perNode {
		bound += len(m)
	}
	// The cluster holds about 180 of these pods at once and 60% of them
	// live: the scheduler must have filled it and reused freed room.
	if created.Load() != pods || bound < 150 || len(boundTo) <= bound {
		t.Errorf("created %d, ever bound %d, bound now %d: the churn did not fill the nodes and reuse freed room", created.Load(), len(boundTo), bound)
	}
	t.Logf("created %d pods, %d were bound at some point, %d bound at the end", created.Load(), len(boundTo), bound)
}
