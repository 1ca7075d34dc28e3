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

package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	k8smetrics "k8s.io/component-base/metrics"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/gang"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// BenchmarkGangRetryCycle measures the cycle a gang runs again and again
// while the victims of its preemption go, as in kube-scheduler's
// GangPreemptionBasic: 100 nodes each running 10 pods of low priority, a
// gang of 100 pods each as big as a node. The first cycle preempts every
// low-priority pod (the evictions are accepted, the pods stay in the
// cache); each measured cycle then finds no room and waits. today is the
// default profile, which parks the gang while its victims hold the room
// (awaitVictims); whole tries the placement on every retry, with the
// other shortcuts on; everyPod is the baseline of the same run with every
// shortcut off: no wait for the victims, the Gang plugin hides
// framework.QuorumPermit, a Filter plugin that is no framework.SpecJudge
// joins the profile, and every failure records its events. With -short
// (the smoke run), 20 nodes.
//
//	go test -run '^$' -bench BenchmarkGangRetryCycle -benchtime 200x ./pkg/scheduler/
func BenchmarkGangRetryCycle(b *testing.B) {
	nodes := 100
	if testing.Short() {
		nodes = 20
	}
	for _, variant := range []string{"today", "whole", "everyPod"} {
		b.Run(fmt.Sprintf("%dNodes/%s", nodes, variant), func(b *testing.B) {
			benchGangRetry(b, nodes, variant != "today", variant == "everyPod")
		})
	}
}

// gangWithoutReach is the Gang plugin without framework.QuorumPermit: its
// OutOfReach has another signature.
type gangWithoutReach struct{ *gang.Gang }

func (gangWithoutReach) OutOfReach() {}

// notAJudge is a Filter plugin that passes every node and is no
// framework.SpecJudge.
type notAJudge struct{}

func (notAJudge) Name() string { return "NotAJudge" }
func (notAJudge) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return nil
}

func benchGangRetry(b *testing.B, nodes int, whole, everyPod bool) {
	client := fake.NewClientset()
	factory := informerhost.NewInformerFactory(client, 0)
	c, err := cache.New(cache.Options{Client: client, InformerFactory: factory, Queue: schedulingqueue.Options{InitialBackoff: time.Nanosecond, MaxBackoff: time.Nanosecond}})
	if err != nil {
		b.Fatal(err)
	}
	h := &testHandle{client: client, recorder: events.NewFakeRecorder(1 << 10), informers: factory}
	reg := plugins.NewInTreeRegistry()
	spec := plugins.DefaultProfile(testSchedulerName)
	if everyPod {
		reg = registryReplacing(b, func(p framework.Plugin) framework.Plugin { return gangWithoutReach{p.(*gang.Gang)} }, gang.Name)
		if err := reg.Register("NotAJudge", func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
			return notAJudge{}, nil
		}); err != nil {
			b.Fatal(err)
		}
		spec.Plugins[frameworkruntime.FilterPoint] = append(spec.Plugins[frameworkruntime.FilterPoint], frameworkruntime.PluginRef{Name: "NotAJudge"})
	}
	fwk, err := frameworkruntime.NewFramework(b.Context(), reg, spec, h)
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewMetrics(k8smetrics.NewKubeRegistry())
	if err != nil {
		b.Fatal(err)
	}
	recorder := events.NewFakeRecorder(1 << 16)
	s, err := New(Options{Cache: c, Queue: c.Queue(), Client: client, Recorder: recorder, Metrics: m,
		Profiles: map[string]*frameworkruntime.Framework{testSchedulerName: fwk}})
	if err != nil {
		b.Fatal(err)
	}
	if whole {
		s.victimWait = 0
	}
	if everyPod {
		s.events.repeat = 0
	}
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return a.GetSubresource() == "eviction", nil, nil
	})
	for i := range nodes {
		name := fmt.Sprintf("n%03d", i)
		if err := c.AddOrUpdateNode(st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: "4", v1.ResourceMemory: "32Gi", v1.ResourcePods: "110"}).Obj()); err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			if err := c.AddPod(running(fmt.Sprintf("low-%03d-%02d", i, j), name, 0, "40m", j).Obj()); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range nodes {
		p := st.MakePod().Name(fmt.Sprintf("pod-gang-%03d", i)).Group("gang").MinAvailable(fmt.Sprint(nodes)).
			Priority(8888888).Req(res{v1.ResourceCPU: "3970m", v1.ResourceMemory: "500Mi"}).Obj()
		if err := c.AddPendingPod(p); err != nil {
			b.Fatal(err)
		}
	}
	drain := func() {
		for {
			select {
			case <-recorder.Events:
			default:
				return
			}
		}
	}
	cycle := func() {
		if n := c.Queue().Lengths().Active; n != 1 {
			b.Fatalf("%d active jobs, want the gang", n)
		}
		s.scheduleOne(b.Context())
		c.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All, Label: "Bench"}, nil, nil)
	}
	cycle()
	s.bindWG.Wait()
	drain()
	if !s.nominated.Has(framework.JobID{Namespace: "default", Name: "gang", Gang: true}) {
		b.Fatal("the first cycle nominated nothing: the gang did not preempt")
	}
	b.ResetTimer()
	for range b.N {
		cycle()
		drain()
	}
	b.StopTimer()
	s.bindWG.Wait()
}
