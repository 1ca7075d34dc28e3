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
	"fmt"
	"maps"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

const (
	driverA = "a.example.com"
	driverB = "b.example.com"
)

// implicitName is the implicit resource name of class's devices.
func implicitName(class string) v1.ResourceName {
	return v1.ResourceName(resourceapi.ResourceDeviceClassPrefix + class)
}

// deviceClass is a DeviceClass with the CEL selectors exprs and, unless
// "", an extendedResourceName.
func deviceClass(name, extended string, exprs ...string) *resourceapi.DeviceClass {
	c := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, e := range exprs {
		c.Spec.Selectors = append(c.Spec.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: e}})
	}
	if extended != "" {
		c.Spec.ExtendedResourceName = ptr.To(extended)
	}
	return c
}

// models are devices named <prefix>-<i>, each with the attribute model
// given.
func models(prefix string, ms ...string) []resourceapi.Device {
	out := make([]resourceapi.Device, len(ms))
	for i, m := range ms {
		out[i] = resourceapi.Device{Name: fmt.Sprintf("%s-%d", prefix, i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: ptr.To(m)}}}
	}
	return out
}

// nodeSlice is a ResourceSlice of driver on node (none: all nodes) in a
// pool of generation gen.
func nodeSlice(name, driver, node, pool string, gen int64, devices []resourceapi.Device) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
		Driver: driver, Pool: resourceapi.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: 1}, Devices: devices}}
	if node != "" {
		s.Spec.NodeName = ptr.To(node)
	} else {
		s.Spec.AllNodes = ptr.To(true)
	}
	return s
}

// deviceCache is a cache with nodes n1 and n2 (n2's allocatable lists
// example.com/gpu: 4, as a device plugin would) and the observers of
// classes and slices.
func deviceCache(t *testing.T) (c *SchedulerCache, classes, slices toolscache.ResourceEventHandler) {
	t.Helper()
	c, _ = newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "8")))
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(st.MakeNode().Name("n2").
		Allocatable(map[v1.ResourceName]string{"cpu": "8", "pods": "110", "example.com/gpu": "4"}).Obj()))
	return c, observe(c, framework.DeviceClass, &passedOn{}), observe(c, framework.ResourceSlice, &passedOn{})
}

// deviceTotals are the devices the cache adds to the capacity.
func deviceTotals(c *SchedulerCache) map[v1.ResourceName]int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var r resources.Resource
	c.addDeviceTotalsLocked(&r)
	if r.Scalar == nil {
		return map[v1.ResourceName]int64{}
	}
	return r.Scalar
}

func checkTotals(t *testing.T, c *SchedulerCache, step string, want map[v1.ResourceName]int64) {
	t.Helper()
	if got := deviceTotals(c); !maps.Equal(got, want) {
		t.Errorf("%s: device totals %v, want %v", step, got, want)
	}
}

// Each class counts the devices its selectors all select: by driver, by
// attribute, every device without selectors; a device two classes select
// counts in each. Classes and slices may come in any order, and a class
// whose selectors change is recounted; a deleted one counts nothing.
func TestDeviceTotalsPerClass(t *testing.T) {
	c, classes, slices := deviceCache(t)
	classes.OnAdd(deviceClass("by-driver", "", fmt.Sprintf("device.driver == %q", driverA)), false)
	slices.OnAdd(nodeSlice("a-n1", driverA, "n1", "n1", 1, models("a", "big", "big", "small")), false)
	slices.OnAdd(nodeSlice("b-n1", driverB, "n1", "n1", 1, models("b", "big", "small")), false)
	classes.OnAdd(deviceClass("big", "", fmt.Sprintf("device.driver == %q", driverA),
		fmt.Sprintf("device.attributes[%q].model == 'big'", driverA)), false)
	classes.OnAdd(deviceClass("any", ""), false)
	checkTotals(t, c, "three classes", map[v1.ResourceName]int64{
		implicitName("by-driver"): 3, implicitName("big"): 2, implicitName("any"): 5})

	classes.OnUpdate(nil, deviceClass("big", "", "device.attributes[device.driver].model == 'big'"))
	checkTotals(t, c, "class big selects big devices of any driver", map[v1.ResourceName]int64{
		implicitName("by-driver"): 3, implicitName("big"): 3, implicitName("any"): 5})
	slices.OnUpdate(nil, nodeSlice("b-n1", driverB, "n1", "n1", 1, models("b", "big", "big", "small")))
	checkTotals(t, c, "slice b-n1 has another big device", map[v1.ResourceName]int64{
		implicitName("by-driver"): 3, implicitName("big"): 4, implicitName("any"): 6})
	classes.OnDelete(deviceClass("any", ""))
	slices.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "a-n1", Obj: nodeSlice("a-n1", driverA, "n1", "n1", 1, nil)})
	checkTotals(t, c, "class any and slice a-n1 deleted", map[v1.ResourceName]int64{implicitName("big"): 2})
}

// The implicit name counts every device the class selects; the class's
// extendedResourceName leaves out those on a node whose allocatable lists
// it (n2: a device plugin's count is there already). Devices of a slice
// with no single node count once; those on a node the cache does not
// list, not at all.
func TestDeviceTotalsNodes(t *testing.T) {
	c, classes, slices := deviceCache(t)
	classes.OnAdd(deviceClass("gpu", "example.com/gpu", fmt.Sprintf("device.driver == %q", driverA)), false)
	slices.OnAdd(nodeSlice("n1", driverA, "n1", "n1", 1, gpuDevices(2)), false)
	slices.OnAdd(nodeSlice("n2", driverA, "n2", "n2", 1, gpuDevices(4)), false)
	slices.OnAdd(nodeSlice("shared", driverA, "", "shared", 1, gpuDevices(3)), false)
	slices.OnAdd(nodeSlice("n9", driverA, "n9", "n9", 1, gpuDevices(5)), false)
	perDevice := nodeSlice("per-device", driverA, "", "per-device", 1, gpuDevices(2))
	perDevice.Spec.AllNodes, perDevice.Spec.PerDeviceNodeSelection = nil, ptr.To(true)
	perDevice.Spec.Devices[0].NodeName = ptr.To("n1")
	perDevice.Spec.Devices[1].AllNodes = ptr.To(true)
	slices.OnAdd(perDevice, false)
	checkTotals(t, c, "n1, n2, shared, per device", map[v1.ResourceName]int64{
		implicitName("gpu"): 2 + 4 + 3 + 2, "example.com/gpu": 2 + 3 + 2})

	c.mu.RLock()
	capacity := c.capacityLocked()
	c.mu.RUnlock()
	if got, want := capacity.Scalar["example.com/gpu"], int64(4+2+3+2); got != want {
		t.Errorf("capacity has example.com/gpu %d, want %d: n2's allocatable and the DRA devices elsewhere", got, want)
	}
	if capacity.MilliCPU != 16000 {
		t.Errorf("capacity has %dm cpu, want 16000m", capacity.MilliCPU)
	}
	c.mu.RLock()
	ceiling := c.ceilingLocked()
	c.mu.RUnlock()
	if n, ok := ceiling.Scalar[implicitName("gpu")]; ok {
		t.Errorf("the ceiling counts %d DRA devices, want none", n)
	}

	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n9", "8")))
	checkTotals(t, c, "node n9 listed", map[v1.ResourceName]int64{
		implicitName("gpu"): 2 + 4 + 3 + 2 + 5, "example.com/gpu": 2 + 3 + 2 + 5})
}

// gpuDevices are n devices without attributes.
func gpuDevices(n int) []resourceapi.Device {
	out := make([]resourceapi.Device, n)
	for i := range out {
		out[i].Name = fmt.Sprintf("gpu-%d", i)
	}
	return out
}

// Of a pool, only the slices of its highest generation count: a driver
// republishing it at a new generation replaces the older slices at once,
// and they count again if the newer ones go.
func TestDeviceTotalsStalePoolGeneration(t *testing.T) {
	c, classes, slices := deviceCache(t)
	classes.OnAdd(deviceClass("gpu", ""), false)
	slices.OnAdd(nodeSlice("old-0", driverA, "n1", "pool", 1, gpuDevices(4)), false)
	slices.OnAdd(nodeSlice("old-1", driverA, "n1", "pool", 1, gpuDevices(4)), false)
	slices.OnAdd(nodeSlice("other", driverB, "n1", "pool", 1, gpuDevices(1)), false)
	checkTotals(t, c, "generation 1", map[v1.ResourceName]int64{implicitName("gpu"): 9})
	slices.OnAdd(nodeSlice("new", driverA, "n1", "pool", 2, gpuDevices(3)), false)
	checkTotals(t, c, "generation 2 published", map[v1.ResourceName]int64{implicitName("gpu"): 4})
	slices.OnAdd(nodeSlice("newer-empty", driverA, "n1", "pool", 3, nil), false)
	checkTotals(t, c, "generation 3, no devices", map[v1.ResourceName]int64{implicitName("gpu"): 1})
	slices.OnDelete(nodeSlice("newer-empty", driverA, "n1", "pool", 3, nil))
	slices.OnDelete(nodeSlice("new", driverA, "n1", "pool", 2, nil))
	checkTotals(t, c, "generations 2 and 3 deleted", map[v1.ResourceName]int64{implicitName("gpu"): 9})
}

// A selector that does not compile selects nothing, nor does one that
// fails on a device (that device only); each class's problem is logged
// once, naming it. Slices without devices and devices without a name are
// left out. Other classes count as ever.
func TestDeviceTotalsBadInput(t *testing.T) {
	c, classes, slices := deviceCache(t)
	nameless := gpuDevices(3)
	nameless[1].Name = ""
	out := captureKlog(t, func() {
		classes.OnAdd(deviceClass("broken", "", "device.driver =="), false)
		classes.OnAdd(deviceClass("fails", "", fmt.Sprintf("device.attributes[%q].model == 'big'", driverA)), false)
		classes.OnAdd(deviceClass("no-cel", ""), false)
		classes.OnUpdate(nil, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "no-cel"},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{}}}})
		classes.OnAdd(deviceClass("good", ""), false)
		slices.OnAdd(nodeSlice("empty", driverA, "n1", "empty", 1, nil), false)
		slices.OnAdd(nodeSlice("nameless", driverA, "n1", "nameless", 1, nameless), false)
		// No model attribute on two of them: the selector fails there.
		slices.OnAdd(nodeSlice("mixed", driverA, "n1", "mixed", 1, append(models("m", "big", "small"), gpuDevices(2)...)), false)
		slices.OnAdd(nodeSlice("more", driverA, "n1", "more", 1, gpuDevices(2)), false)
	})
	checkTotals(t, c, "bad input", map[v1.ResourceName]int64{implicitName("good"): 2 + 4 + 2, implicitName("fails"): 1})
	for class, problem := range map[string]string{"broken": "compile error", "fails": "runtime error", "no-cel": "no CEL expression"} {
		if n := strings.Count(out, fmt.Sprintf("deviceClass=%q", class)); n != 1 {
			t.Errorf("class %s logged %d times, want once:\n%s", class, n, out)
		}
		if !strings.Contains(out, problem) {
			t.Errorf("log lacks %q:\n%s", problem, out)
		}
	}
	if strings.Contains(out, `deviceClass="good"`) {
		t.Errorf("class good logged:\n%s", out)
	}
	// Other objects are ignored.
	slices.OnAdd(&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, false)
	checkTotals(t, c, "a stray object", map[v1.ResourceName]int64{implicitName("good"): 2 + 4 + 2, implicitName("fails"): 1})
}

// Two tenant queues of equal weight that both want devices of a class
// only ResourceSlices publish (no node lists them) each get half of them
// as fair share; without the devices, neither got any.
func TestFairShareDividesDRADevices(t *testing.T) {
	c, _ := newTestCache(t, Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(cpuNode("n1", "8")))
	c.SetTenantQueue(tenancy.SourceOwn, "a", queueSpec("a", "", 1))
	c.SetTenantQueue(tenancy.SourceOwn, "b", queueSpec("b", "", 1))
	templates := observe(c, framework.ResourceClaimTemplate, &passedOn{})
	templates.OnAdd(gpuTemplate("default", "gpus", 1), false)
	for _, q := range []string{"a", "b"} {
		for i := range 3 {
			mustNoErr(t, "AddPendingPod", c.AddPendingPod(templatePod(fmt.Sprintf("%s%d", q, i), q, "1", "gpus")))
		}
	}
	share := func(q string) int64 { return c.TenantQueueSnapshot().Queues[q].FairShare[implicitGPU] }
	if a, b := share("a"), share("b"); a != 0 || b != 0 {
		t.Fatalf("without devices: fair shares a %d, b %d; want 0", a, b)
	}
	observe(c, framework.DeviceClass, &passedOn{}).OnAdd(deviceClass(gpuClass, "", fmt.Sprintf("device.driver == %q", driverA)), false)
	observe(c, framework.ResourceSlice, &passedOn{}).OnAdd(nodeSlice("n1-gpus", driverA, "n1", "n1", 1, gpuDevices(4)), false)
	// No wait for the refresh period: the slice makes the next snapshot
	// recount the capacity.
	s := c.TenantQueueSnapshot()
	if got := s.Capacity[implicitGPU]; got != 4 {
		t.Errorf("capacity of %s %d, want 4", implicitGPU, got)
	}
	if a, b := s.Queues["a"].FairShare[implicitGPU], s.Queues["b"].FairShare[implicitGPU]; a != 2 || b != 2 {
		t.Errorf("fair shares of %s: a %d, b %d; want 2 each", implicitGPU, a, b)
	}
	checkInvariants(t, c)
}

// The device totals of 500 nodes of 8 devices each (a slice per node),
// with a class selecting by driver and one by attribute: a slice's
// change recounts that slice, a class's change of selectors recounts
// every slice against it, and the capacity sums the counts.
func BenchmarkDeviceTotals(b *testing.B) {
	const nodes, perNode = 500, 8
	setup := func(b *testing.B) (c *SchedulerCache, classes, slices toolscache.ResourceEventHandler) {
		c, err := New(Options{})
		if err != nil {
			b.Fatal(err)
		}
		classes, slices = c.claimObserver(framework.DeviceClass, &passedOn{}), c.claimObserver(framework.ResourceSlice, &passedOn{})
		classes.OnAdd(deviceClass("gpu", "", fmt.Sprintf("device.driver == %q", driverA)), false)
		classes.OnAdd(deviceClass("big", "example.com/gpu", fmt.Sprintf("device.driver == %q", driverA),
			"device.attributes[device.driver].model == 'big'"), false)
		for i := range nodes {
			name := fmt.Sprintf("n%d", i)
			if err := c.AddOrUpdateNode(cpuNode(name, "64")); err != nil {
				b.Fatal(err)
			}
			slices.OnAdd(nodeSlice(name, driverA, name, name, 1, models(name, "big", "big", "big", "big", "small", "small", "small", "small")), false)
		}
		return c, classes, slices
	}
	b.Run("initial list of 500 slices", func(b *testing.B) {
		for b.Loop() {
			setup(b)
		}
	})
	b.Run("slice change", func(b *testing.B) {
		c, _, slices := setup(b)
		versions := []*resourceapi.ResourceSlice{
			nodeSlice("n0", driverA, "n0", "n0", 1, models("n0", "big", "small", "big", "small", "big", "small", "big", "small")),
			nodeSlice("n0", driverA, "n0", "n0", 1, models("n0", "big", "big", "big", "big", "small", "small", "small", "small")),
		}
		i := 0
		for b.Loop() {
			slices.OnUpdate(nil, versions[i%2])
			i++
		}
		if got := deviceTotals(c)[implicitName("gpu")]; got != nodes*perNode {
			b.Fatalf("totals %d", got)
		}
	})
	b.Run("class change", func(b *testing.B) {
		c, classes, _ := setup(b)
		versions := []*resourceapi.DeviceClass{
			deviceClass("big", "example.com/gpu", "device.attributes[device.driver].model == 'big'"),
			deviceClass("big", "example.com/gpu", fmt.Sprintf("device.driver == %q", driverA),
				"device.attributes[device.driver].model == 'big'"),
		}
		i := 0
		for b.Loop() {
			classes.OnUpdate(nil, versions[i%2])
			i++
		}
		if got := deviceTotals(c)["example.com/gpu"]; got != nodes*perNode/2 {
			b.Fatalf("totals %d", got)
		}
	})
	b.Run("capacity", func(b *testing.B) {
		c, _, _ := setup(b)
		for b.Loop() {
			c.mu.RLock()
			c.capacityLocked()
			c.mu.RUnlock()
		}
	})
	b.Run("capacity without devices", func(b *testing.B) {
		c, _, _ := setup(b)
		for b.Loop() {
			c.mu.RLock()
			c.usableLocked(true)
			c.mu.RUnlock()
		}
	})
}
