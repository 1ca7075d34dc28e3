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

package cache

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// fakeDiscovery serves the resources it was told to, and fails the first
// failures calls as an API server that does not answer.
type fakeDiscovery struct {
	mu       sync.Mutex
	served   map[string][]string // group version -> resources
	failures int
	calls    int
	// asked are the group versions asked since the last call of one
	// already asked (the last round, roughly).
	asked []string
}

func (d *fakeDiscovery) serve(gv string, resources ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.served[gv] = append(d.served[gv], resources...)
}

func (d *fakeDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if slices.Contains(d.asked, gv) {
		d.asked = nil
	}
	d.asked = append(d.asked, gv)
	if d.failures > 0 {
		d.failures--
		return nil, errors.New("connection refused")
	}
	rs, ok := d.served[gv]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	list := &metav1.APIResourceList{GroupVersion: gv}
	for _, r := range rs {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r, Kind: resourceKinds[r]},
			metav1.APIResource{Name: r + "/status", Kind: resourceKinds[r]})
	}
	return list, nil
}

// resourceKinds are the kinds of the fake discovery's resources.
var resourceKinds = map[string]string{"jobs": "Job", "rayclusters": "RayCluster", "podgroups": "PodGroup",
	"widgets": "Widget", "pytorchjobs": "PyTorchJob"}

// discoveringHandler asks for resources to be discovered and keeps the
// last object each dynamic event delivered.
type discoveringHandler struct {
	*recordingHandler
	resources []eventhandlers.DiscoveredResource
	mu        sync.Mutex
	last      map[string]*unstructured.Unstructured
}

var _ eventhandlers.DiscoveredResourceRequester = (*discoveringHandler)(nil)

func (h *discoveringHandler) DiscoveredResources() []eventhandlers.DiscoveredResource {
	return h.resources
}

func (h *discoveringHandler) AddDynamic(gvr schema.GroupVersionResource, obj any) {
	h.recordingHandler.AddDynamic(gvr, obj)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		h.mu.Lock()
		h.last[u.GetName()] = u
		h.mu.Unlock()
	}
}

func (h *discoveringHandler) object(name string) *unstructured.Unstructured {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last[name]
}

var (
	jobsGVR        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	rayGVR         = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
	nativeBetaGVR  = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
	nativeAlphaGVR = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha3", Resource: "podgroups"}
)

func object(apiVersion, kind, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     map[string]any{"big": "template"},
	}}
}

func registrationNames(c *SchedulerCache) []string {
	var names []string
	for _, r := range c.Dump().Handlers.Registrations {
		names = append(names, r.Name)
	}
	return names
}

// The resources a handler would like discovered are watched through the
// cache's own informer host: registered like the native informers (sync
// barrier, backlog probe, dispatch counts), with the handler's transform,
// only where served (one version of alternatives), the first discovery
// retried until the API server answers; a resource served later (a CRD
// installed after start-up) is picked up by rediscovery.
func TestDiscoveredResourcesThroughTheCache(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		jobsGVR: "JobList", rayGVR: "RayClusterList", nativeBetaGVR: "PodGroupList", nativeAlphaGVR: "PodGroupList", widgets: "WidgetList",
	}, object("batch/v1", "Job", "j1"), object("scheduling.k8s.io/v1beta1", "PodGroup", "pg1"), widget("w1"))
	disc := &fakeDiscovery{served: map[string][]string{
		"batch/v1": {"jobs"}, "scheduling.k8s.io/v1beta1": {"podgroups"}, "scheduling.k8s.io/v1alpha3": {"podgroups"},
		"example.com/v1": {"widgets"},
	}, failures: 2}
	c, _ := newTestCache(t, Options{Client: fake.NewClientset(), DynamicClient: dyn, Discovery: disc, RediscoveryPeriod: 20 * time.Millisecond})
	slim := func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			unstructured.RemoveNestedField(u.Object, "spec")
			u.SetLabels(map[string]string{"slimmed": "true"})
		}
		return obj, nil
	}
	h := &discoveringHandler{recordingHandler: newRecordingHandler(c), last: map[string]*unstructured.Unstructured{}, resources: []eventhandlers.DiscoveredResource{
		{GVR: nativeBetaGVR, FirstServedVersionOnly: true},
		{GVR: nativeAlphaGVR, FirstServedVersionOnly: true},
		{GVR: jobsGVR, Transform: slim},
		{GVR: rayGVR, Transform: slim},
		{GVR: widgets}, // also a dynamic resource: watched once
		{GVR: schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}}, // never served
	}}
	dh := &dynamicHandler{recordingHandler: h.recordingHandler, gvrs: []schema.GroupVersionResource{widgets}, running: make(chan struct{})}
	both := struct {
		*discoveringHandler
		eventhandlers.DynamicResourceRequester
	}{h, dh}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	mustNoErr(t, "Run", c.Run(ctx, both))
	if synced, unsynced := c.HandlersSynced(); synced || !slices.Contains(unsynced, "discovery") {
		t.Errorf("before the first discovery: synced %v, unsynced %v; want \"discovery\" among them", synced, unsynced)
	}
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))
	want := []string{"Node", "Pod", "jobs.v1.batch", "podgroups.v1beta1.scheduling.k8s.io", "widgets.v1.example.com"}
	got := registrationNames(c)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("registrations %v lack %s", got, w)
		}
	}
	if slices.Contains(got, "podgroups.v1alpha3.scheduling.k8s.io") || slices.Contains(got, "rayclusters.v1.ray.io") {
		t.Errorf("registrations %v: an alternative version or a resource not served is watched", got)
	}
	if n := strings.Count(strings.Join(got, ","), "widgets.v1.example.com"); n != 1 {
		t.Errorf("widgets registered %d times", n)
	}
	jobs := eventhandlers.DynamicResourceName(jobsGVR)
	waitFor(t, "job j1", func() bool { return h.has(jobs, informerhost.EventAdd, "default/j1") })
	if u := h.object("j1"); u == nil || u.GetLabels()["slimmed"] != "true" || u.Object["spec"] != nil {
		t.Errorf("the handler's transform did not run on j1: %v", u)
	}
	if !h.has(eventhandlers.DynamicResourceName(nativeBetaGVR), informerhost.EventAdd, "default/pg1") {
		t.Errorf("pg1 did not reach the handler")
	}

	// KubeRay is installed later: its CRD becomes served, and a
	// RayCluster appears.
	disc.serve("ray.io/v1", "rayclusters")
	_, err := dyn.Resource(rayGVR).Namespace("default").Create(ctx, object("ray.io/v1", "RayCluster", "rc1"), metav1.CreateOptions{})
	mustNoErr(t, "creating rc1", err)
	rays := eventhandlers.DynamicResourceName(rayGVR)
	waitFor(t, "rc1 through a rediscovered informer", func() bool { return h.has(rays, informerhost.EventAdd, "default/rc1") })
	if u := h.object("rc1"); u == nil || u.GetLabels()["slimmed"] != "true" {
		t.Errorf("the handler's transform did not run on rc1: %v", u)
	}
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(ctx))
	if !slices.Contains(registrationNames(c), string(rays)) {
		t.Errorf("registrations %v lack the rediscovered resource", registrationNames(c))
	}
	var backlog []string
	for _, b := range c.EventBacklog() {
		backlog = append(backlog, b.Informer)
	}
	if !slices.Contains(backlog, string(rays)) {
		t.Errorf("the backlog probe does not cover the rediscovered informer: %v", backlog)
	}
	counted := false
	for _, e := range c.Dump().Events {
		if e.Resource == string(rays) && e.Event == informerhost.EventAdd && e.Handled > 0 {
			counted = true
		}
	}
	if !counted {
		t.Errorf("the dispatcher did not count rc1's event: %+v", c.Dump().Events)
	}
	// Rediscovery keeps asking for what is not served yet, and only for
	// that, and never starts an informer twice.
	disc.mu.Lock()
	calls := disc.calls
	disc.mu.Unlock()
	waitFor(t, "more rediscoveries", func() bool {
		disc.mu.Lock()
		defer disc.mu.Unlock()
		return disc.calls > calls+2
	})
	if n := strings.Count(strings.Join(registrationNames(c), ","), string(rays)); n != 1 {
		t.Errorf("rayclusters registered %d times", n)
	}
	disc.mu.Lock()
	defer disc.mu.Unlock()
	if len(disc.asked) != 1 || disc.asked[0] != "kubeflow.org/v1" {
		t.Errorf("the last rediscovery asked for %v, want only kubeflow.org/v1", disc.asked)
	}
}

// Without a dynamic client the resources to discover are not watched and
// nothing waits for them.
func TestDiscoveryWithoutDynamicClient(t *testing.T) {
	c, _ := newTestCache(t, Options{Client: fake.NewClientset()})
	h := &discoveringHandler{recordingHandler: newRecordingHandler(c), resources: []eventhandlers.DiscoveredResource{{GVR: rayGVR}}}
	mustNoErr(t, "Run", c.Run(t.Context(), h))
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(t.Context()))
}

// A served resource the scheduler may not list is not watched (its
// informer would never sync and would hold the sync barrier forever)
// until the RBAC allows it; meanwhile no gang is inferred from its kind,
// whose owners could never be read.
func TestDiscoveredResourceForbidden(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{rayGVR: "RayClusterList"}, object("ray.io/v1", "RayCluster", "rc1"))
	var mu sync.Mutex
	forbidden := true
	dyn.PrependReactor("list", "rayclusters", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if forbidden {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "ray.io", Resource: "rayclusters"}, "", errors.New("RBAC: no"))
		}
		return false, nil, nil
	})
	disc := &fakeDiscovery{served: map[string][]string{"ray.io/v1": {"rayclusters"}}}
	c, _ := newTestCache(t, Options{Client: fake.NewClientset(), DynamicClient: dyn, Discovery: disc, RediscoveryPeriod: 20 * time.Millisecond})
	mustNoErr(t, "SetOwnerGangs", c.SetOwnerGangs(framework.AllOwnerKinds()))
	pod := st.MakePod().Namespace("default").Name("head").UID("head").ControlledBy("ray.io/v1", "RayCluster", "rc1", "u1").Obj()
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(pod))
	gang := framework.JobID{Namespace: "default", Name: "rc1", Gang: true, Owner: framework.GroupKindRayCluster}
	if _, ok := c.Job(gang); !ok {
		t.Fatal("before discovery the pod does not wait in its RayCluster's gang")
	}
	h := &discoveringHandler{recordingHandler: newRecordingHandler(c), last: map[string]*unstructured.Unstructured{},
		resources: []eventhandlers.DiscoveredResource{{GVR: rayGVR}}}
	mustNoErr(t, "Run", c.Run(t.Context(), h))
	mustNoErr(t, "WaitForHandlersSync", c.WaitForHandlersSync(t.Context()))
	rays := eventhandlers.DynamicResourceName(rayGVR)
	if slices.Contains(registrationNames(c), string(rays)) {
		t.Fatalf("a resource the scheduler may not list is watched: %v", registrationNames(c))
	}
	single := framework.JobID{Namespace: "default", Name: "head"}
	if _, ok := c.Job(single); !ok || c.JobIDForPod(pod) != single {
		t.Fatalf("with RayClusters unlistable the pod is not on its own (checker says %s)", c.JobIDForPod(pod))
	}
	mu.Lock()
	forbidden = false
	mu.Unlock()
	waitFor(t, "rc1 once allowed", func() bool { return h.has(rays, informerhost.EventAdd, "default/rc1") })
	if _, ok := c.Job(gang); !ok || c.JobIDForPod(pod) != gang {
		t.Fatalf("once RayClusters are watched the pod is not in its RayCluster's gang (checker says %s)", c.JobIDForPod(pod))
	}
	checkInvariants(t, c)
	checkOwnerIndex(t, c)
}
