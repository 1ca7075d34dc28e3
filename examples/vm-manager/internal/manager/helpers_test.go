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

package manager

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fixture is a manager over indexers the test fills directly.
type fixture struct {
	m      *Manager
	nodes  cache.Indexer
	pods   cache.Indexer
	grants cache.Store
	store  *resourcemanager.Store
	reg    *prometheus.Registry
	clock  *clocktesting.FakeClock
	// cfg is the Config the manager was made with.
	cfg Config
}

// fixtureOpt changes the Config of a fixture's manager before New.
type fixtureOpt func(*fixture, *Config)

// newFixture returns a manager in hybrid mode, or in two-level mode for
// framework if it is not empty, changed by opts.
func newFixture(t *testing.T, framework string, opts ...fixtureOpt) *fixture {
	t.Helper()
	f := &fixture{
		nodes: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
		pods:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, PodIndexers()),
		reg:   prometheus.NewRegistry(),
		clock: clocktesting.NewFakeClock(t0),
	}
	f.store = newStore(t)
	metrics, err := NewMetrics(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Framework: framework,
		Nodes:     corelisters.NewNodeLister(f.nodes),
		Pods:      f.pods,
		Store:     f.store,
		Metrics:   metrics,
		Clock:     f.clock,
		// Long enough that a test sees only what a Kick does.
		RetryInterval: time.Hour,
	}
	if framework != "" {
		f.grants = cache.NewStore(cache.MetaNamespaceKeyFunc)
		cfg.Grants = f.grants
	}
	for _, o := range opts {
		o(f, &cfg)
	}
	f.cfg = cfg
	if f.m, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// newStore returns an empty ExternalWorkload store, closed when the test
// ends.
func newStore(t *testing.T) *resourcemanager.Store {
	t.Helper()
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind:       v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:               v1alpha1.ExternalWorkloadsResource,
		Example:                &v1alpha1.ExternalWorkload{},
		InitialResourceVersion: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return store
}

// restart returns a new manager with the same Config but a new, empty
// ExternalWorkload store and registry, as a manager process started
// again after the last one died: only what its State saved survives.
func (f *fixture) restart(t *testing.T) (*Manager, error) {
	t.Helper()
	cfg := f.cfg
	f.store = newStore(t)
	cfg.Store = f.store
	f.reg = prometheus.NewRegistry()
	metrics, err := NewMetrics(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics = metrics
	m, err := New(cfg)
	if err == nil {
		f.m = m
	}
	return m, err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// nodeOpt changes a test node.
type nodeOpt func(*v1.Node)

func unschedulable(n *v1.Node) { n.Spec.Unschedulable = true }

func notReady(n *v1.Node) { n.Status.Conditions[0].Status = v1.ConditionFalse }

// labeled sets the label key=value on a test node.
func labeled(key, value string) nodeOpt {
	return func(n *v1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[key] = value
	}
}

func makeNode(name, cpu, memory string, opts ...nodeOpt) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{
				v1.ResourceCPU:    resource.MustParse(cpu),
				v1.ResourceMemory: resource.MustParse(memory),
				v1.ResourcePods:   resource.MustParse("110"),
			},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func makePod(name, node, cpu, memory string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1.PodSpec{
			NodeName: node,
			Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU:    resource.MustParse(cpu),
				v1.ResourceMemory: resource.MustParse(memory),
			}}}},
		},
		Status: v1.PodStatus{Phase: phase},
	}
}

func makeGrant(name, framework, node, cpu, memory string, phase v1alpha1.GrantPhase, expires *time.Time) *v1alpha1.Grant {
	g := &v1alpha1.Grant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.GrantSpec{
			Framework: framework,
			NodeName:  node,
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)},
			Issuer:    "test",
		},
		Status: v1alpha1.GrantStatus{Phase: phase},
	}
	if expires != nil {
		t := metav1.NewTime(*expires)
		g.Spec.ExpiresAt = &t
	}
	return g
}

func (f *fixture) addNodes(t *testing.T, nodes ...*v1.Node) {
	t.Helper()
	for _, n := range nodes {
		must(t, f.nodes.Add(n))
	}
}

func (f *fixture) addPods(t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		must(t, f.pods.Add(p))
	}
}

func (f *fixture) setGrants(t *testing.T, grants ...*v1alpha1.Grant) {
	t.Helper()
	for _, g := range grants {
		must(t, f.grants.Update(g))
	}
}

// published returns the node of the ExternalWorkload of VM name, and
// whether there is one.
func (f *fixture) published(t *testing.T, name string) (string, bool) {
	t.Helper()
	obj, ok := f.store.Get("", name)
	if !ok {
		return "", false
	}
	w := obj.(*v1alpha1.ExternalWorkload)
	if w.Spec.WorkloadKind != WorkloadKind || w.Status.Phase != v1alpha1.ExternalWorkloadRunning || w.Spec.Owner != DefaultOwner {
		t.Errorf("ExternalWorkload %s: kind %q, phase %q, owner %q; want %q, Running, %q",
			name, w.Spec.WorkloadKind, w.Status.Phase, w.Spec.Owner, WorkloadKind, DefaultOwner)
	}
	return w.Spec.NodeName, true
}
