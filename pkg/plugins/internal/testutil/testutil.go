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

// Package testutil builds what plugin tests need: NodeInfos as the
// scheduler cache accounts them, and a framework.Handle over a fake API.
package testutil

import (
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// NodeInfo returns the NodeInfo of node with pods bound to it (their
// spec.nodeName is set to the node's name), accounted as the cache
// accounts them (framework.NewNodeInfo).
func NodeInfo(t testing.TB, node *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	t.Helper()
	return framework.NewNodeInfo(node, boundTo(node.Name, pods)...)
}

// PlaceholderNodeInfo returns the placeholder NodeInfo the cache keeps for
// pods bound to a node it does not know.
func PlaceholderNodeInfo(t testing.TB, name string, pods ...*v1.Pod) *framework.NodeInfo {
	t.Helper()
	if len(pods) == 0 {
		t.Fatal("a placeholder needs at least one pod")
	}
	ni := framework.NewPlaceholderNodeInfo(name)
	for _, p := range boundTo(name, pods) {
		ni.AddPod(p)
	}
	return ni
}

func boundTo(nodeName string, pods []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		p = p.DeepCopy()
		p.Spec.NodeName = nodeName
		out[i] = p
	}
	return out
}

// Handle is a framework.Handle over a fake clientset.
type Handle struct {
	Client   *fake.Clientset
	Recorder *events.FakeRecorder

	once    sync.Once
	factory informers.SharedInformerFactory
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

// RESTConfig implements framework.RESTConfigProvider: a configuration of
// an API server nothing listens on, for plugins that build clients of
// their own when they are built (NodeLedger); unit tests give them fakes.
func (h *Handle) RESTConfig() *rest.Config { return &rest.Config{Host: "https://127.0.0.1:1"} }

// SharedInformerFactory implements framework.Handle: a factory over the
// fake clientset, made on first use. A test that reads listers starts it
// and waits for its sync.
func (h *Handle) SharedInformerFactory() informers.SharedInformerFactory {
	h.once.Do(func() { h.factory = informers.NewSharedInformerFactory(h.Client, 0) })
	return h.factory
}

// NewSyncedPlugin builds a plugin with factory over a Handle whose fake
// clientset holds objs, then starts the informers the plugin asked the
// Handle's factory for and waits until they have synced (they stop with
// the test). It returns the plugin and the Handle.
func NewSyncedPlugin(t *testing.T, factory framework.PluginFactory, objs ...runtime.Object) (framework.Plugin, *Handle) {
	t.Helper()
	h := NewHandle(objs...)
	p, err := factory(t.Context(), nil, h)
	if err != nil {
		t.Fatalf("building the plugin: %v", err)
	}
	h.SharedInformerFactory().Start(t.Context().Done())
	for typ, synced := range h.SharedInformerFactory().WaitForCacheSync(t.Context().Done()) {
		if !synced {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	return p, h
}
