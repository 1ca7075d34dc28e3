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

package dynamicresources

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const extGPU v1.ResourceName = "example.com/gpu"

// mappedClass is gpuClass mapping the extended resource name.
func mappedClass(name string) *resourceapi.DeviceClass {
	c := gpuClass()
	c.Spec.ExtendedResourceName = &name
	return c
}

// extPod returns a pod whose container asks for n of resource.
func extPod(name string, resource v1.ResourceName, n int) *v1.Pod {
	return st.MakePod().Namespace(ns).Name(name).UID("uid-" + name).
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", resource: fmt.Sprint(n)}).Obj()
}

// withGeneratedNames makes the fake clientset fill in generateName, as
// the API server does.
func withGeneratedNames(e *env) {
	n := 0
	e.h.Client.PrependReactor("create", "resourceclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c := a.(clienttesting.CreateAction).GetObject().(*resourceapi.ResourceClaim)
		if c.Name == "" && c.GenerateName != "" {
			n++
			c.Name = fmt.Sprintf("%s%d", c.GenerateName, n)
			c.UID = types.UID("uid-" + c.Name)
		}
		return false, nil, nil
	})
}

// inFlightDevices returns the devices of every allocation in flight.
func inFlightDevices(e *env) []string {
	var out []string
	for _, p := range e.pl.inFlight.list() {
		for _, r := range p.allocation.Devices.Results {
			out = append(out, r.Pool+"/"+r.Device)
		}
	}
	slices.Sort(out)
	return out
}

// TestExtendedMapping: an extended resource a DeviceClass maps, by its
// extendedResourceName or by the class's implicit name, is allocated
// from the class's devices on a node that does not list it, and
// NodeResourcesFit is told so; one no class maps is not the plugin's.
func TestExtendedMapping(t *testing.T) {
	for _, tt := range []struct {
		name     string
		class    *resourceapi.DeviceClass
		resource v1.ResourceName
		mapped   bool
	}{
		{"explicit name", mappedClass(string(extGPU)), extGPU, true},
		{"implicit name", gpuClass(), v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + "gpu"), true},
		{"explicit name of another class", mappedClass("example.com/other"), extGPU, false},
		{"no class maps it", gpuClass(), extGPU, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, []*v1.Node{gpuNode("n1")}, tt.class, slice("n1", 4))
			pod := extPod("p", tt.resource, 2)
			state := framework.NewCycleState()
			node, st := e.place(state, pod)
			got := pluginutil.DRAExtendedOf(state, pod)
			if !tt.mapped {
				if len(got) != 0 || len(e.pl.inFlight.list()) != 0 {
					t.Fatalf("unmapped resource: told Fit %v, in flight %v", got, inFlightDevices(e))
				}
				return
			}
			if node != "n1" {
				t.Fatalf("place = %q, %v; want n1", node, st)
			}
			if !got[tt.resource] {
				t.Errorf("NodeResourcesFit not told that %s is backed by DRA: %v", tt.resource, got)
			}
			if d := inFlightDevices(e); len(d) != 2 {
				t.Errorf("devices in flight = %v, want 2", d)
			}
		})
	}
}

// TestExtendedClassConflict: of two classes naming the same extended
// resource, the newer is used.
func TestExtendedClassConflict(t *testing.T) {
	older, newer := mappedClass(string(extGPU)), mappedClass(string(extGPU))
	older.Name, newer.Name = "b-older", "a-newer"
	older.CreationTimestamp = metav1.NewTime(time.Unix(100, 0))
	newer.CreationTimestamp = metav1.NewTime(time.Unix(200, 0))
	if got := classFor(extGPU, []*resourceapi.DeviceClass{newer, older}); got != newer {
		t.Errorf("classFor = %v, want the newer class", got.Name)
	}
	if got := classFor(extGPU, []*resourceapi.DeviceClass{older, newer}); got != newer {
		t.Errorf("classFor (other order) = %v, want the newer class", got.Name)
	}
	same := mappedClass(string(extGPU))
	same.Name, same.CreationTimestamp = "a-same", older.CreationTimestamp
	if got := classFor(extGPU, []*resourceapi.DeviceClass{older, same}); got != same {
		t.Errorf("classFor of equally old classes = %v, want the first by name", got.Name)
	}
}

// TestExtendedDevicePluginNode: a node that lists the resource in its
// allocatable serves it by its device plugin: nothing is allocated
// there; a node that does not list it gets devices.
func TestExtendedDevicePluginNode(t *testing.T) {
	dp := st.MakeNode().Name("dp").Capacity(map[v1.ResourceName]string{"cpu": "8", "pods": "110", extGPU: "4"}).Obj()
	e := newEnv(t, []*v1.Node{dp, gpuNode("dra")}, mappedClass(string(extGPU)), slice("dp", 4), slice("dra", 4))
	ctx := t.Context()
	pod := extPod("p", extGPU, 2)

	state := framework.NewCycleState()
	if st := e.pl.PreFilterPod(ctx, state, pod, e.nodes); !st.IsSuccess() {
		t.Fatalf("PreFilterPod = %v", st)
	}
	if st := e.pl.Filter(ctx, state, pod, e.nodes[0]); !st.IsSuccess() {
		t.Fatalf("Filter on the device plugin's node = %v", st)
	}
	if st := e.pl.Reserve(ctx, state, pod, "dp"); !st.IsSuccess() {
		t.Fatalf("Reserve on the device plugin's node = %v", st)
	}
	if d := inFlightDevices(e); len(d) != 0 {
		t.Fatalf("devices allocated on the device plugin's node: %v", d)
	}
	e.pl.Unreserve(ctx, state, pod, "dp")

	if st := e.pl.Filter(ctx, state, pod, e.nodes[1]); !st.IsSuccess() {
		t.Fatalf("Filter on the DRA node = %v", st)
	}
	if st := e.pl.Reserve(ctx, state, pod, "dra"); !st.IsSuccess() {
		t.Fatalf("Reserve on the DRA node = %v", st)
	}
	if d := inFlightDevices(e); !slices.Equal(d, []string{"dra/gpu-0", "dra/gpu-1"}) {
		t.Fatalf("devices in flight = %v, want two of node dra", d)
	}

	// With only device-plugin nodes there is nothing to allocate at all,
	// but Fit is still told the resource is DRA-backed.
	e.nodes = e.nodes[:1]
	state = framework.NewCycleState()
	if st := e.pl.PreFilterPod(ctx, state, extPod("q", extGPU, 1), e.nodes); !st.IsSkip() {
		t.Errorf("PreFilterPod with only device-plugin nodes = %v, want Skip", st)
	}
	if !pluginutil.DRAExtendedOf(state, extPod("q", extGPU, 1))[extGPU] {
		t.Errorf("Fit not told of the DRA-backed resource")
	}
}

// TestExtendedNotEnoughDevices: a node with too few devices rejects the
// pod, naming the resource.
func TestExtendedNotEnoughDevices(t *testing.T) {
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, mappedClass(string(extGPU)), slice("n1", 1))
	node, st := e.place(framework.NewCycleState(), extPod("p", extGPU, 2))
	if node != "" || st.Code() != framework.Unschedulable {
		t.Fatalf("place = %q, %v; want Unschedulable", node, st)
	}
	if want := ErrReasonCannotAllocateExtended + " " + string(extGPU); st.Message() != want {
		t.Errorf("message = %q, want %q", st.Message(), want)
	}
}

// TestExtendedGang: the pods of a gang each asking for devices, placed in
// one cycle, get distinct devices; the pod for which none are left gets
// none; undoing the cycle frees them all.
func TestExtendedGang(t *testing.T) {
	e := newEnv(t, []*v1.Node{gpuNode("n1"), gpuNode("n2")}, mappedClass(string(extGPU)), slice("n1", 4), slice("n2", 2))
	state := framework.NewCycleState()
	var pods []*v1.Pod
	for i := range 3 {
		pod := extPod(fmt.Sprintf("w%d", i), extGPU, 2)
		if node, st := e.place(state, pod); node == "" {
			t.Fatalf("pod %s found no node: %v", pod.Name, st)
		}
		pods = append(pods, pod)
	}
	d := inFlightDevices(e)
	if want := []string{"n1/gpu-0", "n1/gpu-1", "n1/gpu-2", "n1/gpu-3", "n2/gpu-0", "n2/gpu-1"}; !slices.Equal(d, want) {
		t.Fatalf("devices of the gang = %v, want each device once: %v", d, want)
	}
	if node, st := e.place(state, extPod("w3", extGPU, 1)); node != "" || st.Code() != framework.Unschedulable {
		t.Fatalf("fourth pod = %q, %v; want Unschedulable, every device is taken", node, st)
	}
	for _, pod := range pods {
		e.pl.Unreserve(t.Context(), state, pod, "")
	}
	if d := inFlightDevices(e); len(d) != 0 {
		t.Fatalf("devices in flight after Unreserve: %v", d)
	}
}

// TestExtendedBindAndUnreserve: Bind creates the pod's claim (owned by
// the pod, annotated, allocated and reserved for it) and names it in the
// pod's status; when the pod's binding fails, Unreserve deletes it.
func TestExtendedBindAndUnreserve(t *testing.T) {
	pod := extPod("p", extGPU, 2)
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, mappedClass(string(extGPU)), slice("n1", 4), pod)
	withGeneratedNames(e)
	ctx := t.Context()
	state := framework.NewCycleState()
	if node, st := e.place(state, pod); node != "n1" {
		t.Fatalf("place = %q, %v", node, st)
	}
	if st := e.pl.Bind(ctx, state, pod, "n1"); !st.IsSkip() {
		t.Fatalf("Bind = %v, want Skip", st)
	}
	claims, err := e.h.Client.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 {
		t.Fatalf("%d claims created, want 1", len(claims.Items))
	}
	c := &claims.Items[0]
	if !strings.HasPrefix(c.Name, "p-extended-resources-") || c.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" ||
		!metav1.IsControlledBy(c, pod) || !slices.Contains(c.Finalizers, resourceapi.Finalizer) {
		t.Errorf("claim %s: annotations %v, owners %v, finalizers %v", c.Name, c.Annotations, c.OwnerReferences, c.Finalizers)
	}
	if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 2 {
		t.Errorf("claim allocation = %+v, want 2 devices", c.Status.Allocation)
	}
	if len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].UID != pod.UID {
		t.Errorf("reservedFor = %+v, want the pod", c.Status.ReservedFor)
	}
	reqs := c.Spec.Devices.Requests
	if len(reqs) != 1 || reqs[0].Name != "container-0-request-1" || reqs[0].Exactly.Count != 2 || reqs[0].Exactly.DeviceClassName != "gpu" {
		t.Errorf("claim requests = %+v, want one of 2 devices of class gpu for the container", reqs)
	}
	got, err := e.h.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := &v1.PodExtendedResourceClaimStatus{ResourceClaimName: c.Name, RequestMappings: []v1.ContainerExtendedResourceRequest{
		{ContainerName: "main", ResourceName: string(extGPU), RequestName: "container-0-request-1"},
	}}
	if s := got.Status.ExtendedResourceClaimStatus; s == nil || s.ResourceClaimName != want.ResourceClaimName || !slices.Equal(s.RequestMappings, want.RequestMappings) {
		t.Errorf("pod's extendedResourceClaimStatus = %+v, want %+v", s, want)
	}
	// The allocation in flight now follows the created claim.
	if l := e.pl.inFlight.list(); len(l) != 1 || l[0].uid != c.UID || l[0].name != c.Name {
		t.Errorf("in flight = %+v, want the created claim", l)
	}

	e.pl.Unreserve(ctx, state, pod, "n1")
	if _, err := e.h.Client.ResourceV1().ResourceClaims(ns).Get(ctx, c.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after Unreserve, the created claim: err %v, want it deleted", err)
	}
	if d := inFlightDevices(e); len(d) != 0 {
		t.Errorf("devices in flight after Unreserve: %v", d)
	}
}

// TestExtendedStaleClaim: a claim an earlier attempt left behind keeps
// the pod waiting while it is deleted; its deletion retries the pod.
func TestExtendedStaleClaim(t *testing.T) {
	pod := extPod("p", extGPU, 1)
	stale := claim("p-extended-resources-old", "gpu", 1)
	stale.Annotations = map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true"}
	stale.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	stale.Finalizers = []string{resourceapi.Finalizer}
	e := newEnv(t, []*v1.Node{gpuNode("n1")}, mappedClass(string(extGPU)), slice("n1", 4), pod, stale)
	ctx := t.Context()
	node, st := e.place(framework.NewCycleState(), pod)
	if node != "" || st.Code() != framework.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), `"p-extended-resources-old"`) {
		t.Fatalf("place = %q, %v; want a wait naming the stale claim", node, st)
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := e.h.Client.ResourceV1().ResourceClaims(ns).Get(ctx, stale.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the stale claim was not deleted: %v", err)
	}
	job := &framework.QueuedJob{Pods: []*v1.Pod{pod}}
	if h, err := claimHint(klog.Background(), job, stale, nil); err != nil || h != framework.Queue {
		t.Errorf("hint for the stale claim's deletion = %v, %v; want Queue", h, err)
	}
	other := &framework.QueuedJob{Pods: []*v1.Pod{extPod("q", extGPU, 1)}}
	if h, _ := claimHint(klog.Background(), other, stale, nil); h != framework.QueueSkip {
		t.Errorf("hint for another pod's claim's deletion = %v, want QueueSkip", h)
	}
}

// TestDeviceRequests: one request per container and resource; a plain
// init container uses the devices of the containers started after it,
// and the init containers share the largest request of their own.
func TestDeviceRequests(t *testing.T) {
	req := func(n string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: st.MakePod().Req(map[v1.ResourceName]string{
			v1.ResourceCPU: "1", extGPU: n}).Obj().Spec.Containers[0].Resources.Requests}
	}
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "init-a", Resources: req("3")},                       // 0: 1 from the sidecar and main's 1, 1 own
			{Name: "side", Resources: req("1"), RestartPolicy: &always}, // 1
			{Name: "init-b", Resources: req("4")},                       // 2: main's 1, 3 own
		},
		Containers: []v1.Container{
			{Name: "main", Resources: req("1")}, // 3
			{Name: "none"},                      // 4: asks for nothing
		},
	}}
	reqs, maps := deviceRequests(pod, extGPU, "gpu")
	var gotReqs []string
	for _, r := range reqs {
		gotReqs = append(gotReqs, fmt.Sprintf("%s=%d", r.Name, r.Exactly.Count))
	}
	if want := []string{"container-2-request-1=3", "container-1-request-1=1", "container-3-request-1=1"}; !slices.Equal(gotReqs, want) {
		t.Errorf("requests = %v, want %v", gotReqs, want)
	}
	var gotMaps []string
	for _, m := range maps {
		gotMaps = append(gotMaps, m.ContainerName+"->"+m.RequestName)
	}
	want := []string{
		"side->container-1-request-1", "main->container-3-request-1",
		"init-a->container-1-request-1", "init-a->container-3-request-1", "init-a->container-2-request-1",
		"init-b->container-3-request-1", "init-b->container-2-request-1",
	}
	if !slices.Equal(gotMaps, want) {
		t.Errorf("mappings = %v, want %v", gotMaps, want)
	}
}
