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

package twolevel

import (
	"context"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type res = map[v1.ResourceName]string

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// recordingCache is the real cache, recording the events raised.
type recordingCache struct {
	*cache.SchedulerCache
	mu     sync.Mutex
	raised []*framework.NodeCapChange
}

func (r *recordingCache) MoveAllToActiveOrBackoffQueue(e framework.ClusterEvent, oldObj, newObj any) {
	if e == framework.EventGrantIncrease {
		r.mu.Lock()
		r.raised = append(r.raised, newObj.(*framework.NodeCapChange))
		r.mu.Unlock()
	}
	r.SchedulerCache.MoveAllToActiveOrBackoffQueue(e, oldObj, newObj)
}

func (r *recordingCache) takeRaised() []*framework.NodeCapChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.raised
	r.raised = nil
	return out
}

func setup(t *testing.T, opts ...Option) (*Handler, *recordingCache, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(epoch)
	c, err := cache.New(cache.Options{SchedulerNames: []string{"batch"}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	rc := &recordingCache{SchedulerCache: c}
	h, err := New(rc, Args{Framework: "batch"}, append([]Option{WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"n1", "n2"} {
		h.AddNode(st.MakeNode().Name(n).Capacity(res{"cpu": "16", "memory": "64Gi", "pods": "110"}).Obj())
	}
	return h, rc, clk
}

func mkGrant(name, fw, node, cpu string) *v1alpha1.Grant {
	return &v1alpha1.Grant{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: v1alpha1.GrantSpec{Framework: fw, NodeName: node, Issuer: "allocator",
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("8Gi")}},
		Status: v1alpha1.GrantStatus{Phase: v1alpha1.GrantActive},
	}
}

// capOf is the node's cap in the cache: -1 for uncapped, else millicores.
func capOf(t *testing.T, c *recordingCache, node string) int64 {
	t.Helper()
	info, ok := c.NodeInfo(node)
	if !ok {
		t.Fatalf("node %s not in the cache", node)
	}
	if info.Cap == nil {
		return -1
	}
	return info.Cap.MilliCPU
}

func TestGrantsCapNodes(t *testing.T) {
	h, c, _ := setup(t)
	if got := capOf(t, c, "n1"); got != 0 {
		t.Fatalf("n1 cap before any grant = %d, want 0 (no grant)", got)
	}
	h.AddGrant(mkGrant("batch.n1", "batch", "n1", "4"))
	h.AddGrant(mkGrant("other.n1", "other", "n1", "8"))
	if got := capOf(t, c, "n1"); got != 4000 {
		t.Errorf("n1 cap = %dm, want 4000m (the other framework's grant is not ours)", got)
	}
	raised := c.takeRaised()
	if len(raised) != 1 || raised[0].NodeName != "n1" || raised[0].New.MilliCPU != 4000 || raised[0].Old == nil || !raised[0].Old.IsZero() {
		t.Errorf("raised %+v, want one GrantIncrease on n1 from no grant to 4 cpu", raised)
	}
	// A second grant on the same node adds up.
	h.AddGrant(mkGrant("batch.n1.extra", "batch", "n1", "2"))
	if got := capOf(t, c, "n1"); got != 6000 {
		t.Errorf("n1 cap = %dm, want 6000m", got)
	}
	// A shrink raises nothing.
	c.takeRaised()
	shrunk := mkGrant("batch.n1", "batch", "n1", "1")
	h.UpdateGrant(mkGrant("batch.n1", "batch", "n1", "4"), shrunk)
	if got, raised := capOf(t, c, "n1"), c.takeRaised(); got != 3000 || len(raised) != 0 {
		t.Errorf("after a shrink: cap %dm, raised %v; want 3000m and nothing", got, raised)
	}
	// Revoked counts as zero; a deleted grant too (through a tombstone).
	revoked := shrunk.DeepCopy()
	revoked.Status.Phase = v1alpha1.GrantRevoked
	h.UpdateGrant(shrunk, revoked)
	if got := capOf(t, c, "n1"); got != 2000 {
		t.Errorf("after a revocation: cap %dm, want 2000m", got)
	}
	h.DeleteGrant(toolscache.DeletedFinalStateUnknown{Key: "batch.n1.extra", Obj: mkGrant("batch.n1.extra", "batch", "n1", "2")})
	if got := capOf(t, c, "n1"); got != 0 {
		t.Errorf("after deleting the last live grant: cap %dm, want 0 (no grant)", got)
	}
	// A grant that moves to another framework is no longer ours.
	h.AddGrant(mkGrant("g", "batch", "n2", "4"))
	h.UpdateGrant(mkGrant("g", "batch", "n2", "4"), mkGrant("g", "other", "n2", "4"))
	if got := capOf(t, c, "n2"); got != 0 {
		t.Errorf("after the grant went to another framework: cap %dm, want 0", got)
	}
}

func TestInvalidGrantsCountAsZero(t *testing.T) {
	h, c, _ := setup(t)
	h.AddGrant(mkGrant("g", "batch", "n1", "4"))
	bad := mkGrant("g", "batch", "n1", "4")
	bad.Spec.Resources[v1.ResourceCPU] = resource.MustParse("-2")
	h.UpdateGrant(mkGrant("g", "batch", "n1", "4"), bad)
	if got := capOf(t, c, "n1"); got != 0 {
		t.Errorf("cap after an invalid update = %dm, want 0", got)
	}
	h.AddGrant("not a grant")
	h.AddGrant((*v1alpha1.Grant)(nil))
	h.DeleteGrant(toolscache.DeletedFinalStateUnknown{Key: "x", Obj: 42})
}

func TestGrantsExpireOnATimer(t *testing.T) {
	h, c, clk := setup(t)
	g := mkGrant("g", "batch", "n1", "4")
	g.Spec.ExpiresAt = &metav1.Time{Time: epoch.Add(time.Minute)}
	h.AddGrant(g)
	if got := capOf(t, c, "n1"); got != 4000 {
		t.Fatalf("cap = %dm, want 4000m", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	// Step until the timer fires; the check ticker is armed too.
	deadline := time.Now().Add(10 * time.Second)
	for capOf(t, c, "n1") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the grant did not expire 61 s after its expiry on the fake clock")
		}
		if clk.HasWaiters() {
			clk.Step(61 * time.Second)
		}
		time.Sleep(time.Millisecond)
	}
	// An already expired grant never counts.
	h.AddGrant(g)
	if got := capOf(t, c, "n1"); got != 0 {
		t.Errorf("cap after re-adding an expired grant = %dm, want 0", got)
	}
	cancel()
	<-done
}

func TestArgs(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"evictOnRevoke: true\n", "framework: required"},
		{"framework: Batch_1\n", `framework "Batch_1"`},
		{"framework: batch\nframwork: x\n", "framwork"},
		{"framework: batch\ndynamicResources: [nope]\n", "nope"},
	}
	for _, tt := range tests {
		c, err := cache.New(cache.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Factory(t.Context(), c, strings.NewReader(tt.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Factory(%q) error = %v, want one naming %q", tt.yaml, err, tt.want)
		}
	}
	c, _ := cache.New(cache.Options{})
	h, err := Factory(t.Context(), c, strings.NewReader("framework: batch\nevictOnRevoke: true\ndynamicResources: []\n"), nil)
	if err != nil || h.(*Handler).Framework() != "batch" || !h.(*Handler).evict {
		t.Errorf("Factory = %v, %v; want a handler for framework batch that evicts", h, err)
	}
}

// Pods above a shrunken grant are evicted lowest priority first, the
// newest first among equals, and only as many as needed.
func TestEvictOnRevoke(t *testing.T) {
	client := fake.NewClientset()
	var mu sync.Mutex
	var evicted []string
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		evicted = append(evicted, a.(k8stesting.CreateAction).GetObject().(interface{ GetName() string }).GetName())
		return true, nil, nil
	})
	h, c, clk := setup(t, WithClient(client), WithCheckInterval(10*time.Millisecond))
	h.evict = true
	h.AddGrant(mkGrant("g", "batch", "n1", "8"))
	prio := func(p int32) *int32 { return &p }
	mk := func(name string, p int32, age time.Duration) *v1.Pod {
		pod := st.MakePod().Name(name).Node("n1").Scheduler("batch").Req(res{"cpu": "2", "memory": "1Gi"}).Obj()
		pod.Spec.Priority = prio(p)
		pod.CreationTimestamp = metav1.NewTime(epoch.Add(-age))
		return pod
	}
	for _, p := range []*v1.Pod{mk("high", 100, time.Hour), mk("low-old", 0, time.Hour), mk("low-new", 0, time.Minute), mk("mid", 50, time.Hour)} {
		if err := c.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	// 8 cpu in use; the grant shrinks to 5: two pods must go.
	h.UpdateGrant(mkGrant("g", "batch", "n1", "8"), mkGrant("g", "batch", "n1", "5"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go h.Run(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(evicted)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		if clk.HasWaiters() {
			clk.Step(10 * time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(evicted, ",") != "low-new,low-old" {
		t.Errorf("evicted %v, want low-new then low-old and nothing else", evicted)
	}
}

// The configuration API types the handler's args under the name it
// registers; the factory takes the args Parse typed.
func TestArgsFromTheFile(t *testing.T) {
	if !config.HasTypedHandlerArgs(Name) {
		t.Fatalf("pkg/config has no typed args for handler %q", Name)
	}
	f, err := config.Parse("c.yaml", []byte("apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\neventHandlers:\n- name: two-level\n  args: {framework: batch, evictOnRevoke: true, dynamicResources: [w.v1.example.com]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Factory(t.Context(), c, f.HandlerArgs(Name), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.(*Handler); got.Framework() != "batch" || !got.evict || len(got.DynamicResources()) != 1 {
		t.Errorf("handler = framework %q, evict %v, dynamic resources %v", got.Framework(), got.evict, got.DynamicResources())
	}
}
