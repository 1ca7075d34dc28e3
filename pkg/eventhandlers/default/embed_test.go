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

package defaulthandler_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// acmePolicy is a vendor's policy: only nodes of the pool "acme" exist for
// this scheduler, pods of the namespace "other-team" are not its business,
// and VMs labelled "shadow" use nothing.
var acmePolicy = defaulthandler.Policy{
	Node: func(n *v1.Node) *v1.Node {
		if n.Labels["pool"] != "acme" {
			return nil
		}
		return n
	},
	Pod: func(p *v1.Pod) *v1.Pod {
		if p.Namespace == "other-team" {
			return nil
		}
		return p
	},
	ExternalWorkload: func(w *v1alpha1.ExternalWorkload) *v1alpha1.ExternalWorkload {
		if w.Labels["shadow"] == "true" {
			return nil
		}
		return w
	},
}

// acme is a vendor handler: the default handler with acmePolicy, plus an
// override that adds behaviour for a resource the default only accepts
// (Grants), which is what embedding is for.
type acme struct {
	*defaulthandler.Handler
	grants []string
}

func (h *acme) AddGrant(obj any) {
	if g, ok := eventhandlers.ObjectAs[*v1alpha1.Grant](obj); ok {
		h.grants = append(h.grants, g.Name)
	}
}

func newAcme(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
	base, err := defaulthandler.New(ctx, c, cfg, rc, defaulthandler.WithPolicy(acmePolicy))
	if err != nil {
		return nil, err
	}
	return &acme{Handler: base}, nil
}

func acmeNode(rv string) *st.NodeWrapper  { return node1(rv).Label("pool", "acme") }
func otherNode(rv string) *st.NodeWrapper { return node1(rv).Label("pool", "web") }
func otherTeamPod(rv string) *st.PodWrapper {
	return st.MakePod().Namespace("other-team").Name("p").RV(rv)
}

// mentions reports the calls that name what must never reach the cache.
func mentions(calls []string, forbidden ...string) []string {
	var out []string
	for _, c := range calls {
		for _, f := range forbidden {
			if strings.HasSuffix(c, " "+f) || strings.Contains(c, " "+f+" ") {
				out = append(out, c)
			}
		}
	}
	return out
}

// A node the vendor's policy rejects never reaches the cache, and a pod it
// ignores never reaches the queue, whatever path the event takes; an object
// that the policy starts or stops accepting enters or leaves.
func TestVendorPolicyHasNoLeak(t *testing.T) {
	tests := []struct {
		name string
		do   func(h eventhandlers.Interface)
		// want are the calls that reach the cache (IsResponsibleFor left
		// out).
		want []string
	}{
		{"node add", func(h eventhandlers.Interface) { h.AddNode(otherNode("1").Obj()) }, nil},
		{"node update", func(h eventhandlers.Interface) {
			h.UpdateNode(otherNode("1").Obj(), otherNode("2").Label("gpu", "true").Obj())
		}, nil},
		{"node resync", func(h eventhandlers.Interface) { h.UpdateNode(otherNode("3").Obj(), otherNode("3").Obj()) }, nil},
		{"node delete", func(h eventhandlers.Interface) { h.DeleteNode(otherNode("1").Obj()) }, nil},
		{"node tombstone", func(h eventhandlers.Interface) { h.DeleteNode(tombstone(otherNode("1").Obj())) }, nil},
		{"node relabelled out of the pool leaves", func(h eventhandlers.Interface) {
			h.UpdateNode(acmeNode("1").Obj(), otherNode("2").Obj())
		}, []string{"RemoveNode n1", "MoveAll NodeDelete"}},
		{"node relabelled into the pool enters", func(h eventhandlers.Interface) {
			h.UpdateNode(otherNode("1").Obj(), acmeNode("2").Obj())
		}, []string{"AddOrUpdateNode n1", "MoveAll NodeAdd"}},
		{"pending pod add", func(h eventhandlers.Interface) { h.AddPod(otherTeamPod("1").Obj()) }, nil},
		{"pending pod update", func(h eventhandlers.Interface) {
			h.UpdatePod(otherTeamPod("1").Obj(), otherTeamPod("2").Label("a", "b").Obj())
		}, nil},
		{"pending pod resync", func(h eventhandlers.Interface) { h.UpdatePod(otherTeamPod("3").Obj(), otherTeamPod("3").Obj()) }, nil},
		{"pod bound", func(h eventhandlers.Interface) {
			h.UpdatePod(otherTeamPod("1").Obj(), otherTeamPod("2").Node("n1").Obj())
		}, nil},
		{"pod delete", func(h eventhandlers.Interface) { h.DeletePod(otherTeamPod("1").Node("n1").Obj()) }, nil},
		{"pod tombstone", func(h eventhandlers.Interface) { h.DeletePod(tombstone(otherTeamPod("1").Obj())) }, nil},
		{"ignored external workload is never accounted", func(h eventhandlers.Interface) {
			w := ew("1", "n1", "2", running, "shadow", "true")
			ewh := h.(eventhandlers.ExternalWorkloadEventHandler)
			ewh.AddExternalWorkload(w)
			ewh.UpdateExternalWorkload(w, ew("2", "n2", "4", running, "shadow", "true"))
			ewh.UpdateExternalWorkload(w, w)
			ewh.DeleteExternalWorkload(tombstone(w))
		}, []string{remove}}, // a delete removes whatever the cache may hold
		{"external workload that the policy stops accepting leaves", func(h eventhandlers.Interface) {
			h.(eventhandlers.ExternalWorkloadEventHandler).UpdateExternalWorkload(
				ew("1", "n1", "2", running), ew("2", "n1", "2", running, "shadow", "true"))
		}, []string{remove, moveDec}},
		{"accepted objects behave as default", func(h eventhandlers.Interface) {
			h.AddNode(acmeNode("1").Obj())
			h.AddPod(pendingPod("1").Obj())
			h.UpdatePod(pendingPod("1").Obj(), runningPod("2").Obj())
		}, []string{"AddOrUpdateNode n1", "MoveAll NodeAdd", "AddPendingPod default/p", "AddPod default/p", moveAssignedPodAdd}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := eventhandlers.NewRegistry()
			if err := reg.Register("acme", newAcme); err != nil {
				t.Fatal(err)
			}
			fc := newFakeCache(t)
			h, err := eventhandlers.NewEventHandler(t.Context(), reg, "acme", fc, nil, nil)
			if err != nil {
				t.Fatalf("NewEventHandler: %v", err)
			}
			tt.do(h)
			if d := diffCalls(fc.Effects(), tt.want); d != "" {
				t.Error(d)
			}
			if leaked := mentions(fc.Effects(), "other-team/p"); len(leaked) > 0 {
				t.Errorf("an ignored pod reached the cache: %q", leaked)
			}
		})
	}
}

// A policy may change what the scheduler sees of an object: the cache gets
// the policy's copy, on every path.
func TestPolicyMayAdjustObjects(t *testing.T) {
	var handedOver []*v1.Node
	reserve := defaulthandler.Policy{Node: func(n *v1.Node) *v1.Node {
		c := n.DeepCopy()
		c.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("3")
		return c
	}}
	fc := &recordingNodes{fakeCache: newFakeCache(t), nodes: &handedOver}
	h, err := defaulthandler.NewWithArgs(fc, defaulthandler.Args{}, defaulthandler.WithPolicy(reserve))
	if err != nil {
		t.Fatal(err)
	}
	orig := node1("1").Obj()
	h.AddNode(orig)
	h.UpdateNode(orig, node1("2").Label("gpu", "true").Obj())
	if len(handedOver) != 2 {
		t.Fatalf("cache got %d nodes, want 2", len(handedOver))
	}
	for _, n := range handedOver {
		if got := n.Status.Allocatable.Cpu().String(); got != "3" {
			t.Errorf("the cache got allocatable cpu %s, want the policy's 3", got)
		}
	}
	if orig.Status.Allocatable.Cpu().String() != "4" {
		t.Error("the informer's object was modified")
	}
}

// recordingNodes keeps the nodes handed to AddOrUpdateNode.
type recordingNodes struct {
	*fakeCache
	nodes *[]*v1.Node
}

func (r *recordingNodes) AddOrUpdateNode(n *v1.Node) error {
	*r.nodes = append(*r.nodes, n)
	return r.fakeCache.AddOrUpdateNode(n)
}

func TestEmbedding(t *testing.T) {
	reg := eventhandlers.NewRegistry()
	if err := reg.Register("acme", newAcme); err != nil {
		t.Fatal(err)
	}
	fc := newFakeCache(t)
	cfg := strings.NewReader("dynamicResources: [widgets.v1alpha1.example.com]\n")
	i, err := eventhandlers.NewEventHandler(t.Context(), reg, "acme", fc, cfg, nil)
	if err != nil {
		t.Fatalf("NewEventHandler: %v", err)
	}
	h, ok := i.(*acme)
	if !ok {
		t.Fatalf("NewEventHandler returned %T, want *acme", i)
	}
	t.Run("override runs", func(t *testing.T) {
		i.(eventhandlers.GrantEventHandler).AddGrant(&v1alpha1.Grant{})
		if len(h.grants) != 1 {
			t.Errorf("grants = %q, want one", h.grants)
		}
	})
	t.Run("dynamic resources and cache are reachable", func(t *testing.T) {
		r, ok := i.(eventhandlers.DynamicResourceRequester)
		if !ok {
			t.Fatal("embedding handler is not a DynamicResourceRequester")
		}
		if got := r.DynamicResources(); !slices.Equal(got, []schema.GroupVersionResource{widgets}) {
			t.Errorf("DynamicResources() = %v", got)
		}
		if h.Cache() != fc {
			t.Error("Cache() is not the cache given to the factory")
		}
	})
	t.Run("not in the global registry", func(t *testing.T) {
		if slices.Contains(eventhandlers.Names(), "acme") {
			t.Error("a private registry leaked into the global one")
		}
	})
}

// A vendor with settings of its own inlines Args and calls NewWithArgs.
func TestEmbeddingWithOwnConfig(t *testing.T) {
	type acmeArgs struct {
		defaulthandler.Args `yaml:",inline"`
		Pool                string `yaml:"pool"`
	}
	var args acmeArgs
	cfg := strings.NewReader("pool: acme\ndynamicResources: [widgets.v1alpha1.example.com]\n")
	if err := config.DecodeStrict(cfg, &args); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	h, err := defaulthandler.NewWithArgs(newFakeCache(t), args.Args)
	if err != nil {
		t.Fatalf("NewWithArgs: %v", err)
	}
	if args.Pool != "acme" || !slices.Equal(h.DynamicResources(), []schema.GroupVersionResource{widgets}) {
		t.Errorf("args = %+v, DynamicResources() = %v", args, h.DynamicResources())
	}
	t.Run("bad args", func(t *testing.T) {
		_, err := defaulthandler.NewWithArgs(newFakeCache(t), defaulthandler.Args{DynamicResources: []string{"x"}})
		if err == nil || !strings.Contains(err.Error(), "dynamicResources[0]") {
			t.Errorf("error = %v, want one naming dynamicResources[0]", err)
		}
	})
}

// A type that embeds the default handler inherits TakesPodRecords; it
// must answer false for that type (whose own AddPod may expect a
// *v1.Pod) and for another default handler, true for the handler itself.
func TestTakesPodRecordsOnlyForItself(t *testing.T) {
	h, err := defaulthandler.NewWithArgs(newFakeCache(t), defaulthandler.Args{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := defaulthandler.NewWithArgs(newFakeCache(t), defaulthandler.Args{})
	if err != nil {
		t.Fatal(err)
	}
	embedder := struct{ *defaulthandler.Handler }{h}
	var _ eventhandlers.PodRecordHandler = h
	for _, tc := range []struct {
		name       string
		registered eventhandlers.Interface
		want       bool
	}{
		{"itself", h, true},
		{"a type embedding it", embedder, false},
		{"another default handler", other, false},
	} {
		if got := h.TakesPodRecords(tc.registered); got != tc.want {
			t.Errorf("TakesPodRecords(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
