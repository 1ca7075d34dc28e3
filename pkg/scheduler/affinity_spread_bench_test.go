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
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	k8smetrics "k8s.io/component-base/metrics"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/interpodaffinity"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/podtopologyspread"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// BenchmarkPlainPodCycle measures one scheduling cycle of a plain pod (no
// pod affinity, no spread constraints) on 500 nodes, with the default
// profile and with the default profile minus InterPodAffinity and
// PodTopologySpread: the ratio is what those two plugins cost the
// plain-pod path (their PreFilterPod returns Skip). tenQueues is the
// default profile with 10 queues (docs/queues.md), the pods spread over
// them: against default, what queues cost a cycle (every pod's arrival
// changes what the queues ask for, so each cycle divides the capacity
// anew). frameworkMetrics is the default profile with the framework's
// latency metrics recorded (extension points every cycle, plugin calls in
// the sampled share): against default, what those metrics cost.
//
//	go test -run '^$' -bench BenchmarkPlainPodCycle -count 5 ./pkg/scheduler/
func BenchmarkPlainPodCycle(b *testing.B) {
	for _, variant := range []struct {
		name    string
		without []string
		queues  int
		metrics bool
	}{
		{"default", nil, 0, false},
		{"withoutAffinityAndSpread", []string{interpodaffinity.Name, podtopologyspread.Name}, 0, false},
		{"tenQueues", nil, 10, false},
		{"frameworkMetrics", nil, 0, true},
	} {
		b.Run(variant.name, func(b *testing.B) {
			benchPlainPods(b, variant.without, variant.queues, variant.metrics)
		})
	}
}

func benchPlainPods(b *testing.B, without []string, queues int, frameworkMetrics bool) {
	client := fake.NewClientset()
	factory := informerhost.NewInformerFactory(client, 0)
	c, err := cache.New(cache.Options{Client: client, InformerFactory: factory, Queue: schedulingqueue.Options{InitialBackoff: time.Nanosecond, MaxBackoff: time.Nanosecond}})
	if err != nil {
		b.Fatal(err)
	}
	spec := plugins.DefaultProfile(testSchedulerName)
	for point, set := range spec.Plugins {
		spec.Plugins[point] = slices.DeleteFunc(set, func(r frameworkruntime.PluginRef) bool { return slices.Contains(without, r.Name) })
	}
	h := &testHandle{client: client, recorder: events.NewFakeRecorder(1 << 20), informers: factory}
	var opts []frameworkruntime.Option
	if frameworkMetrics {
		fm, err := frameworkruntime.NewMetrics(k8smetrics.NewKubeRegistry())
		if err != nil {
			b.Fatal(err)
		}
		opts = append(opts, frameworkruntime.WithMetrics(fm))
	}
	fwk, err := frameworkruntime.NewFramework(b.Context(), plugins.NewInTreeRegistry(), spec, h, opts...)
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewMetrics(k8smetrics.NewKubeRegistry())
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{Cache: c, Queue: c.Queue(), Client: client, Recorder: events.NewFakeRecorder(1 << 20), Metrics: m,
		Profiles: map[string]*frameworkruntime.Framework{testSchedulerName: fwk}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 500 {
		node := st.MakeNode().Name(fmt.Sprintf("n%03d", i)).Label(v1.LabelHostname, fmt.Sprintf("n%03d", i)).
			Label(v1.LabelTopologyZone, fmt.Sprintf("z%d", i%5)).
			Capacity(res{v1.ResourceCPU: "1000", v1.ResourceMemory: "4000Gi", v1.ResourcePods: "1000"}).Obj()
		if err := c.AddOrUpdateNode(node); err != nil {
			b.Fatal(err)
		}
	}
	for i := range queues {
		name := fmt.Sprintf("q%d", i)
		c.SetTenantQueue(tenancy.SourceOwn, name, &framework.QueueSpec{Name: name, Weight: int64(1 + i%3), Borrow: true, Lend: true, Reclaimable: true, Source: "Queue " + name})
	}
	pods := make([]*v1.Pod, b.N)
	for i := range pods {
		w := st.MakePod().Name(fmt.Sprintf("p%06d", i)).Req(res{"cpu": "100m", "memory": "128Mi"})
		if queues > 0 {
			w = w.Label(framework.QueueLabel, fmt.Sprintf("q%d", i%queues))
		}
		pods[i] = w.Obj()
		if err := client.Tracker().Add(pods[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if err := c.AddPendingPod(pods[i]); err != nil {
			b.Fatal(err)
		}
		s.scheduleOne(b.Context())
	}
	b.StopTimer()
	s.bindWG.Wait()
	if got := metricstest.CounterValue(b, m.PodsBound); int(got) != b.N {
		b.Fatalf("%v of %d pods bound", got, b.N)
	}
}
