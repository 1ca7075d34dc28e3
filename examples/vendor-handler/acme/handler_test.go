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

package acme_test

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"

	"example.com/acme-scheduler/acme"
)

// argsYAML is the handler's section in the tests: the pool is the nodes
// labelled acme.example.com/pool, and half a CPU and 512Mi stay in
// reserve on each of them.
const argsYAML = `poolLabel: acme.example.com/pool
reserve: {cpu: 500m, memory: 512Mi}
`

// makeNode returns node n1 with allocatable cpu and memory (capacity is
// not used by the scheduler), in the pool or not.
func makeNode(rv string, inPool bool, cpu, memory string) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: rv, Labels: map[string]string{"zone": "a"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(cpu),
			v1.ResourceMemory: resource.MustParse(memory),
			v1.ResourcePods:   resource.MustParse("110"),
		}},
	}
	if inPool {
		n.Labels[acme.DefaultPoolLabel] = "batch"
	}
	return n
}

func pooled(rv string) *v1.Node   { return makeNode(rv, true, "4", "8Gi") }
func unpooled(rv string) *v1.Node { return makeNode(rv, false, "4", "8Gi") }

// seen is what the scheduler must see of a 4-CPU, 8Gi node in the pool.
var seen = v1.ResourceList{
	v1.ResourceCPU:    resource.MustParse("3500m"),
	v1.ResourceMemory: resource.MustParse("7680Mi"),
	v1.ResourcePods:   resource.MustParse("110"),
}

func newHandler(t *testing.T) (eventhandlers.Interface, *memCache) {
	t.Helper()
	c := newMemCache()
	h, err := acme.Factory(t.Context(), c, config.NewSection("acme.yaml", []byte(argsYAML)), nil)
	if err != nil {
		t.Fatalf("acme.Factory: %v", err)
	}
	return h, c
}

// Every path a node event can take obeys the policy: nodes outside the
// pool never reach the cache, nodes that enter or leave the pool enter or
// leave the cache, and the cache always sees allocatable minus the
// reserve.
func TestPolicyOnEveryNodePath(t *testing.T) {
	tests := []struct {
		name string
		// before runs first; its events are not checked.
		before func(h eventhandlers.Interface)
		do     func(h eventhandlers.Interface)
		// want is the allocatable of n1 in the cache; nil: n1 is not
		// in the cache.
		want       v1.ResourceList
		wantEvents []string
	}{
		{
			name: "add in the pool",
			do:   func(h eventhandlers.Interface) { h.AddNode(pooled("1")) },
			want: seen, wantEvents: []string{"NodeAdd"},
		},
		{
			name: "add outside the pool",
			do:   func(h eventhandlers.Interface) { h.AddNode(unpooled("1")) },
		},
		{
			name: "a node smaller than the reserve has none left, not a negative amount",
			do:   func(h eventhandlers.Interface) { h.AddNode(makeNode("1", true, "250m", "256Mi")) },
			want: v1.ResourceList{
				v1.ResourceCPU:    resource.MustParse("0"),
				v1.ResourceMemory: resource.MustParse("0"),
				v1.ResourcePods:   resource.MustParse("110"),
			},
			wantEvents: []string{"NodeAdd"},
		},
		{
			name: "update that relabels into the pool adds the node",
			do:   func(h eventhandlers.Interface) { h.UpdateNode(unpooled("1"), pooled("2")) },
			want: seen, wantEvents: []string{"NodeAdd"},
		},
		{
			name:   "update that relabels out of the pool removes the node",
			before: func(h eventhandlers.Interface) { h.AddNode(pooled("1")) },
			do:     func(h eventhandlers.Interface) { h.UpdateNode(pooled("1"), unpooled("2")) },
			// A node that leaves raises NodeDelete (PodTopologySpread
			// retries the jobs a domain held back).
			wantEvents: []string{"NodeDelete"},
		},
		{
			name: "update outside the pool",
			do: func(h eventhandlers.Interface) {
				h.UpdateNode(unpooled("1"), makeNode("2", false, "8", "16Gi"))
			},
		},
		{
			name:   "update in the pool keeps the reserve",
			before: func(h eventhandlers.Interface) { h.AddNode(pooled("1")) },
			do: func(h eventhandlers.Interface) {
				h.UpdateNode(pooled("1"), makeNode("2", true, "8", "8Gi"))
			},
			want: v1.ResourceList{
				v1.ResourceCPU:    resource.MustParse("7500m"),
				v1.ResourceMemory: resource.MustParse("7680Mi"),
				v1.ResourcePods:   resource.MustParse("110"),
			},
			wantEvents: []string{"NodeAllocatableChange"},
		},
		{
			// The reserve is applied to both versions alike, so an
			// update that changes nothing the scheduler uses raises
			// nothing.
			name:   "heartbeat in the pool raises nothing",
			before: func(h eventhandlers.Interface) { h.AddNode(pooled("1")) },
			do: func(h eventhandlers.Interface) {
				n := pooled("2")
				n.Annotations = map[string]string{"heartbeat": "now"}
				h.UpdateNode(pooled("1"), n)
			},
			want: seen,
		},
		{
			name:   "delete in the pool",
			before: func(h eventhandlers.Interface) { h.AddNode(pooled("1")) },
			do:     func(h eventhandlers.Interface) { h.DeleteNode(pooled("1")) },
			// A node that leaves raises NodeDelete (PodTopologySpread
			// retries the jobs a domain held back).
			wantEvents: []string{"NodeDelete"},
		},
		{
			name:   "tombstone in the pool",
			before: func(h eventhandlers.Interface) { h.AddNode(pooled("1")) },
			do: func(h eventhandlers.Interface) {
				h.DeleteNode(cache.DeletedFinalStateUnknown{Key: "n1", Obj: pooled("1")})
			},
			// A node that leaves raises NodeDelete (PodTopologySpread
			// retries the jobs a domain held back).
			wantEvents: []string{"NodeDelete"},
		},
		{
			// The policy keeps the delete from reaching the cache
			// (checked with strayRemovals).
			name: "delete outside the pool",
			do:   func(h eventhandlers.Interface) { h.DeleteNode(unpooled("1")) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, c := newHandler(t)
			if tt.before != nil {
				tt.before(h)
				c.takeEvents()
			}
			tt.do(h)
			got := c.node("n1")
			switch {
			case tt.want == nil && got != nil:
				t.Errorf("n1 is in the cache with allocatable %v; want it absent", got.Status.Allocatable)
			case tt.want != nil && got == nil:
				t.Errorf("n1 is not in the cache; want allocatable %v", tt.want)
			case tt.want != nil && !equality.Semantic.DeepEqual(got.Status.Allocatable, tt.want):
				t.Errorf("allocatable in the cache = %v, want %v", got.Status.Allocatable, tt.want)
			}
			if events := c.takeEvents(); !slices.Equal(events, tt.wantEvents) {
				t.Errorf("events = %q, want %q", events, tt.wantEvents)
			}
			if len(c.strayRemovals) > 0 {
				t.Errorf("RemoveNode was called for nodes never added: %q", c.strayRemovals)
			}
		})
	}
}

// The policy hands the cache a copy: the informer's object keeps its
// allocatable, and the copy is still the same node.
func TestPolicyDoesNotModifyTheInformersNode(t *testing.T) {
	h, c := newHandler(t)
	n := pooled("1")
	before := n.DeepCopy()
	h.AddNode(n)
	h.UpdateNode(n, pooled("2"))
	if !equality.Semantic.DeepEqual(n, before) {
		t.Errorf("the informer's node was modified:\n got %+v\nwant %+v", n.Status, before.Status)
	}
	got := c.node("n1")
	if got == nil || got.Labels[acme.DefaultPoolLabel] != "batch" || got.ResourceVersion != "2" {
		t.Fatalf("cache holds %+v, want n1 at resourceVersion 2 with its labels", got)
	}
}

// Without a reserve the node is handed over as it is, and a node lacking
// a reserved resource does not gain it.
func TestPolicyReserve(t *testing.T) {
	node := makeNode("1", true, "4", "8Gi")
	t.Run("no reserve", func(t *testing.T) {
		p := acme.NewPolicy(acme.DefaultArgs())
		if got := p.Node(node); got != node {
			t.Errorf("Node() returned a copy; with no reserve it should return the node itself")
		}
	})
	t.Run("resource the node lacks", func(t *testing.T) {
		args := acme.DefaultArgs()
		args.Reserve = acme.Reserve{"example.com/gpu": resource.MustParse("1"), v1.ResourceCPU: resource.MustParse("1")}
		got := acme.NewPolicy(args).Node(node)
		if _, ok := got.Status.Allocatable["example.com/gpu"]; ok {
			t.Errorf("allocatable gained example.com/gpu: %v", got.Status.Allocatable)
		}
		if q := got.Status.Allocatable[v1.ResourceCPU]; q.Cmp(resource.MustParse("3")) != 0 {
			t.Errorf("cpu = %s, want 3", q.String())
		}
	})
	t.Run("a custom pool label; any value counts", func(t *testing.T) {
		args := acme.DefaultArgs()
		args.PoolLabel = "team"
		p := acme.NewPolicy(args)
		if p.Node(node) != nil {
			t.Error("a node without the custom label was accepted")
		}
		n := node.DeepCopy()
		n.Labels["team"] = ""
		if p.Node(n) == nil {
			t.Error("a node with the custom label (empty value) was ignored")
		}
	})
}

// Pods are the default handler's business: the policy has no pod hook.
func TestPodsAreTreatedAsDefault(t *testing.T) {
	h, c := newHandler(t)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "1"},
		Spec: v1.PodSpec{SchedulerName: "batch-scheduler"}}
	h.AddPod(pod)
	if !slices.Equal(c.other, []string{"AddPendingPod p"}) {
		t.Errorf("cache calls = %q, want the pending pod queued", c.other)
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		// wantErr lists substrings of the error; empty: no error.
		wantErr []string
	}{
		{name: "no section", yaml: ""},
		{name: "everything", yaml: "poolLabel: example.com/team\nreserve: {cpu: 1, memory: 1Gi, example.com/gpu: 0}\ndefault:\n  dynamicResources: [widgets.v1.example.com]\n"},
		{name: "unknown field", yaml: "poolLable: x\n", wantErr: []string{"acme.yaml", "line 1", "poolLable"}},
		{name: "unknown field of the default handler", yaml: "default:\n  dynamicResource: []\n", wantErr: []string{"acme.yaml", "line 2", "dynamicResource"}},
		{name: "invalid default handler args", yaml: "default: {dynamicResources: [nope]}\n", wantErr: []string{"default: dynamicResources[0]", "nope"}},
		{name: "empty pool label", yaml: "poolLabel: \"\"\n", wantErr: []string{"poolLabel must not be empty"}},
		{name: "invalid pool label", yaml: "poolLabel: not a label\n", wantErr: []string{`poolLabel "not a label"`, "not a valid label key"}},
		{name: "reserve not a mapping", yaml: "reserve: 500m\n", wantErr: []string{"line 1", "reserve: expected a mapping"}},
		{name: "reserve not a quantity", yaml: "poolLabel: a\nreserve:\n  cpu: lots\n", wantErr: []string{"acme.yaml", "line 3", "reserve.cpu", `"lots" is not a quantity`}},
		{name: "reserve a list", yaml: "reserve: {cpu: [1]}\n", wantErr: []string{"reserve.cpu", "expected a quantity"}},
		{name: "negative reserve", yaml: "reserve: {memory: -1Gi}\n", wantErr: []string{"reserve.memory", "negative"}},
		{name: "bad resource name", yaml: "reserve: {\"no such/resource/name\": 1}\n", wantErr: []string{"not a valid resource name"}},
		{name: "resource listed twice", yaml: "reserve:\n  cpu: 1\n  cpu: 2\n", wantErr: []string{"line 3", "reserve.cpu is listed twice"}},
		{name: "two documents", yaml: "poolLabel: a\n---\npoolLabel: b\n", wantErr: []string{"more than one YAML document"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := acme.Factory(t.Context(), newMemCache(), config.NewSection("acme.yaml", []byte(tt.yaml)), nil)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Factory: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Factory succeeded; want an error mentioning %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// Args built in code get the checks decoding would have made.
func TestArgsValidateInCode(t *testing.T) {
	args := acme.DefaultArgs()
	args.Reserve = acme.Reserve{v1.ResourceCPU: resource.MustParse("-1")}
	if _, err := acme.NewWithArgs(newMemCache(), args); err == nil || !strings.Contains(err.Error(), "reserve.cpu") {
		t.Errorf("NewWithArgs = %v, want an error naming reserve.cpu", err)
	}
}

// Through a registry, as the command builds it: a nil section means the
// defaults, and a factory error names the handler.
func TestFactoryThroughARegistry(t *testing.T) {
	reg := eventhandlers.NewRegistry()
	if err := reg.Register(acme.Name, acme.Factory); err != nil {
		t.Fatal(err)
	}
	c := newMemCache()
	h, err := eventhandlers.NewEventHandler(t.Context(), reg, acme.Name, c, nil, nil)
	if err != nil {
		t.Fatalf("NewEventHandler: %v", err)
	}
	h.AddNode(unpooled("1"))
	h.AddNode(makeNode("1", true, "2", "1Gi")) // no reserve by default
	if got := c.nodeNames(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("cache nodes = %q, want [n1]", got)
	}
	if q := c.node("n1").Status.Allocatable[v1.ResourceCPU]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("cpu = %s, want 2 (no reserve by default)", q.String())
	}
	_, err = eventhandlers.NewEventHandler(t.Context(), reg, acme.Name, c, strings.NewReader("zone: x\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `initializing event handler "acme"`) || !strings.Contains(err.Error(), "zone") {
		t.Errorf("error = %v, want one naming the handler and the field", err)
	}
}
