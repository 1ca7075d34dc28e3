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

package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// TestNodeInfoAffinityCounters checks that PodsWithAffinity and
// PodsWithRequiredAntiAffinity count the counted tasks only, follow
// AddPod and RemovePod, and are copied by Clone without being shared.
func TestNodeInfoAffinityCounters(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	mk := func(name string, affinity *v1.Affinity, phase v1.PodPhase) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("uid-" + name)},
			Spec:       v1.PodSpec{NodeName: "n", Affinity: affinity},
			Status:     v1.PodStatus{Phase: phase},
		}
	}
	term := []v1.PodAffinityTerm{{TopologyKey: v1.LabelHostname}}
	preferredOnly := &v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 1}}}}
	requiredAnti := &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term}}
	nodeAffinityOnly := &v1.Affinity{NodeAffinity: &v1.NodeAffinity{}}

	n := NewNodeInfo(node,
		mk("plain", nil, v1.PodRunning),
		mk("node-affinity", nodeAffinityOnly, v1.PodRunning),
		mk("preferred", preferredOnly, v1.PodRunning),
		mk("anti", requiredAnti, v1.PodRunning),
		mk("finished-anti", requiredAnti, v1.PodSucceeded),
	)
	check := func(n *NodeInfo, affinity, anti int) {
		t.Helper()
		if n.PodsWithAffinity != affinity || n.PodsWithRequiredAntiAffinity != anti {
			t.Errorf("counters = %d with affinity, %d with required anti-affinity; want %d, %d",
				n.PodsWithAffinity, n.PodsWithRequiredAntiAffinity, affinity, anti)
		}
	}
	check(n, 2, 1)
	c := n.Clone()
	c.AddPod(mk("anti2", requiredAnti, v1.PodPending))
	check(c, 3, 2)
	check(n, 2, 1)
	if !c.RemovePod("uid-anti") || !c.RemovePod("uid-anti2") || !c.RemovePod("uid-finished-anti") {
		t.Fatal("RemovePod did not find a pod")
	}
	check(c, 1, 0)
	if !c.RemovePod("uid-preferred") {
		t.Fatal("RemovePod did not find the preferred pod")
	}
	check(c, 0, 0)
}

// TestNodeInfoHostPortsAndUnschedulable checks that PodsWithHostPorts
// counts the counted tasks whose pods ask for a host port (in a container
// or an init container) through AddPod and RemovePod, and that
// Unschedulable and Taints follow the node SetNode is given and a
// placeholder.
func TestNodeInfoHostPortsAndUnschedulable(t *testing.T) {
	mk := func(name string, phase v1.PodPhase, init bool, port int32) *v1.Pod {
		c := v1.Container{Name: "c", Ports: []v1.ContainerPort{{ContainerPort: 8080, HostPort: port}}}
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("uid-" + name)},
			Spec:       v1.PodSpec{NodeName: "n"},
			Status:     v1.PodStatus{Phase: phase},
		}
		if init {
			pod.Spec.InitContainers = []v1.Container{c}
		} else {
			pod.Spec.Containers = []v1.Container{c}
		}
		return pod
	}
	n := NewNodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}},
		mk("container-port-only", v1.PodRunning, false, 0),
		mk("host-port", v1.PodRunning, false, 80),
		mk("init-host-port", v1.PodRunning, true, 81),
		mk("finished-host-port", v1.PodSucceeded, false, 82),
	)
	if n.PodsWithHostPorts != 2 {
		t.Errorf("PodsWithHostPorts = %d, want 2 (the finished pod and the container port without a host port do not count)", n.PodsWithHostPorts)
	}
	c := n.Clone()
	if !c.RemovePod("uid-host-port") || !c.RemovePod("uid-finished-host-port") {
		t.Fatal("RemovePod did not find a pod")
	}
	if c.PodsWithHostPorts != 1 || n.PodsWithHostPorts != 2 {
		t.Errorf("after removing two pods from the clone: %d on the clone, %d on the original; want 1, 2", c.PodsWithHostPorts, n.PodsWithHostPorts)
	}

	if n.Unschedulable {
		t.Error("a schedulable node reads Unschedulable")
	}
	cordoned := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{Unschedulable: true,
		Taints: []v1.Taint{{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}}}}
	n.SetNode(cordoned)
	if c := n.Clone(); !n.Unschedulable || !c.Unschedulable || len(n.Taints) != 1 || len(c.Taints) != 1 {
		t.Error("a cordoned, tainted node (or its clone) does not read Unschedulable and its taint")
	}
	n.MakePlaceholder()
	if n.Unschedulable || n.Taints != nil {
		t.Error("a placeholder reads Unschedulable or taints")
	}
	n.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	if n.Unschedulable || n.Taints != nil {
		t.Error("an uncordoned, untainted node still reads Unschedulable or taints")
	}
}

// TestTaskCountsAndUID checks that what a task works out of its pod when
// it is built (its UID, and what node accounting counts besides
// requests) is what reading the pod gives, however the task was built:
// pending, bound with a record, assumed, or as a literal that worked
// nothing out.
func TestTaskCountsAndUID(t *testing.T) {
	term := []v1.PodAffinityTerm{{TopologyKey: v1.LabelHostname}}
	ports := []v1.ContainerPort{{ContainerPort: 8080, HostPort: 80}}
	specs := map[string]v1.PodSpec{
		"plain":          {Containers: []v1.Container{{Name: "c"}}},
		"container-port": {Containers: []v1.Container{{Name: "c", Ports: []v1.ContainerPort{{ContainerPort: 8080}}}}},
		"host-port":      {Containers: []v1.Container{{Name: "c", Ports: ports}}},
		"init-host-port": {InitContainers: []v1.Container{{Name: "i", Ports: ports}}, Containers: []v1.Container{{Name: "c"}}},
		"preferred": {Affinity: &v1.Affinity{PodAffinity: &v1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term[0]}}}}},
		"anti": {Affinity: &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term}}},
		"anti-and-port": {Affinity: &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term}},
			Containers: []v1.Container{{Name: "c", Ports: ports}}},
		"node-affinity": {Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{}}},
	}
	want := map[string]nodeCounts{
		"host-port": countsHostPorts, "init-host-port": countsHostPorts, "preferred": countsAffinity,
		"anti": countsAffinity | countsRequiredAntiAffinity, "anti-and-port": countsAffinity | countsRequiredAntiAffinity | countsHostPorts,
	}
	for name, spec := range specs {
		pending := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("uid-" + name)}, Spec: spec}
		bound := pending.DeepCopy()
		bound.Spec.NodeName = "n"
		tasks := map[string]*TaskInfo{
			"pending":        NewTaskInfo(pending, GroupResolver{}),
			"bound":          NewTaskInfo(bound, GroupResolver{}),
			"bound, record":  NewTaskInfoOfRecord(NewPodRecord(bound), NewPodRecord(bound).Pod(), resources.PodRequests(bound), Membership{}),
			"assumed":        NewAssumedTaskInfo(pending, "n", JobID{}),
			"literal":        {Pod: bound},
			"literal record": {rec: NewPodRecord(bound)},
		}
		for how, task := range tasks {
			if got := task.nodeCounts() &^ countsKnown; got != want[name] {
				t.Errorf("%s, %s: counts %04b, want %04b", name, how, got, want[name])
			}
			if got := task.GetUID(); got != pending.UID {
				t.Errorf("%s, %s: UID %q, want %q", name, how, got, pending.UID)
			}
		}
	}
}
