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
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

func TestSameRequestInputs(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	list := func(cpu string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)} }
	pod := func(edit func(*v1.PodSpec)) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{
			Containers:     []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{Requests: list("1")}}},
			InitContainers: []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: list("2")}}},
		}}
		if edit != nil {
			edit(&p.Spec)
		}
		return p
	}
	tests := []struct {
		name string
		edit func(*v1.PodSpec)
		want bool
	}{
		{name: "same", want: true},
		{name: "same quantity, other spelling", edit: func(s *v1.PodSpec) { s.Containers[0].Resources.Requests = list("1000m") }, want: true},
		{name: "status and labels do not matter", edit: func(s *v1.PodSpec) { s.NodeName = "n" }, want: true},
		{name: "container request changed (resize)", edit: func(s *v1.PodSpec) { s.Containers[0].Resources.Requests = list("2") }},
		{name: "request added", edit: func(s *v1.PodSpec) {
			s.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1Gi")
		}},
		{name: "container added", edit: func(s *v1.PodSpec) { s.Containers = append(s.Containers, v1.Container{Name: "b"}) }},
		{name: "init container request changed", edit: func(s *v1.PodSpec) { s.InitContainers[0].Resources.Requests = list("3") }},
		{name: "init container became a sidecar", edit: func(s *v1.PodSpec) { s.InitContainers[0].RestartPolicy = &always }},
		{name: "overhead", edit: func(s *v1.PodSpec) { s.Overhead = list("100m") }},
		{name: "pod-level requests", edit: func(s *v1.PodSpec) { s.Resources = &v1.ResourceRequirements{Requests: list("4")} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameRequestInputs(pod(nil), pod(tt.edit)); got != tt.want {
				t.Errorf("sameRequestInputs = %v, want %v", got, tt.want)
			}
		})
	}
	sidecar := pod(func(s *v1.PodSpec) { s.InitContainers[0].RestartPolicy = &always })
	if !sameRequestInputs(sidecar, pod(func(s *v1.PodSpec) { s.InitContainers[0].RestartPolicy = &always })) {
		t.Error("two sidecar pods with the same requests differ")
	}
	withPodLevel := func(cpu string) *v1.Pod {
		return pod(func(s *v1.PodSpec) { s.Resources = &v1.ResourceRequirements{Requests: list(cpu)} })
	}
	if sameRequestInputs(withPodLevel("4"), withPodLevel("5")) || !sameRequestInputs(withPodLevel("4"), withPodLevel("4")) {
		t.Error("pod-level requests not compared")
	}
}

// TestPodRequestsMatchesResources checks the fast path of podRequests
// against resources.PodRequests.
func TestPodRequestsMatchesResources(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	req := func(kv ...string) v1.ResourceRequirements {
		l := v1.ResourceList{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return v1.ResourceRequirements{Requests: l}
	}
	pods := map[string]v1.PodSpec{
		"no containers":      {},
		"no requests":        {Containers: []v1.Container{{Name: "a"}}},
		"one container":      {Containers: []v1.Container{{Name: "a", Resources: req("cpu", "250m", "memory", "256Mi")}}},
		"three containers":   {Containers: []v1.Container{{Name: "a", Resources: req("cpu", "250m", "memory", "256Mi")}, {Name: "b", Resources: req("cpu", "0.05", "memory", "64M")}, {Name: "c"}}},
		"scalar and storage": {Containers: []v1.Container{{Name: "a", Resources: req("nvidia.com/gpu", "2", "ephemeral-storage", "1Gi")}, {Name: "b", Resources: req("nvidia.com/gpu", "1", "hugepages-2Mi", "4Mi")}}},
		"sub-millicore":      {Containers: []v1.Container{{Name: "a", Resources: req("cpu", "0.4m")}, {Name: "b", Resources: req("cpu", "0.4m")}}},
		"init container":     {Containers: []v1.Container{{Name: "a", Resources: req("cpu", "1")}}, InitContainers: []v1.Container{{Name: "i", Resources: req("cpu", "3")}}},
		"sidecar":            {Containers: []v1.Container{{Name: "a", Resources: req("cpu", "1")}}, InitContainers: []v1.Container{{Name: "i", RestartPolicy: &always, Resources: req("cpu", "1")}}},
		"overhead":           {Containers: []v1.Container{{Name: "a", Resources: req("cpu", "1")}}, Overhead: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
		"pod-level":          {Containers: []v1.Container{{Name: "a", Resources: req("cpu", "1")}}, Resources: &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}},
	}
	for name, spec := range pods {
		t.Run(name, func(t *testing.T) {
			pod := &v1.Pod{Spec: spec}
			if got, want := podRequests(pod), resources.PodRequests(pod); !reflect.DeepEqual(got, want) {
				t.Errorf("podRequests = %+v, want %+v", got, want)
			}
		})
	}
}
