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

package cache_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// noWatchList makes a FakeControllerSource usable by a reflector, which
// would otherwise try the watch-list protocol it does not support.
type noWatchList struct{ *fcache.FakeControllerSource }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func externalWorkload(name, node, cpu string, phase v1alpha1.ExternalWorkloadPhase) *v1alpha1.ExternalWorkload {
	return &v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ExternalWorkloadSpec{NodeName: node, WorkloadKind: "vm",
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}},
		Status: v1alpha1.ExternalWorkloadStatus{Phase: phase},
	}
}

// ExternalWorkloads from a custom informer reach the real default handler
// through Run and shrink the node's idle capacity.
func TestExternalWorkloadCustomInformerWiring(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c, err := cache.New(cache.Options{Client: fake.NewClientset()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{})
	if err != nil {
		t.Fatal(err)
	}
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	src.Add(externalWorkload("vm1", "host", "3", v1alpha1.ExternalWorkloadRunning))
	inf := toolscache.NewSharedIndexInformer(noWatchList{src}, &v1alpha1.ExternalWorkload{}, 0, toolscache.Indexers{})
	if err := c.AddCustomInformer(cache.CustomInformer{Name: "vms", Resource: framework.ExternalWorkload, Informer: inf}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForHandlersSync(ctx); err != nil {
		t.Fatal(err)
	}
	// The usage arrived before its node: it waits on a placeholder.
	if ni, ok := c.NodeInfo("host"); !ok || !ni.Placeholder || ni.External.MilliCPU != 3000 {
		t.Fatalf("host before its node = %+v, %v", ni, ok)
	}
	if err := c.AddOrUpdateNode(st.MakeNode().Name("host").Capacity(res{"cpu": "8", "memory": "16Gi", "pods": "50"}).Obj()); err != nil {
		t.Fatal(err)
	}
	waitIdle := func(what string, want int64) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			idle, ok := nodeIdle(c, "host")
			return ok && idle.MilliCPU == want, nil
		})
		if err != nil {
			idle, ok := nodeIdle(c, "host")
			t.Fatalf("%s: idle cpu %d (%v), want %d", what, idle.MilliCPU, ok, want)
		}
	}
	waitIdle("after the node arrived", 5000)

	stoppedVM := externalWorkload("vm1", "host", "3", v1alpha1.ExternalWorkloadStopped)
	src.Modify(stoppedVM)
	waitIdle("after vm1 stopped", 8000)
	src.Add(externalWorkload("vm2", "host", "2", v1alpha1.ExternalWorkloadRunning))
	waitIdle("after vm2 was added", 6000)
	src.Delete(externalWorkload("vm2", "host", "2", v1alpha1.ExternalWorkloadRunning))
	waitIdle("after vm2 was deleted", 8000)

	d := c.Dump()
	for _, e := range d.Events {
		if e.Resource == string(framework.ExternalWorkload) && e.Event == "add" && e.Handled < 2 {
			t.Errorf("dispatch counts %+v, want 2 adds", e)
		}
	}
}

// A custom informer of ExternalWorkloads or Grants needs a handler that
// implements the optional interface; Run names what is missing.
func TestOptionalInterfaceMissing(t *testing.T) {
	for _, tt := range []struct {
		resource framework.EventResource
		want     string
	}{
		{framework.ExternalWorkload, "ExternalWorkloadEventHandler"},
		{framework.Grant, "GrantEventHandler"},
	} {
		t.Run(string(tt.resource), func(t *testing.T) {
			c, err := cache.New(cache.Options{Client: fake.NewClientset()})
			if err != nil {
				t.Fatal(err)
			}
			dh, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{})
			if err != nil {
				t.Fatal(err)
			}
			// Only the methods of Interface: the optional ones are hidden.
			h := struct{ eventhandlers.Interface }{dh}
			inf := toolscache.NewSharedIndexInformer(noWatchList{fcache.NewFakeControllerSource()}, &v1alpha1.ExternalWorkload{}, 0, toolscache.Indexers{})
			if err := c.AddCustomInformer(cache.CustomInformer{Name: "x", Resource: tt.resource, Informer: inf}); err != nil {
				t.Fatalf("AddCustomInformer: %v", err)
			}
			err = c.Run(t.Context(), h)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `"x"`) {
				t.Fatalf("Run: %v, want an error naming %s and the informer", err, tt.want)
			}
		})
	}
}

// nodeIdle returns what is idle on the named node, false for an unknown
// node or a placeholder.
func nodeIdle(c *cache.SchedulerCache, name string) (resources.Resource, bool) {
	n, ok := c.NodeInfo(name)
	if !ok || n.Placeholder {
		return resources.Resource{}, false
	}
	return n.Idle(), true
}

// Custom informers get what native ones get: the transform that strips
// managedFields and the last-applied annotation, and the node selector, so
// that usage on a node outside it creates no placeholder.
func TestCustomInformersGetTransformAndSelector(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	web := st.MakeNode().Name("web").Label("pool", "web").Capacity(res{"cpu": "8", "pods": "10"}).Obj()
	batch := st.MakeNode().Name("batch").Label("pool", "batch").Capacity(res{"cpu": "8", "pods": "10"}).Obj()
	client := fake.NewClientset(web, batch)
	c, err := cache.New(cache.Options{Client: client, NodeSelector: labels.SelectorFromSet(labels.Set{"pool": "batch"}),
		Resources: []framework.EventResource{}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{})
	if err != nil {
		t.Fatal(err)
	}
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	onWeb := externalWorkload("vm-web", "web", "3", v1alpha1.ExternalWorkloadRunning)
	onWeb.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "vm-manager", Operation: metav1.ManagedFieldsOperationApply}}
	onWeb.Annotations = map[string]string{informerhost.LastAppliedConfigAnnotation: `{"huge":"copy"}`, "keep": "me"}
	src.Add(onWeb)
	src.Add(externalWorkload("vm-batch", "batch", "2", v1alpha1.ExternalWorkloadRunning))
	inf := toolscache.NewSharedIndexInformer(noWatchList{src}, &v1alpha1.ExternalWorkload{}, 0, toolscache.Indexers{})
	if err := c.AddCustomInformer(cache.CustomInformer{Name: "vms", Resource: framework.ExternalWorkload, Informer: inf}); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForHandlersSync(ctx); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		idle, ok := nodeIdle(c, "batch")
		return ok && idle.MilliCPU == 6000 && len(c.Dump().OutsideSelector) == 1, nil
	})
	if err != nil {
		t.Fatalf("cache did not converge: %+v", c.Dump())
	}
	d := c.Dump()
	for _, n := range d.Nodes {
		if n.Placeholder {
			t.Errorf("placeholder %s for usage on a node outside the selector", n.Name)
		}
	}
	if aside := d.OutsideSelector[0]; aside.Name != "web" || aside.External.MilliCPU != 3000 {
		t.Errorf("kept aside = %+v, want vm-web's 3 cpu on web", aside)
	}
	stored, ok, err := inf.GetStore().GetByKey("vm-web")
	if err != nil || !ok {
		t.Fatalf("vm-web not in the informer's store: %v", err)
	}
	w := stored.(*v1alpha1.ExternalWorkload)
	if w.ManagedFields != nil || w.Annotations[informerhost.LastAppliedConfigAnnotation] != "" || w.Annotations["keep"] != "me" {
		t.Errorf("stored object = managedFields %v, annotations %v; want both stripped, other annotations kept", w.ManagedFields, w.Annotations)
	}
}
