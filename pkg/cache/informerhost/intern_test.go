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

package informerhost

import (
	"reflect"
	"slices"
	"testing"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
)

// sameMap reports whether a and b are the same map (not merely equal).
func sameMap(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestInternPod(t *testing.T) {
	replica := func(name, cpu string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Labels: map[string]string{"app": "web", "pod-template-hash": "abc"},
				Annotations:     map[string]string{"note": "x"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "u1", Controller: ptr.To(true)}},
			},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "app:1", Ports: []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("1Gi")},
				}}},
				Tolerations: []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, TolerationSeconds: ptr.To[int64](300)}},
			},
		}
	}
	tests := []struct {
		name   string
		a, b   *v1.Pod
		change func(p *v1.Pod)
		shared bool
	}{
		{name: "replicas", a: replica("a", "1"), b: replica("b", "1"), shared: true},
		{name: "equal quantities written differently", a: replica("a", "1"), b: replica("b", "1000m"), shared: true},
		{name: "equal binary quantities written differently", a: replica("a", "1"), b: replica("b", "1"),
			change: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1024Mi")
			}, shared: true},
		{name: "a fraction of a millicore apart", a: replica("a", "1"), b: replica("b", "1000000001n"), shared: false},
		{name: "different requests", a: replica("a", "1"), b: replica("b", "2"), shared: false},
		{name: "different labels", a: replica("a", "1"), b: replica("b", "1"),
			change: func(p *v1.Pod) { p.Labels["app"] = "api" }, shared: false},
		{name: "a value that looks like two", a: replica("a", "1"), b: replica("b", "1"),
			change: func(p *v1.Pod) { p.Labels = map[string]string{"app": "web3:abc", "pod-template-hash": ""} }, shared: false},
		{name: "different port", a: replica("a", "1"), b: replica("b", "1"),
			change: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 8081 }, shared: true},
		{name: "different owner", a: replica("a", "1"), b: replica("b", "1"),
			change: func(p *v1.Pod) { p.OwnerReferences[0].Controller = ptr.To(false) }, shared: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newInterner()
			if tt.change != nil {
				tt.change(tt.b)
			}
			wantA, wantB := tt.a.DeepCopy(), tt.b.DeepCopy()
			in.internPod(tt.a)
			in.internPod(tt.b)
			// Equal quantities written differently are equal, not
			// identical.
			if !equality.Semantic.DeepEqual(tt.a, wantA) || !equality.Semantic.DeepEqual(tt.b, wantB) {
				t.Fatalf("interning changed the pods' content")
			}
			switch tt.name {
			case "replicas", "equal quantities written differently", "equal binary quantities written differently",
				"a fraction of a millicore apart", "different requests":
				if got := sameMap(tt.a.Spec.Containers[0].Resources.Requests, tt.b.Spec.Containers[0].Resources.Requests); got != tt.shared {
					t.Errorf("requests shared = %v, want %v", got, tt.shared)
				}
			}
			switch tt.name {
			case "replicas":
				if !sameMap(tt.a.Labels, tt.b.Labels) || !sameMap(tt.a.Annotations, tt.b.Annotations) || &tt.a.OwnerReferences[0] != &tt.b.OwnerReferences[0] ||
					&tt.a.Spec.Containers[0] != &tt.b.Spec.Containers[0] || &tt.a.Spec.Tolerations[0] != &tt.b.Spec.Tolerations[0] {
					t.Errorf("replicas do not share their labels, annotations, owners, containers and tolerations")
				}
			case "different requests", "different port":
				if &tt.a.Spec.Containers[0] == &tt.b.Spec.Containers[0] {
					t.Errorf("different containers are shared")
				}
			case "different labels", "a value that looks like two":
				if sameMap(tt.a.Labels, tt.b.Labels) {
					t.Errorf("different labels are shared: %v, %v", tt.a.Labels, tt.b.Labels)
				}
			case "different owner":
				if &tt.a.OwnerReferences[0] == &tt.b.OwnerReferences[0] {
					t.Errorf("different owners are shared")
				}
			}
		})
	}
}

func TestInternerIsBounded(t *testing.T) {
	in := newInterner()
	for i := range maxInterned + 10 {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"i": string(rune('a' + i%26)), "n": resource.NewQuantity(int64(i), resource.DecimalSI).String()}}}
		in.internPod(p)
	}
	if n := len(in.strMaps); n > maxInterned {
		t.Errorf("%d interned maps, want at most %d", n, maxInterned)
	}
}

// The transform runs twice on the objects of a watch-list; the second
// pass must not write what pods already share (run with -race).
func TestStripTwiceWritesNothingShared(t *testing.T) {
	replica := func(name string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "twice"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "twice:1", Env: []v1.EnvVar{{Name: "A"}},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("123m")}}}}},
			Status: v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()}}},
		}
	}
	a, b := replica("a"), replica("b")
	for _, p := range []*v1.Pod{a, b} {
		if _, err := StripForScheduler(p); err != nil {
			t.Fatal(err)
		}
	}
	if &a.Spec.Containers[0] != &b.Spec.Containers[0] || &a.Status.Conditions[0] != &b.Status.Conditions[0] {
		t.Fatalf("replicas do not share their containers and conditions")
	}
	want := a.DeepCopy()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			_ = a.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() + int64(len(a.Spec.Containers[0].Name))
			_ = a.Status.Conditions[0].LastTransitionTime.IsZero()
		}
	}()
	for range 100 {
		if _, err := StripForScheduler(b); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if !equality.Semantic.DeepEqual(a, want) {
		t.Errorf("stripping b again changed a: %v", diff.Diff(want, a))
	}
}

// A pod interned already is recognized by its shared containers and left
// as it is, even if a field it shares was changed meanwhile (which the
// read-only contract forbids; here it shows that nothing is redone).
func TestInternPodOnce(t *testing.T) {
	in := newInterner()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "once"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "once:1"}}}}
	in.internPod(p)
	if _, ok := in.sharedContainers[&p.Spec.Containers[0]]; !ok {
		t.Fatalf("the pod's containers are not recorded as shared")
	}
	p.Labels = map[string]string{"app": "twice"}
	in.internPod(p)
	if len(in.strMaps) != 1 {
		t.Errorf("the second pass interned the labels again: %d maps", len(in.strMaps))
	}
}

// Replicas share the strings, conditions and defaulted pointers they
// repeat; what differs is not shared, and a condition whose time stripPod
// keeps is the pod's own.
func TestInternPodSharesWhatReplicasRepeat(t *testing.T) {
	replica := func(name, node string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: string([]byte("team-a")), Name: name, GenerateName: string([]byte("web-abc-"))},
			Spec: v1.PodSpec{
				NodeName: string([]byte(node)), SchedulerName: string([]byte("default-scheduler")),
				Priority: ptr.To[int32](100), PreemptionPolicy: ptr.To(v1.PreemptLowerPriority),
				TerminationGracePeriodSeconds: ptr.To[int64](30), EnableServiceLinks: ptr.To(true),
			},
			Status: v1.PodStatus{Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable,
				Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
		}
	}
	in := newInterner()
	a, b, c := replica("a", "n1"), replica("b", "n1"), replica("c", "n2")
	c.Spec.Priority = ptr.To[int32](200)
	c.Status.Conditions[0].Status = v1.ConditionFalse
	want := []*v1.Pod{a.DeepCopy(), b.DeepCopy(), c.DeepCopy()}
	for _, p := range []*v1.Pod{a, b, c} {
		in.internPod(p)
	}
	for i, p := range []*v1.Pod{a, b, c} {
		if !equality.Semantic.DeepEqual(p, want[i]) {
			t.Errorf("interning changed pod %s: %s", p.Name, diff.Diff(want[i], p))
		}
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	if !same(a.Namespace, c.Namespace) || !same(a.GenerateName, b.GenerateName) || !same(a.Spec.NodeName, b.Spec.NodeName) ||
		!same(a.Spec.SchedulerName, c.Spec.SchedulerName) {
		t.Errorf("replicas do not share their namespace, generate name, node name and scheduler name")
	}
	if a.Spec.Priority != b.Spec.Priority || a.Spec.PreemptionPolicy != c.Spec.PreemptionPolicy ||
		a.Spec.TerminationGracePeriodSeconds != c.Spec.TerminationGracePeriodSeconds || a.Spec.EnableServiceLinks != c.Spec.EnableServiceLinks {
		t.Errorf("replicas do not share their defaulted pointers")
	}
	if a.Spec.Priority == c.Spec.Priority {
		t.Errorf("different priorities are shared")
	}
	if &a.Status.Conditions[0] != &b.Status.Conditions[0] {
		t.Errorf("equal conditions are not shared")
	}
	if &a.Status.Conditions[0] == &c.Status.Conditions[0] {
		t.Errorf("different conditions are shared")
	}
	timed := replica("d", "n1")
	timed.Status.Conditions[0].LastTransitionTime = metav1.Now()
	in.internPod(timed)
	if &timed.Status.Conditions[0] == &a.Status.Conditions[0] {
		t.Errorf("a condition with a time is shared")
	}
}

// Finding a shared value allocates nothing: the transform interns every
// pod of a watch-list, and most find what their replicas shared already.
func TestInternLookupAllocatesNothing(t *testing.T) {
	in := newInterner()
	labels := func() map[string]string {
		return map[string]string{"app": "web", "pod-template-hash": "abc", "tier": "front"}
	}
	list := func() v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}
	}
	owners := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "u1", Controller: ptr.To(true)}}
	tolerations := []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, TolerationSeconds: ptr.To[int64](300)}}
	conditions := []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	in.mu.Lock()
	defer in.mu.Unlock()
	sharedLabels := in.strMapLocked("l", labels())
	sharedList, _ := in.listLocked(list())
	sharedOwners := in.ownersLocked(slices.Clone(owners))
	sharedTolerations := in.tolerationsLocked(slices.Clone(tolerations))
	sharedConditions := in.conditionsLocked(slices.Clone(conditions))
	m, l := labels(), list()
	allocs := testing.AllocsPerRun(100, func() {
		if !sameMap(in.strMapLocked("l", m), sharedLabels) {
			t.Fatal("equal labels not shared")
		}
		if got, _ := in.listLocked(l); !sameMap(got, sharedList) {
			t.Fatal("equal resource lists not shared")
		}
		if &in.ownersLocked(owners)[0] != &sharedOwners[0] || &in.tolerationsLocked(tolerations)[0] != &sharedTolerations[0] ||
			&in.conditionsLocked(conditions)[0] != &sharedConditions[0] {
			t.Fatal("equal owners, tolerations or conditions not shared")
		}
	})
	if allocs != 0 {
		t.Errorf("a lookup that finds its shared values allocates %v times, want 0", allocs)
	}
}
