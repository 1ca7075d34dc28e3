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
	kube := fragmentationRun(t, key, busy, v1.DefaultSchedulerName, func() func() {
		return cp.StartKubeScheduler(t, 100, "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
	})
	ours := fragmentationRun(t, key, busy, "batch-scheduler", func() func() {
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

// fragmentationRun runs the stream through one scheduler in a namespace
// of its own, with a running 4-CPU pod on each busy node, and returns how
// many rack-sized gangs were placed whole. The namespace's pods are
// deleted at the end, so the next run starts on the same racks.
func fragmentationRun(t *testing.T, key string, busy []string, schedulerName string, start func() (stop func())) int {
	t.Helper()
	ns := createNamespace(t)
	for i, node := range busy {
		createPod(t, gangPod(ns, fmt.Sprintf("busy-%d", i)).Node(node).Req(map[v1.ResourceName]string{"cpu": "4"}).Obj())
	}
	stop := start()
	defer stop()
	gang := func(name string, pods int, cpu string) {
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
	for i := range 2 {
		gang(fmt.Sprintf("small-%d", i), 2, "1")
		waitBound(t, ns, len(busy)+2*(i+1), fmt.Sprintf("%s: small gang %d", schedulerName, i))
	}
	for i := range 3 {
		gang(fmt.Sprintf("large-%d", i), 4, "4")
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
	for i := range 3 {
		whole := true
		for j := range 4 {
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
	// The next run needs the racks empty.
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
	run := func(schedulerName string, start func() func()) int {
		return nestedRun(t, blockKey, rackKey, schedulerName, start)
	}
	kube := run(v1.DefaultSchedulerName, func() func() {
		return cp.StartKubeScheduler(t, 100, "--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true")
	})
	ours := run("batch-scheduler", func() func() {
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

// nestedRun creates the two small block gangs, then four rack gangs, with
// one scheduler, and returns how many rack gangs were placed whole.
func nestedRun(t *testing.T, blockKey, rackKey, schedulerName string, start func() (stop func())) int {
	t.Helper()
	ns := createNamespace(t)
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
	for i := range 2 {
		gang(fmt.Sprintf("small-%d", i), blockKey, 2, "1")
		waitBound(t, ns, 2*(i+1), fmt.Sprintf("%s: small gang %d", schedulerName, i))
	}
	for i := range 4 {
		gang(fmt.Sprintf("large-%d", i), rackKey, 2, "4")
	}
	last, since := -1, time.Now()
	_ = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		if n := len(bound(t, ns)); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) > 5*time.Second, nil
	})
	b := bound(t, ns)
	placed := 0
	for i := range 4 {
		_, a := b[fmt.Sprintf("large-%d-0", i)]
		_, c := b[fmt.Sprintf("large-%d-1", i)]
		if a && c {
			placed++
		}
	}
	stop()
	for pod := range b {
		_ = cp.Client.CoreV1().Pods(ns).Delete(context.Background(), pod, now)
	}
	_ = wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return len(bound(t, ns)) == 0, nil
	})
	return placed
}
