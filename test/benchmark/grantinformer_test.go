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

package benchmark

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/twolevel"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// giFramework is the framework every grant of the benchmark is issued to,
// and the two-level handler's framework.
const giFramework = "batch"

// BenchmarkGrantInformerThroughput is BenchmarkCustomInformerThroughput
// for Grants: how many Grant events per second reach the scheduler cache
// through the two-level event handler (twolevel.New with framework
// "batch"), from the same two sources fed the same event sequence:
//
//   - native: a plain client-go SharedIndexInformer over an in-memory
//     ListerWatcher (the baseline);
//   - http: a resourcemanager.Store of Grants served on 127.0.0.1, read by
//     the custom informer custominformer.Build makes for a customInformers
//     entry with resource Grant and source http.
//
// The cache holds BENCH_CI_NODES nodes (300, from its Node informer) and
// the source's initial list BENCH_CI_GRANTS grants (600) of framework
// "batch" on random nodes. Every timed event changes the cap of at least
// one node (the handler calls SetNodeCap or RemoveNodeCap): about 30%
// creates, 40% updates (half resize to other amounts, 30% move the grant to
// another node, 20% revoke it) and 30% deletes; an update or delete that
// picks a revoked grant reactivates it instead, so that it changes a cap
// too. Grants never expire, so the handler's expiry timer stays idle.
//
// Timing, checks and metrics are those of BenchmarkCustomInformerThroughput;
// the final check is that every node's cap in the cache is the sum of the
// active grants there, and "no grant" (a zero cap) on nodes without one.
// hack/bench-custominformer.sh runs it (BENCH_CI_KIND=grants or all).
func BenchmarkGrantInformerThroughput(b *testing.B) {
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	s := ciSettings{
		nodes:     envInt(b, "BENCH_CI_NODES", 300),
		workloads: envInt(b, "BENCH_CI_GRANTS", 600),
	}
	if s.nodes < 1 || s.workloads < 0 {
		b.Fatalf("BENCH_CI_NODES=%d must be at least 1 and BENCH_CI_GRANTS=%d not negative", s.nodes, s.workloads)
	}
	runInformerSides(b, s, grantKind(s))
}

// grantKind streams Grants into the two-level handler.
func grantKind(s ciSettings) ciKind {
	return ciKind{
		resource: framework.Grant,
		gvk:      v1alpha1.SchemeGroupVersion.WithKind("Grant"),
		plural:   v1alpha1.GrantsResource,
		example:  &v1alpha1.Grant{},
		list: func(rv string, items []ciObject) runtime.Object {
			list := &v1alpha1.GrantList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
			for _, o := range items {
				list.Items = append(list.Items, *o.(*v1alpha1.Grant))
			}
			return list
		},
		sequence: func(n int, withRV bool) *ciSequence { return newGrantSequence(n, s, withRV) },
		handler: func(c *cache.SchedulerCache, counter *ciCounter) (eventhandlers.Interface, error) {
			base, err := twolevel.New(c, twolevel.Args{Framework: giFramework})
			if err != nil {
				return nil, err
			}
			return &giCountingHandler{Handler: base, ciCounter: counter}, nil
		},
	}
}

// giCountingHandler is the two-level handler counting the Grant events it
// has applied to the cache.
type giCountingHandler struct {
	*twolevel.Handler
	*ciCounter
}

func (h *giCountingHandler) AddGrant(obj any) {
	h.Handler.AddGrant(obj)
	h.count()
}

func (h *giCountingHandler) UpdateGrant(oldObj, newObj any) {
	h.Handler.UpdateGrant(oldObj, newObj)
	h.count()
}

func (h *giCountingHandler) DeleteGrant(obj any) {
	h.Handler.DeleteGrant(obj)
	h.count()
}

// giFootprint is what one grant should add to its node's cap.
type giFootprint struct {
	node          string
	milliCPU, mem int64
	active        bool
}

func giGrant(name string, f giFootprint) *v1alpha1.Grant {
	phase := v1alpha1.GrantActive
	if !f.active {
		phase = v1alpha1.GrantRevoked
	}
	return &v1alpha1.Grant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "grantinformer"}},
		Spec: v1alpha1.GrantSpec{
			Framework: giFramework,
			NodeName:  f.node,
			Issuer:    "bench-allocator",
			Resources: v1.ResourceList{
				v1.ResourceCPU:    *resource.NewMilliQuantity(f.milliCPU, resource.DecimalSI),
				v1.ResourceMemory: *resource.NewQuantity(f.mem, resource.BinarySI),
			},
		},
		Status: v1alpha1.GrantStatus{Phase: phase},
	}
}

// newGrantSequence builds the initial grants and n events over s.nodes
// nodes, deterministically, each event changing some node's cap. With
// withRV the objects carry the resourceVersions a store starting at 1
// would give them.
func newGrantSequence(n int, s ciSettings, withRV bool) *ciSequence {
	rng := rand.New(rand.NewPCG(ciSeed, uint64(n)))
	cpus := []int64{1000, 2000, 4000, 8000}
	mems := []int64{2 << 30, 4 << 30, 8 << 30, 16 << 30}
	// other picks an element of from different from cur.
	other := func(from []int64, cur int64) int64 {
		for {
			if v := from[rng.IntN(len(from))]; v != cur {
				return v
			}
		}
	}
	seq := &ciSequence{}
	final := map[string]giFootprint{} // by grant name
	var live []string
	next := 0
	rv := int64(1)
	stamp := func(g *v1alpha1.Grant) *v1alpha1.Grant {
		rv++
		if withRV {
			g.ResourceVersion = strconv.FormatInt(rv, 10)
		}
		return g
	}
	create := func() *v1alpha1.Grant {
		name := fmt.Sprintf("grant-%06d", next)
		next++
		f := giFootprint{
			node:     ciNodeName(rng.IntN(s.nodes)),
			milliCPU: cpus[rng.IntN(len(cpus))],
			mem:      mems[rng.IntN(len(mems))],
			active:   true,
		}
		final[name] = f
		live = append(live, name)
		return stamp(giGrant(name, f))
	}
	for range s.workloads {
		seq.initial = append(seq.initial, create())
	}
	seq.ops = make([]ciOp, 0, n)
	for range n {
		r := rng.IntN(100)
		if r < 30 || len(live) == 0 {
			seq.ops = append(seq.ops, ciOp{watch.Added, create()})
			continue
		}
		i := rng.IntN(len(live))
		name := live[i]
		f := final[name]
		switch {
		case !f.active: // revoked: reactivate, which raises the cap again
			f.active = true
		case r < 70:
			switch u := rng.IntN(10); {
			case u < 5: // resize
				f.milliCPU = other(cpus, f.milliCPU)
				f.mem = other(mems, f.mem)
			case u < 8 && s.nodes > 1: // move to another node
				for old := f.node; f.node == old; {
					f.node = ciNodeName(rng.IntN(s.nodes))
				}
			default: // revoke
				f.active = false
			}
		default: // delete an active grant
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			seq.ops = append(seq.ops, ciOp{watch.Deleted, stamp(giGrant(name, f))})
			delete(final, name)
			continue
		}
		final[name] = f
		seq.ops = append(seq.ops, ciOp{watch.Modified, stamp(giGrant(name, f))})
	}
	seq.verify = func(b *testing.B, c *cache.SchedulerCache) { verifyGrantState(b, c, s, final) }
	return seq
}

// verifyGrantState checks that every node's cap is the sum of the active
// grants the sequence leaves there, and "no grant" where there is none.
func verifyGrantState(b *testing.B, c *cache.SchedulerCache, s ciSettings, final map[string]giFootprint) {
	b.Helper()
	type want struct {
		milliCPU, mem int64
		grants        int
	}
	wants := make(map[string]*want, s.nodes)
	for i := range s.nodes {
		wants[ciNodeName(i)] = &want{}
	}
	for _, f := range final {
		if !f.active {
			continue
		}
		w := wants[f.node]
		w.milliCPU += f.milliCPU
		w.mem += f.mem
		w.grants++
	}
	bad := 0
	for i := range s.nodes {
		node := ciNodeName(i)
		w := wants[node]
		ni, ok := c.NodeInfo(node)
		switch {
		case !ok:
			b.Errorf("node %s is gone from the cache", node)
		case ni.Placeholder:
			b.Errorf("node %s is a placeholder", node)
		case ni.Cap == nil:
			b.Errorf("node %s has no cap; under the two-level handler every node has one", node)
		case ni.Cap.MilliCPU != w.milliCPU || ni.Cap.Memory != w.mem:
			if bad++; bad <= 5 {
				b.Errorf("node %s: cap %dm CPU, %d memory; want %dm, %d (%d active grants)",
					node, ni.Cap.MilliCPU, ni.Cap.Memory, w.milliCPU, w.mem, w.grants)
			}
		}
	}
	if b.Failed() {
		b.FailNow()
	}
}
