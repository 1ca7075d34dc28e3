package framework

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
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
