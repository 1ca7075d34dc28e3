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

package dialects

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// Fragmentation, side by side with kube-scheduler's topology-aware
// scheduling (GenericWorkload and TopologyAwareWorkloadScheduling on):
// four racks of four 4-CPU nodes, one of them (r1) three quarters busy
// with running pods, take a stream of two small gangs (two pods of 1 CPU
// each, rack required), then three rack-sized gangs (four pods of 4 CPUs:
// a whole rack each). Where the small gangs were put decides how many
// large ones still find a rack. batch-scheduler picks the rack a gang
// fills most, so the small gangs go to the busy rack's free node and the
// three large ones fit in the three empty racks; it must place all
// three, and no fewer than kube-scheduler.
func TestFragmentationAgainstKubeScheduler(t *testing.T) {
	key := "e2e.batch-scheduler.io/frag-rack-" + utilrand.String(5)
	var busy []string
	for r := range 4 {
		nodes := addRack(t, key, fmt.Sprintf("r%d", r), 4, "4")
		if r == 1 {
			for n := range nodes {
				busy = append(busy, n)
			}
			busy = busy[:3]
		}
	}
	s := stream{busy: busy, smallKey: key, largeKey: key, small: 2, smallPods: 2, smallCPU: "1", large: 3, largePods: 4, largeCPU: "4"}
	kube := streamRun(t, s, v1.DefaultSchedulerName, func() func() {
		return cp.StartKubeScheduler(t, 100, "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
	})
	ours := streamRun(t, s, "batch-scheduler", func() func() {
		startScheduler(t)
		return func() {}
	})
	t.Logf("rack-sized gangs placed after the stream of small gangs: batch-scheduler %d of 3, kube-scheduler %d of 3", ours, kube)
	if ours != 3 {
		t.Errorf("batch-scheduler placed %d of 3 rack-sized gangs; best fit leaves three racks whole", ours)
	}
	if ours < kube {
		t.Errorf("batch-scheduler placed %d rack-sized gangs, fewer than kube-scheduler's %d", ours, kube)
	}
}

// stream is what one scheduler gets in a fragmentation test: small gangs
// created one at a time (each waited for), then large gangs all at once.
type stream struct {
	// busy nodes get a running 4-CPU pod first.
	busy []string
	// smallKey and largeKey are the topology keys the small and large
	// gangs require.
	smallKey, largeKey string
	// small and large count the gangs; smallPods/largePods are their
	// sizes, of smallCPU/largeCPU each.
	small, smallPods, large, largePods int
	smallCPU, largeCPU                 string
}

// streamRun runs s through one scheduler in a namespace of its own and
// returns how many large gangs were placed whole. The namespace's pods
// are deleted at the end, so the next run starts on the same nodes.
func streamRun(t *testing.T, s stream, schedulerName string, start func() (stop func())) int {
	t.Helper()
	ns := createNamespace(t)
	for i, node := range s.busy {
		createPod(t, gangPod(ns, fmt.Sprintf("busy-%d", i)).Node(node).Req(map[v1.ResourceName]string{"cpu": "4"}).Obj())
	}
	stop := start()
	defer stop()
	gang := func(name, key string, pods int, cpu string) {
		t.Helper()
		createObject(t, nativeGVR, ns, podGroup("scheduling.k8s.io/v1beta1", ns, name, map[string]any{
			"schedulingPolicy":      map[string]any{"gang": map[string]any{"minCount": int64(pods)}},
			"schedulingConstraints": map[string]any{"topology": []any{map[string]any{"key": key}}},
		}))
		for i := range pods {
			p := gangPod(ns, fmt.Sprintf("%s-%d", name, i)).Scheduler(schedulerName).Req(map[v1.ResourceName]string{"cpu": cpu}).Obj()
			group := name
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
			createPod(t, p)
		}
	}
	for i := range s.small {
		gang(fmt.Sprintf("small-%d", i), s.smallKey, s.smallPods, s.smallCPU)
		waitBound(t, ns, len(s.busy)+s.smallPods*(i+1), fmt.Sprintf("%s: small gang %d", schedulerName, i))
	}
	for i := range s.large {
		gang(fmt.Sprintf("large-%d", i), s.largeKey, s.largePods, s.largeCPU)
	}
	// Wait until the bound count stops changing for 5 s (at most 60 s).
	last, since := -1, time.Now()
	_ = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		if n := len(bound(t, ns)); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) > 5*time.Second, nil
	})
	b := bound(t, ns)
	placed := 0
	for i := range s.large {
		whole := true
		for j := range s.largePods {
			if _, ok := b[fmt.Sprintf("large-%d-%d", i, j)]; !ok {
				whole = false
			}
		}
		if whole {
			placed++
		}
	}
	stop()
	for pod := range b {
		_ = cp.Client.CoreV1().Pods(ns).Delete(context.Background(), pod, now)
	}
	// The next run needs the nodes empty.
	_ = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return len(bound(t, ns)) == 0, nil
	})
	return placed
}

// Nested levels, side by side with kube-scheduler: two blocks of two
// racks of two 4-CPU nodes. Two small gangs (two pods of 1 CPU) ask for a
// block, then four rack-sized gangs (two pods of 4 CPUs) ask for a rack.
// batch-scheduler tries the levels below the one asked for first, so the
// small gangs share one node and three racks stay whole. A scheduler that
// places a gang anywhere in its block may spread it over the block's
// racks. batch-scheduler must place three rack-sized gangs, and no fewer
// than kube-scheduler.
func TestFragmentationNestedLevelsAgainstKubeScheduler(t *testing.T) {
	const blockKey, rackKey = "topology.kubernetes.io/block", "topology.kubernetes.io/rack"
	suffix := utilrand.String(5)
	for b := range 2 {
		for r := range 2 {
			rack := fmt.Sprintf("b%d-r%d-%s", b, r, suffix)
			for i := range 2 {
				name := fmt.Sprintf("n-%s-%d", rack, i)
				node := st.MakeNode().Name(name).Label(blockKey, fmt.Sprintf("b%d-%s", b, suffix)).Label(rackKey, rack).
					Label("kubernetes.io/hostname", name).
					Allocatable(map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "110"}).Obj()
				if _, err := controlplane.CreateNode(t.Context(), cp.Client, node); err != nil {
					t.Fatalf("creating node %s: %v", name, err)
				}
				t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, now) })
			}
		}
	}
	s := stream{smallKey: blockKey, largeKey: rackKey, small: 2, smallPods: 2, smallCPU: "1", large: 4, largePods: 2, largeCPU: "4"}
	kube := streamRun(t, s, v1.DefaultSchedulerName, func() func() {
		return cp.StartKubeScheduler(t, 100, "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
	})
	ours := streamRun(t, s, "batch-scheduler", func() func() {
		startScheduler(t)
		return func() {}
	})
	t.Logf("rack-sized gangs placed after two block-wide small gangs: batch-scheduler %d of 4, kube-scheduler %d of 4", ours, kube)
	if ours != 3 {
		t.Errorf("batch-scheduler placed %d of 4 rack-sized gangs; keeping the small gangs on one node leaves three racks whole", ours)
	}
	if ours < kube {
		t.Errorf("batch-scheduler placed %d rack-sized gangs, fewer than kube-scheduler's %d", ours, kube)
	}
}
