// Package testutil builds what plugin tests need: NodeInfos as the
// scheduler cache builds them, and a framework.Handle over a fake API.
package testutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// NodeInfo returns the NodeInfo the scheduler cache builds for node with
// pods bound to it (their spec.nodeName is set to the node's name). It goes
// through a real cache, so Name, Requested and Pods are exactly what a
// scheduling cycle sees.
func NodeInfo(t testing.TB, node *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	t.Helper()
	c := newCache(t)
	if err := c.AddOrUpdateNode(node); err != nil {
		t.Fatalf("adding node %s: %v", node.Name, err)
	}
	addPods(t, c, node.Name, pods)
	ni, ok := c.NodeInfo(node.Name)
	if !ok {
		t.Fatalf("node %s missing from the cache", node.Name)
	}
	return ni
}

// PlaceholderNodeInfo returns the placeholder NodeInfo the cache keeps for
// pods bound to a node it does not know.
func PlaceholderNodeInfo(t testing.TB, name string, pods ...*v1.Pod) *framework.NodeInfo {
	t.Helper()
	if len(pods) == 0 {
		t.Fatal("a placeholder needs at least one pod")
	}
	c := newCache(t)
	addPods(t, c, name, pods)
	ni, ok := c.NodeInfo(name)
	if !ok || !ni.Placeholder {
		t.Fatalf("placeholder %s missing from the cache", name)
	}
	return ni
}

func newCache(t testing.TB) *cache.SchedulerCache {
	t.Helper()
	c, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatalf("creating cache: %v", err)
	}
	return c
}

func addPods(t testing.TB, c *cache.SchedulerCache, nodeName string, pods []*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		p = p.DeepCopy()
		p.Spec.NodeName = nodeName
		if err := c.AddPod(p); err != nil {
			t.Fatalf("adding pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
}

// Handle is a framework.Handle over a fake clientset.
type Handle struct {
	Client   *fake.Clientset
	Recorder *events.FakeRecorder
}

var _ framework.Handle = &Handle{}

// NewHandle returns a Handle whose fake clientset holds objs.
func NewHandle(objs ...runtime.Object) *Handle {
	return &Handle{Client: fake.NewClientset(objs...), Recorder: events.NewFakeRecorder(100)}
}

// ClientSet implements framework.Handle.
func (h *Handle) ClientSet() kubernetes.Interface { return h.Client }

// EventRecorder implements framework.Handle.
func (h *Handle) EventRecorder() events.EventRecorder { return h.Recorder }
