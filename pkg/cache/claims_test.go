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
	"bytes"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
)

const gpuClass = "gpu.example.com"

// implicitGPU is the implicit resource name of gpuClass's devices.
const implicitGPU = v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + gpuClass)

func exactly(name, class string, mode resourceapi.DeviceAllocationMode, count int64) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: mode, Count: count}}
}

func claimSpec(reqs ...resourceapi.DeviceRequest) resourceapi.ResourceClaimSpec {
	return resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: reqs}}
}

// allocation holds one device result per request name listed.
func allocation(requests ...string) *resourceapi.AllocationResult {
	a := &resourceapi.AllocationResult{}
	for i, r := range requests {
		a.Devices.Results = append(a.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: r, Driver: "gpu.example.com", Pool: "p", Device: "gpu-" + string(rune('0'+i))})
	}
	return a
}

// Every request shape counts as documented in claims.go, under the
// class's extended resource name when it has one, and a request that
// cannot be counted is left out with a reason, without a panic.
func TestClaimSpecDevices(t *testing.T) {
	names := map[string]v1.ResourceName{"mapped.example.com": "example.com/gpu"}
	nameOf := func(class string) v1.ResourceName { return deviceResourceName(class, names) }
	tests := []struct {
		name     string
		spec     resourceapi.ResourceClaimSpec
		alloc    *resourceapi.AllocationResult
		want     map[v1.ResourceName]int64
		problems []string
	}{
		{name: "exactly, count unset: one device", spec: claimSpec(exactly("r", gpuClass, "", 0)),
			want: map[v1.ResourceName]int64{implicitGPU: 1}},
		{name: "exactly, ExactCount 3", spec: claimSpec(exactly("r", gpuClass, resourceapi.DeviceAllocationModeExactCount, 3)),
			want: map[v1.ResourceName]int64{implicitGPU: 3}},
		{name: "the class's extendedResourceName", spec: claimSpec(exactly("r", "mapped.example.com", "", 2)),
			want: map[v1.ResourceName]int64{"example.com/gpu": 2}},
		{name: "two requests of one class add up, another class apart",
			spec: claimSpec(exactly("a", gpuClass, "", 1), exactly("b", gpuClass, "", 2), exactly("c", "mapped.example.com", "", 1)),
			want: map[v1.ResourceName]int64{implicitGPU: 3, "example.com/gpu": 1}},
		{name: "All, not allocated: nothing", spec: claimSpec(exactly("r", gpuClass, resourceapi.DeviceAllocationModeAll, 0))},
		{name: "All, allocated: the devices allocated for the request",
			spec:  claimSpec(exactly("r", gpuClass, resourceapi.DeviceAllocationModeAll, 0), exactly("s", gpuClass, "", 1)),
			alloc: allocation("r", "r", "r", "s"), want: map[v1.ResourceName]int64{implicitGPU: 4}},
		{name: "firstAvailable: the first sub-request",
			spec: claimSpec(resourceapi.DeviceRequest{Name: "r", FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "big", DeviceClassName: "mapped.example.com", Count: 2},
				{Name: "small", DeviceClassName: gpuClass, Count: 1},
			}}),
			want: map[v1.ResourceName]int64{"example.com/gpu": 2}},
		{name: "firstAvailable, All: the devices allocated for the first sub-request",
			spec: claimSpec(resourceapi.DeviceRequest{Name: "r", FirstAvailable: []resourceapi.DeviceSubRequest{
				{Name: "all", DeviceClassName: gpuClass, AllocationMode: resourceapi.DeviceAllocationModeAll},
			}}),
			alloc: allocation("r/all", "r/all", "other"), want: map[v1.ResourceName]int64{implicitGPU: 2}},
		{name: "no class", spec: claimSpec(exactly("r", "", "", 1), exactly("ok", gpuClass, "", 1)),
			want: map[v1.ResourceName]int64{implicitGPU: 1}, problems: []string{`request "r" names no device class`}},
		{name: "a negative count", spec: claimSpec(exactly("r", gpuClass, "", -2)),
			problems: []string{`request "r" asks for a negative count -2`}},
		{name: "an unknown mode", spec: claimSpec(exactly("r", gpuClass, "Some", 1)),
			problems: []string{`request "r" has an unknown allocation mode "Some"`}},
		{name: "neither exactly nor firstAvailable", spec: claimSpec(resourceapi.DeviceRequest{Name: "r"}),
			problems: []string{`request "r" has neither exactly nor firstAvailable`}},
		{name: "firstAvailable without a class", spec: claimSpec(resourceapi.DeviceRequest{Name: "r",
			FirstAvailable: []resourceapi.DeviceSubRequest{{Name: "x"}}}),
			problems: []string{`request "r" names no device class`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out resources.Resource
			problems := claimSpecDevices(&tt.spec, tt.alloc, nameOf, &out)
			if !maps.Equal(out.Scalar, tt.want) {
				t.Errorf("devices = %v, want %v", out.Scalar, tt.want)
			}
			if !slices.Equal(problems, tt.problems) {
				t.Errorf("problems = %q, want %q", problems, tt.problems)
			}
			if out.MilliCPU != 0 || out.Memory != 0 || out.Pods != 0 {
				t.Errorf("devices count more than devices: %v", out)
			}
		})
	}
}

// passedOn is the event handler behind the claim observer in tests; it
// counts the events passed on.
type passedOn struct{ events int }

func (h *passedOn) OnAdd(any, bool)   { h.events++ }
func (h *passedOn) OnUpdate(any, any) { h.events++ }
func (h *passedOn) OnDelete(any)      { h.events++ }
func (h *passedOn) observed() int     { return h.events }

func observe(c *SchedulerCache, r framework.EventResource, next *passedOn) toolscache.ResourceEventHandler {
	return c.claimObserver(r, next)
}

func gpuTemplate(ns, name string, count int64) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claimSpec(exactly("gpu", gpuClass, "", count))}}
}

// templatePod is a pod of queue q asking for cpu whose claim "gpu" comes
// from template.
func templatePod(name, q, cpu, template string) *v1.Pod {
	p := queuedPod(name, q, cpu)
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(template)}}
	return p
}

func queueAmounts(t *testing.T, c *SchedulerCache, q string) (allocated, pending framework.ResourceAmounts) {
	t.Helper()
	s := c.TenantQueueSnapshot().Queues[q]
	if s == nil {
		t.Fatalf("queue %s missing from the snapshot", q)
	}
	return s.Allocated, s.Pending
}

func claimDevicesOf(c *SchedulerCache, uid types.UID) map[v1.ResourceName]int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.tasks[uid].ClaimDevices
}

// A queue's usage includes the devices of its pods' claims: counted from
// a template that arrives after the pod (zero until then), from the claim
// made from it once the pod's status names it, under the class's
// extendedResourceName once it has one; pending, assumed, bound and gone
// alike. Node accounting never counts them.
func TestQueueUsageCountsClaimDevices(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "8")))
	c.SetTenantQueue(tenancy.SourceOwn, "a", queueSpec("a", "", 1))
	next := &passedOn{}
	templates := observe(c, framework.ResourceClaimTemplate, next)
	claims := observe(c, framework.ResourceClaim, next)
	classes := observe(c, framework.DeviceClass, next)
	check := func(step string, wantAlloc, wantPending framework.ResourceAmounts) {
		t.Helper()
		checkInvariants(t, c)
		alloc, pending := queueAmounts(t, c, "a")
		if !maps.Equal(alloc, wantAlloc) || !maps.Equal(pending, wantPending) {
			t.Errorf("%s: allocated %v, pending %v; want %v, %v", step, alloc, pending, wantAlloc, wantPending)
		}
	}
	cpuAnd := func(cpu int64, name v1.ResourceName, n int64) framework.ResourceAmounts {
		a := framework.ResourceAmounts{v1.ResourceCPU: cpu}
		if n > 0 {
			a[name] = n
		}
		return a
	}

	p := templatePod("p", "a", "1", "gpus")
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	check("template not there yet", framework.ResourceAmounts{}, cpuAnd(1000, "", 0))

	templates.OnAdd(gpuTemplate("default", "gpus", 2), false)
	check("template arrived", framework.ResourceAmounts{}, cpuAnd(1000, implicitGPU, 2))
	if job, _ := c.CycleJob(framework.JobID{Namespace: "default", Name: "p"}); job == nil || job.ClaimDevices[p.UID].Scalar[implicitGPU] != 2 {
		t.Errorf("the cycle's job does not carry the pod's claim devices: %+v", job)
	}
	templates.OnUpdate(nil, gpuTemplate("default", "gpus", 3))
	check("template changed", framework.ResourceAmounts{}, cpuAnd(1000, implicitGPU, 3))
	// Another namespace's template of the same name changes nothing.
	templates.OnAdd(gpuTemplate("other", "gpus", 7), false)
	check("another namespace's template", framework.ResourceAmounts{}, cpuAnd(1000, implicitGPU, 3))

	mustNoErr(t, "AssumePod", c.AssumePod(p, "n1"))
	check("assumed", cpuAnd(1000, implicitGPU, 3), framework.ResourceAmounts{})

	// The claim made from the template, allocated (All mode: 4 devices),
	// and named in the bound pod's status: counted from it.
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p-gpu-x"},
		Spec: claimSpec(exactly("gpu", gpuClass, resourceapi.DeviceAllocationModeAll, 0))}
	claim.Status.Allocation = allocation("gpu", "gpu", "gpu", "gpu")
	claims.OnAdd(claim, false)
	check("claim made, not yet named", cpuAnd(1000, implicitGPU, 3), framework.ResourceAmounts{})
	b := bound(p, "n1")
	b.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("p-gpu-x")}}
	mustNoErr(t, "AddPod", c.AddPod(b))
	check("bound, its claim named", cpuAnd(1000, implicitGPU, 4), framework.ResourceAmounts{})
	if info, _ := c.NodeInfo("n1"); info.Requested.Scalar[implicitGPU] != 0 || info.Requested.MilliCPU != 1000 {
		t.Errorf("node n1 requested %v; want cpu 1 and no claim devices", info.Requested)
	}

	// The class gets an extendedResourceName: the devices move to it.
	classes.OnAdd(&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: gpuClass},
		Spec: resourceapi.DeviceClassSpec{ExtendedResourceName: ptr.To("example.com/gpu")}}, false)
	check("class maps example.com/gpu", cpuAnd(1000, "example.com/gpu", 4), framework.ResourceAmounts{})
	classes.OnDelete(toolscache.DeletedFinalStateUnknown{Key: gpuClass, Obj: &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: gpuClass}}})
	check("class gone", cpuAnd(1000, implicitGPU, 4), framework.ResourceAmounts{})

	claims.OnDelete(claim)
	check("claim deleted: the template again", cpuAnd(1000, implicitGPU, 3), framework.ResourceAmounts{})

	mustNoErr(t, "DeletePod", deletePod(c, b))
	check("pod deleted", framework.ResourceAmounts{}, framework.ResourceAmounts{})
	c.mu.RLock()
	left := len(c.claimObjs.users) + len(c.claimObjs.reads)
	c.mu.RUnlock()
	if left != 0 {
		t.Errorf("the claim index keeps %d entries after the pod left", left)
	}
	if next.observed() != 7 {
		t.Errorf("the handler behind the observer saw %d events, want 7", next.observed())
	}
}

// A claim named by several pods counts once per pod; a pod whose claim
// does not exist counts nothing for it until it arrives; a pod update
// that does not touch its claims keeps its count.
func TestSharedClaimCountsPerPod(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "8")))
	c.SetTenantQueue(tenancy.SourceOwn, "a", queueSpec("a", "", 1))
	claims := observe(c, framework.ResourceClaim, &passedOn{})
	var pods []*v1.Pod
	for _, name := range []string{"p0", "p1"} {
		p := queuedPod(name, "a", "1")
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "shared", ResourceClaimName: ptr.To("team-gpus")}}
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
		pods = append(pods, p)
	}
	if d := claimDevicesOf(c, pods[0].UID); d != nil {
		t.Errorf("claim devices before the claim exists = %v, want none", d)
	}
	claims.OnAdd(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "team-gpus"},
		Spec: claimSpec(exactly("gpu", gpuClass, "", 2))}, false)
	checkInvariants(t, c)
	if _, pending := queueAmounts(t, c, "a"); pending[implicitGPU] != 4 {
		t.Errorf("pending %v, want %s 4 (2 per pod)", pending, implicitGPU)
	}
	p0 := pods[0].DeepCopy()
	p0.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Message: "waiting"}}
	mustNoErr(t, "UpdatePendingPod", c.UpdatePendingPod(pods[0], p0))
	if d := claimDevicesOf(c, p0.UID); d[implicitGPU] != 2 {
		t.Errorf("claim devices after a status update = %v, want %s 2", d, implicitGPU)
	}
}

// A claim whose requests cannot all be counted counts what it can and
// logs the rest naming the pod and its claim.
func TestBadClaimIsLoggedNotFatal(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	templates := observe(c, framework.ResourceClaimTemplate, &passedOn{})
	p := templatePod("p", "a", "1", "bad")
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(p))
	out := captureKlog(t, func() {
		templates.OnAdd(&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bad"},
			Spec: resourceapi.ResourceClaimTemplateSpec{Spec: claimSpec(exactly("none", "", "", 1), exactly("neg", gpuClass, "", -1),
				exactly("ok", gpuClass, "", 1), resourceapi.DeviceRequest{Name: "empty"})}}, false)
	})
	if d := claimDevicesOf(c, p.UID); d[implicitGPU] != 1 || len(d) != 1 {
		t.Errorf("claim devices = %v, want %s 1", d, implicitGPU)
	}
	for _, want := range []string{`pod="default/p"`, `claim="gpu"`, `names no device class`, `negative count -1`, `neither exactly nor firstAvailable`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	checkInvariants(t, c)
}

// syncBuffer is a bytes.Buffer safe for klog's writers and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureKlog returns what klog logged while f ran.
func captureKlog(t *testing.T, f func()) string {
	t.Helper()
	var buf syncBuffer
	klog.LogToStderr(false)
	klog.SetOutput(&buf)
	defer func() {
		klog.SetOutput(io.Discard)
		klog.LogToStderr(true)
	}()
	f()
	klog.Flush()
	return buf.String()
}
