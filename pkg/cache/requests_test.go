package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
