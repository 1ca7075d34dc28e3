package plugins_test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	"github.com/batch-scheduler/batch-scheduler/pkg/queue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// nodeVariant is one point of the space of nodes the test explores.
type nodeVariant struct {
	unschedulable bool
	zone          string
	tainted       bool
	cpu           string
}

func (v nodeVariant) node(rv int) *v1.Node {
	w := st.MakeNode().Name("n1").RV(fmt.Sprint(rv)).Label("zone", v.zone).Unschedulable(v.unschedulable).
		Capacity(res{v1.ResourceCPU: v.cpu, v1.ResourceMemory: "8Gi", v1.ResourcePods: "10"})
	if v.tainted {
		w = w.Taint("dedicated", "batch", v1.TaintEffectNoSchedule)
	}
	return w.Obj()
}

func (v nodeVariant) String() string {
	return fmt.Sprintf("{unschedulable=%v zone=%s tainted=%v cpu=%s}", v.unschedulable, v.zone, v.tainted, v.cpu)
}

// neighbours returns the variants that differ from v in one property: one
// node update, raising one event.
func (v nodeVariant) neighbours() []nodeVariant {
	a, b, c, d := v, v, v, v
	a.unschedulable = !v.unschedulable
	b.zone = map[string]string{"a": "b", "b": "a"}[v.zone]
	c.tainted = !v.tainted
	d.cpu = map[string]string{"1": "4", "4": "1"}[v.cpu]
	return []nodeVariant{a, b, c, d}
}

func allNodeVariants() []nodeVariant {
	var out []nodeVariant
	for _, u := range []bool{false, true} {
		for _, z := range []string{"a", "b"} {
			for _, tainted := range []bool{false, true} {
				for _, cpu := range []string{"1", "4"} {
					out = append(out, nodeVariant{u, z, tainted, cpu})
				}
			}
		}
	}
	return out
}

// allPods returns pods that differ in what each filter looks at: CPU, a
// node selector, a toleration of the node's taint and of cordoning.
func allPods() []*v1.Pod {
	var out []*v1.Pod
	for _, cpu := range []string{"0", "2"} {
		for _, selector := range []bool{false, true} {
			for _, tolerates := range []bool{false, true} {
				for _, cordonOK := range []bool{false, true} {
					w := st.MakePod().Name(fmt.Sprintf("p-cpu%s-sel%v-tol%v-cordon%v", cpu, selector, tolerates, cordonOK))
					if cpu != "0" {
						w = w.Req(res{v1.ResourceCPU: cpu})
					}
					if selector {
						w = w.NodeSelector(map[string]string{"zone": "a"})
					}
					if tolerates {
						w = w.Toleration("dedicated", "batch", v1.TaintEffectNoSchedule)
					}
					if cordonOK {
						w = w.TolerationExists(v1.TaintNodeUnschedulable, v1.TaintEffectNoSchedule)
					}
					out = append(out, w.Obj())
				}
			}
		}
	}
	return out
}

// One rule decides whether a pod may run on a node: the plugins. For every
// node filter plugin, pod and node change (a node added, or an update of
// one property), a job that the plugin rejected on the node before the
// change is run through the real default handler, cache and queue, with
// the events the plugin registered; it must be retried exactly when the
// plugin's Filter passes the pod on the node after the change.
func TestQueueingHintsAgreeWithFilters(t *testing.T) {
	reg := plugins.NewInTreeRegistry()
	filters := map[string]framework.FilterPlugin{}
	for _, name := range []string{"NodeUnschedulable", "NodeAffinity", "TaintToleration", "NodeResourcesFit"} {
		factory, err := reg.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := factory(t.Context(), nil, testutil.NewHandle())
		if err != nil {
			t.Fatalf("building %s: %v", name, err)
		}
		p, ok := pl.(framework.FilterPlugin)
		if !ok {
			t.Fatalf("%s is not a filter plugin", name)
		}
		filters[name] = p
	}
	passes := func(p framework.FilterPlugin, pod *v1.Pod, node *v1.Node) bool {
		return p.Filter(t.Context(), framework.NewCycleState(), pod, framework.NewNodeInfo(node)).IsSuccess()
	}

	// seen counts, per plugin, the outcomes exercised, so that the test
	// fails if the space it explores stops covering both.
	type outcome struct{ plugin, change string }
	seen := map[outcome]map[bool]int{}
	pods := allPods()
	for name, p := range filters {
		for _, newV := range allNodeVariants() {
			changes := []*nodeVariant{nil} // nil: the node is added
			for _, oldV := range newV.neighbours() {
				changes = append(changes, &oldV)
			}
			for _, oldV := range changes {
				for _, pod := range pods {
					var oldNode *v1.Node
					change := "add"
					if oldV != nil {
						oldNode = oldV.node(1)
						if passes(p, pod, oldNode) {
							// The plugin did not reject the pod on this
							// node: nothing for its hint to undo.
							continue
						}
						change = fmt.Sprintf("%v -> %v", *oldV, newV)
					}
					newNode := newV.node(2)
					want := passes(p, pod, newNode)
					got := retriedAfter(t, name, p, pod, oldNode, newNode)
					if got != want {
						t.Errorf("%s, pod %s, node %s: the job was retried: %v; the filter passes after the change: %v",
							name, pod.Name, change, got, want)
					}
					kind := "update"
					if oldV == nil {
						kind = "add"
					}
					o := outcome{name, kind}
					if seen[o] == nil {
						seen[o] = map[bool]int{}
					}
					seen[o][want]++
				}
			}
		}
	}
	for name := range filters {
		for _, kind := range []string{"add", "update"} {
			if c := seen[outcome{name, kind}]; c[true] == 0 || c[false] == 0 {
				t.Errorf("%s, node %s: outcomes exercised %v; want both a retry and none", name, kind, c)
			}
		}
	}
}

// retriedAfter parks a job of pod, rejected by plugin p, with the events
// the plugin registered (as the scheduler records them), then lets the real default handler see oldNode
// (already known to the cache; nil if the node is new) become newNode. It
// reports whether the job left the unschedulable queue.
func retriedAfter(t *testing.T, plugin string, p framework.FilterPlugin, pod *v1.Pod, oldNode, newNode *v1.Node) bool {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c, err := cache.New(cache.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{})
	if err != nil {
		t.Fatal(err)
	}
	if oldNode != nil {
		h.AddNode(oldNode)
	}
	h.AddPod(pod)
	qj, err := c.Queue().Pop(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var events []framework.PluginEvent
	for _, e := range p.(framework.EnqueueExtensions).EventsToRegister() {
		events = append(events, framework.PluginEvent{Plugin: plugin, ClusterEventWithHint: e})
	}
	attempt := queue.Attempt{Reason: "rejected by " + plugin, Events: events}
	if err := c.Queue().AddUnschedulable(qj, attempt); err != nil {
		t.Fatal(err)
	}
	if c.Queue().Lengths().Unschedulable != 1 {
		t.Fatalf("the job is not parked: %+v", c.Queue().Lengths())
	}
	clk.Step(queue.DefaultMaxBackoff)
	if oldNode == nil {
		h.AddNode(newNode)
	} else {
		h.UpdateNode(oldNode, newNode)
	}
	return c.Queue().Lengths().Unschedulable == 0
}
