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

package cache_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type res = map[v1.ResourceName]string

// The whole path with the real default handler: objects created through
// the (fake) API, and objects from a custom informer, reach the handler and
// end up in the cache.
func TestDefaultHandlerWiring(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := fake.NewClientset()
	c, err := cache.New(cache.Options{Client: client})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.Factory(ctx, c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Hosts known only to an external manager arrive as nodes.
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(st.MakeNode().Name("vm-host").Capacity(res{"cpu": "8", "memory": "16Gi", "pods": "50"}).Obj())
	inf := custominformer.New(src, &v1.Node{}, custominformer.Options{Name: "hosts"})
	if err := c.AddCustomInformer(cache.CustomInformer{Name: "hosts", Resource: framework.Node, Informer: inf}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForHandlersSync(ctx); err != nil {
		t.Fatal(err)
	}

	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = client.CoreV1().Nodes().Create(ctx, st.MakeNode().Name("n1").Capacity(res{"cpu": "4", "memory": "8Gi", "pods": "10"}).Obj(), metav1.CreateOptions{})
	mustCreate(err)
	for _, p := range []*v1.Pod{
		st.MakePod().Name("bound").Node("n1").Phase(v1.PodRunning).Req(res{"cpu": "1", "memory": "1Gi"}).Obj(),
		st.MakePod().Name("on-vm").Node("vm-host").Phase(v1.PodRunning).Req(res{"cpu": "2"}).Obj(),
		st.MakePod().Name("g-0").Group("g").Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Name("g-1").Group("g").Req(res{"cpu": "1"}).Obj(),
		st.MakePod().Name("others").Scheduler("default-scheduler").Obj(),
	} {
		_, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		mustCreate(err)
	}

	idle := func(node string) int64 { return nodeIdleCPU(c, node) }
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		job, ok := c.Job(framework.JobID{Namespace: "default", Name: "g", Gang: true})
		return idle("n1") == 3000 && idle("vm-host") == 6000 && ok && len(job.Tasks) == 2, nil
	})
	if err != nil {
		t.Fatalf("cache did not converge: idle n1=%dm vm-host=%dm, dump %+v", idle("n1"), idle("vm-host"), c.Dump().Jobs)
	}
	if _, ok := c.Job(framework.JobID{Namespace: "default", Name: "others"}); ok {
		t.Error("a pending pod of another scheduler reached the cache")
	}
	if l := c.Queue().Lengths(); l.Active != 1 {
		t.Errorf("queue lengths = %+v, want the gang as one active job", l)
	}

	// Deleting the bound pod frees its node; deleting the custom host
	// leaves its pod on a placeholder.
	mustCreate(client.CoreV1().Pods("default").Delete(ctx, "bound", metav1.DeleteOptions{}))
	src.Delete(st.MakeNode().Name("vm-host").Obj())
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		ni, ok := c.NodeInfo("vm-host")
		return idle("n1") == 4000 && ok && ni.Placeholder, nil
	})
	if err != nil {
		t.Fatalf("deletes not reflected: idle n1=%dm, nodes %+v", idle("n1"), c.Dump().Nodes)
	}
}
