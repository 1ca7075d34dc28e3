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
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"

	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// The checker's model of where the cache holds what agrees with the real
// default handler fed by informers, node selector, placeholders, custom
// sources and all; and while pods are created, bound, finished and
// deleted without pause, it reports nothing: those are events in flight.
func TestVerifyAgreesWithTheDefaultHandlerUnderLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := fake.NewClientset()
	c, err := cache.New(cache.Options{Client: client, NodeSelector: labels.SelectorFromSet(labels.Set{"pool": "batch"})})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.Factory(ctx, c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	vms := fcache.NewFakeControllerSource()
	defer vms.Shutdown()
	vms.Add(&v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: "vm-1"},
		Spec:       v1alpha1.ExternalWorkloadSpec{NodeName: "n1", WorkloadKind: "vm", Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}},
	})
	inf := custominformer.New(vms, &v1alpha1.ExternalWorkload{}, custominformer.Options{Name: "vms"})
	if err := c.AddCustomInformer(cache.CustomInformer{Name: "vms", Resource: framework.ExternalWorkload, Informer: inf, ListerWatcher: vms}); err != nil {
		t.Fatal(err)
	}

	create := func(obj any) {
		t.Helper()
		var err error
		switch o := obj.(type) {
		case *v1.Node:
			_, err = client.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{})
		case *v1.Pod:
			_, err = client.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"n1", "n2"} {
		create(st.MakeNode().Name(n).Label("pool", "batch").Capacity(res{"cpu": "64", "memory": "64Gi", "pods": "500"}).Obj())
	}
	create(st.MakeNode().Name("other-pool").Label("pool", "web").Capacity(res{"cpu": "8", "pods": "10"}).Obj())
	for _, p := range []*v1.Pod{
		st.MakePod().Name("bound").Node("n1").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Name("on-web").Node("other-pool").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Name("on-unknown").Node("gone").Phase(v1.PodRunning).Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Name("done").Node("n2").Phase(v1.PodSucceeded).Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Name("g-0").Group("g").MinAvailable("2").Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Name("others").Scheduler("default-scheduler").Obj(),
	} {
		create(p)
	}
	if err := c.Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForHandlersSync(ctx); err != nil {
		t.Fatal(err)
	}
	first, err := Verify(ctx, c, VerifyOptions{Rechecks: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Consistent {
		t.Fatalf("after the initial sync: differences %+v", first.Differences)
	}
	if first.Counts.Nodes != 3 || first.Counts.Pods != 6 || first.Counts.ExternalWorkloads != 1 {
		t.Errorf("counts = %+v, want 3 nodes, 6 pods, 1 external workload", first.Counts)
	}

	// Load: each worker creates a pending pod, binds it, finishes it and
	// deletes it, over and over, while the checker runs.
	var wg sync.WaitGroup
	var mu sync.Mutex
	ops := 0
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("load-%d-%d", w, i)
				p := st.MakePod().Name(name).Group(fmt.Sprintf("lg-%d", w)).MinAvailable("1").Req(res{"cpu": "100m"}).Obj()
				if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
					return
				}
				// The fake API server keeps resourceVersions as given,
				// and the handler ignores an update that keeps it (a
				// resync): bump it as the API server would.
				p.ResourceVersion = "2"
				p.Spec.NodeName = []string{"n1", "n2"}[i%2]
				if _, err := client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
					return
				}
				p.ResourceVersion = "3"
				p.Status.Phase = v1.PodSucceeded
				if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					return
				}
				if i%3 != 0 {
					if err := client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						return
					}
				}
				mu.Lock()
				ops++
				mu.Unlock()
			}
		}()
	}
	// The checks must overlap the load: on a busy machine the writers
	// may not have started when the first check would run, or may have
	// done only a few rounds by the time the last one ends.
	loaded := func(n int) bool {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			done := ops
			mu.Unlock()
			if done >= n {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}
	loaded(1)
	inFlight := 0
	for range 5 {
		// Re-checks after 0.1, 0.2, 0.4, 0.8 and 1.6 s: an informer on a
		// busy 2-core machine under -race can lag the four writers by
		// more than the 0.62 s that a 20 ms grace allowed (an
		// intermittent failure in make test).
		res, err := Verify(ctx, c, VerifyOptions{Grace: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Consistent {
			t.Errorf("under load: %d differences, the first %+v", len(res.Differences), res.Differences[0])
		}
		inFlight += res.InFlight
	}
	t.Logf("5 runs under load cleared %d candidate differences as events in flight", inFlight)
	loaded(10)
	cancel()
	wg.Wait()
	if ops < 10 {
		t.Errorf("only %d load operations ran; the test did not load the cache", ops)
	}

	// Once the load stops, an injected difference (a node the handler
	// never saw) is found.
	ctx2 := t.Context()
	if _, err := client.CoreV1().Nodes().Create(ctx2, st.MakeNode().Name("n3").Label("pool", "batch").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx2, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		// The informers stopped with the first context: n3 never
		// reaches the cache.
		res, err := Verify(ctx2, c, VerifyOptions{Rechecks: 1, Grace: time.Millisecond})
		if err != nil {
			return false, err
		}
		for _, d := range res.Differences {
			if d.Kind == DiffNode && d.Name == "n3" && d.Field == "presence" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("node n3, never seen by the cache, not reported: %v", err)
	}
}
