package cache

import (
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func cpu(millis int64) resources.Resource {
	return resources.Resource{MilliCPU: millis, Memory: 1 << 40}
}

func TestNodeCaps(t *testing.T) {
	c, _ := newTestCache(t, Options{SchedulerNames: []string{"batch"}})
	snap := NewSnapshot()
	capOf := func(name string) *resources.Resource {
		t.Helper()
		mustNoErr(t, "UpdateSnapshot", c.UpdateSnapshot(snap))
		n, ok := snap.Get(name)
		if !ok {
			t.Fatalf("node %s not in the snapshot", name)
		}
		return n.Cap
	}
	// A cap set before its node arrives applies when it does.
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(4000)))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n2")))
	if got := capOf("n1"); got == nil || got.MilliCPU != 4000 {
		t.Errorf("n1 cap = %v, want 4 cpu", got)
	}
	if got := capOf("n2"); got != nil {
		t.Errorf("n2 cap = %v before RequireNodeCaps, want none", got)
	}
	c.RequireNodeCaps()
	if got := capOf("n2"); got == nil || !got.IsZero() {
		t.Errorf("n2 cap = %v under RequireNodeCaps, want no grant (all zero)", got)
	}

	// Only this scheduler's pods count against the cap.
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("ours").Node("n1").Scheduler("batch").Req(res{"cpu": "3"}).Obj()))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("theirs").Node("n1").Scheduler("other").Req(res{"cpu": "5"}).Obj()))
	info, _ := c.NodeInfo("n1")
	if info.OwnRequested.MilliCPU != 3000 || info.Requested.MilliCPU != 8000 {
		t.Errorf("own requested %s, requested %s: want 3 and 8 cpu", info.OwnRequested, info.Requested)
	}
	if idle := info.Idle(); idle.MilliCPU != 1000 {
		t.Errorf("idle cpu = %dm, want 1000m (cap 4 − own 3; the node has 2 left)", idle.MilliCPU)
	}

	// The grant shrinks below what runs: reported, counted, and cleared.
	gauge := func() float64 { return metricstest.GaugeValue(t, c.metrics.GrantOvercommittedNodes) }
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(2000)))
	ex := c.CapExceededNodes()
	if len(ex) != 1 || ex[0].Node.Name != "n1" || ex[0].Used.MilliCPU != 3000 || len(ex[0].Pods) != 1 || ex[0].Pods[0].Name != "ours" {
		t.Errorf("CapExceededNodes = %+v, want n1 with our one pod using 3 cpu", ex)
	}
	if gauge() != 1 {
		t.Errorf("grant_overcommitted_nodes = %v, want 1", gauge())
	}
	if d := c.Dump(); !nodeDump(d, "n1").CapExceeded || nodeDump(d, "n1").Cap.MilliCPU != 2000 {
		t.Errorf("dump of n1 = %+v, want the cap and capExceeded", nodeDump(d, "n1"))
	}
	_, err := c.DeletePod(st.MakePod().Name("ours").Node("n1").Scheduler("batch").Obj())
	mustNoErr(t, "DeletePod", err)
	if ex := c.CapExceededNodes(); len(ex) != 0 || gauge() != 0 {
		t.Errorf("after our pod left: CapExceededNodes = %+v, gauge %v; want none", ex, gauge())
	}

	// Removing the cap under RequireNodeCaps leaves no grant, not no cap.
	mustNoErr(t, "RemoveNodeCap", c.RemoveNodeCap("n1"))
	if got := capOf("n1"); got == nil || !got.IsZero() {
		t.Errorf("n1 cap after RemoveNodeCap = %v, want no grant", got)
	}
	mustNoErr(t, "RemoveNodeCap of nothing", c.RemoveNodeCap("n9"))
	if err := c.SetNodeCap("", cpu(1)); err == nil {
		t.Error("SetNodeCap accepted an empty node name")
	}
}

// An assumed pod is this scheduler's and counts against the cap at once.
func TestAssumedPodsCountAgainstTheCap(t *testing.T) {
	c, _ := newTestCache(t, Options{SchedulerNames: []string{"batch"}})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "SetNodeCap", c.SetNodeCap("n1", cpu(4000)))
	p := st.MakePod().Name("p").Scheduler("batch").Req(res{"cpu": "1"}).Obj()
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	mustNoErr(t, "AssumePod", c.AssumePod(p, "n1"))
	info, _ := c.NodeInfo("n1")
	if info.OwnRequested.MilliCPU != 1000 {
		t.Errorf("own requested after assuming = %s, want 1 cpu", info.OwnRequested)
	}
}

func nodeDump(d *Dump, name string) NodeDump {
	for _, n := range d.Nodes {
		if n.Name == name {
			return n
		}
	}
	return NodeDump{}
}
