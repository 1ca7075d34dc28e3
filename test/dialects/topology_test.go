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
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// addRack adds n nodes of cpu CPUs labelled key=rack and returns their
// names.
func addRack(t *testing.T, key, rack string, n int, cpu string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for range n {
		name := "n-" + rack + "-" + utilrand.String(4)
		node := st.MakeNode().Name(name).Label(key, rack).Label("kubernetes.io/hostname", name).
			Allocatable(map[v1.ResourceName]string{"cpu": cpu, "memory": "8Gi", "pods": "110"}).Obj()
		if _, err := controlplane.CreateNode(t.Context(), cp.Client, node); err != nil {
			t.Fatalf("creating node %s: %v", name, err)
		}
		t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, now) })
		names[name] = true
	}
	return names
}

// allWithin fails unless every bound pod of ns is on one of nodes.
func allWithin(t *testing.T, ns string, nodes map[string]bool, what string) {
	t.Helper()
	for pod, node := range bound(t, ns) {
		if !nodes[node] {
			t.Errorf("pod %s bound to %s, outside %s", pod, node, what)
		}
	}
}

// A native PodGroup with spec.schedulingConstraints.topology: a gang of 8
// waits while no rack has 8 free nodes (the pods say which level and the
// largest free rack), and lands in the rack of 8 once one is added.
func TestNativePodGroupTopology(t *testing.T) {
	ns := createNamespace(t)
	key := "e2e.batch-scheduler.io/rack-" + utilrand.String(5)
	addRack(t, key, "a", 4, "1")
	addRack(t, key, "b", 4, "1")
	startScheduler(t)
	createObject(t, nativeGVR, ns, podGroup("scheduling.k8s.io/v1beta1", ns, "tg", map[string]any{
		"schedulingPolicy":      map[string]any{"gang": map[string]any{"minCount": int64(8)}},
		"schedulingConstraints": map[string]any{"topology": []any{map[string]any{"key": key}}},
	}))
	group := "tg"
	for i := range 8 {
		p := gangPod(ns, fmt.Sprintf("tg-%d", i)).Obj()
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
		createPod(t, p)
	}
	msg := waitUnschedulable(t, ns, "tg-0", "must run within one "+key+" domain", "spec.schedulingConstraints.topology",
		"its quorum needs cpu 8", "has cpu 4")
	t.Logf("waiting: %s", msg)
	stayBound(t, ns, 0, "no rack of 8 free nodes")

	c := addRack(t, key, "c", 8, "1")
	waitBound(t, ns, 8, "rack c has 8 free nodes")
	allWithin(t, ns, c, "rack c")
}

// A Volcano PodGroup with spec.networkTopology (hard, tier 1: the rack
// level of the default levels) lands within one rack although the pods
// would fit spread over two.
func TestVolcanoNetworkTopology(t *testing.T) {
	ns := createNamespace(t)
	suffix := utilrand.String(5)
	const rackLabel = "topology.kubernetes.io/rack"
	addRack(t, rackLabel, "x-"+suffix, 2, "1")
	y := addRack(t, rackLabel, "y-"+suffix, 3, "1")
	startScheduler(t)
	createObject(t, volcanoGVR, ns, podGroup("scheduling.volcano.sh/v1beta1", ns, "vt", map[string]any{
		"minMember": int64(3), "networkTopology": map[string]any{"mode": "hard", "highestTierAllowed": int64(1)},
	}))
	for i := range 3 {
		createPod(t, gangPod(ns, fmt.Sprintf("vt-%d", i)).Annotation(framework.GroupNameAnnotation, "vt").Obj())
	}
	waitBound(t, ns, 3, "rack y has 3 free nodes")
	allWithin(t, ns, y, "rack y")
}

// The project's own annotation, required, on a gang that names its quorum
// by annotation, with a malformed value first: the pods say what is
// wrong, and nothing is placed.
func TestTopologyAnnotation(t *testing.T) {
	ns := createNamespace(t)
	key := "e2e.batch-scheduler.io/rack-" + utilrand.String(5)
	addRack(t, key, "a", 2, "1")
	b := addRack(t, key, "b", 2, "1")
	startScheduler(t)
	bad := gangPod(ns, "bad-0").Annotation(framework.GroupNameAnnotation, "bad").Annotation(framework.MinAvailableAnnotation, "1").
		Annotation(framework.TopologyRequiredAnnotation, "not a key").Obj()
	createPod(t, bad)
	msg := waitUnschedulable(t, ns, "bad-0", framework.TopologyRequiredAnnotation, "is not a node label key")
	if !strings.Contains(msg, `"not a key"`) {
		t.Errorf("message %q does not quote the bad value", msg)
	}
	for i := range 2 {
		createPod(t, gangPod(ns, fmt.Sprintf("ok-%d", i)).Annotation(framework.GroupNameAnnotation, "ok").
			Annotation(framework.MinAvailableAnnotation, "2").Annotation(framework.TopologyRequiredAnnotation, key).Obj())
	}
	waitBound(t, ns, 2, "the valid gang fits in one rack")
	for pod, node := range bound(t, ns) {
		if !strings.HasPrefix(pod, "ok-") {
			t.Errorf("pod %s bound to %s despite its bad constraint", pod, node)
		}
	}
	// Either rack fits; both pods share one.
	racks := map[bool]int{}
	for _, node := range bound(t, ns) {
		racks[b[node]]++
	}
	if len(racks) != 1 {
		t.Errorf("the gang's pods are split over both racks: %v", bound(t, ns))
	}
}
