package resources

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want Resource
	}{
		{"containers add up", st.MakePod().Req(map[v1.ResourceName]string{"cpu": "500m", "memory": "1Gi"}).
			Container("b", map[v1.ResourceName]string{"cpu": "250m", "nvidia.com/gpu": "1"}).Obj(),
			Resource{MilliCPU: 750, Memory: 1 << 30, Pods: 1, Scalar: map[v1.ResourceName]int64{"nvidia.com/gpu": 1}}},
		{"a larger init container wins", st.MakePod().Req(map[v1.ResourceName]string{"cpu": "500m"}).
			InitReq(map[v1.ResourceName]string{"cpu": "2"}).Obj(),
			Resource{MilliCPU: 2000, Pods: 1}},
		{"sidecars run alongside", st.MakePod().Req(map[v1.ResourceName]string{"cpu": "500m"}).
			SidecarReq(map[v1.ResourceName]string{"cpu": "100m"}).Obj(),
			Resource{MilliCPU: 600, Pods: 1}},
		{"overhead counts", st.MakePod().Req(map[v1.ResourceName]string{"cpu": "500m"}).
			Overhead(map[v1.ResourceName]string{"cpu": "50m", "memory": "64Mi"}).Obj(),
			Resource{MilliCPU: 550, Memory: 64 << 20, Pods: 1}},
		{"no requests is one pod", st.MakePod().Obj(), Resource{Pods: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodRequests(tt.pod); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PodRequests = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestArithmetic(t *testing.T) {
	node := FromList(st.MakeNode().Capacity(map[v1.ResourceName]string{"cpu": "2", "memory": "4Gi", "pods": "3", "ephemeral-storage": "10Gi", "example.com/fpga": "2"}).Obj().Status.Allocatable)
	req := Resource{MilliCPU: 1500, Memory: 1 << 30, Pods: 1, Scalar: map[v1.ResourceName]int64{"example.com/fpga": 1}}
	if got := node.Insufficient(req); len(got) != 0 || !node.Fits(req) {
		t.Fatalf("Insufficient = %v, want none", got)
	}
	idle := node.Clone()
	idle.Sub(req)
	if idle.MilliCPU != 500 || idle.Scalar["example.com/fpga"] != 1 || node.Scalar["example.com/fpga"] != 2 {
		t.Fatalf("Sub/Clone wrong: idle %+v node %+v", idle, node)
	}
	want := []v1.ResourceName{v1.ResourceCPU, "example.com/fpga", "example.com/zzz"}
	req2 := Resource{MilliCPU: 600, Scalar: map[v1.ResourceName]int64{"example.com/zzz": 1, "example.com/fpga": 2}}
	if got := idle.Insufficient(req2); !reflect.DeepEqual(got, want) {
		t.Errorf("Insufficient = %v, want %v (CPU first, then scalars sorted)", got, want)
	}
	idle.Add(req)
	if !reflect.DeepEqual(idle, node) {
		t.Errorf("Add after Sub = %+v, want %+v", idle, node)
	}
	var zero Resource
	if !zero.IsZero() || node.IsZero() || (Resource{Scalar: map[v1.ResourceName]int64{"x": 1}}).IsZero() {
		t.Error("IsZero wrong")
	}
	if s := (Resource{MilliCPU: 1500, Memory: 2 << 30, Pods: 3, Scalar: map[v1.ResourceName]int64{"b": 2, "a": 1}}).String(); s != "cpu=1500m memory=2Gi pods=3 a=1 b=2" {
		t.Errorf("String = %q", s)
	}
	if (Resource{Pods: 2}).Fits(Resource{Pods: 3}) {
		t.Error("pod count is not checked")
	}
	overcommitted := Resource{MilliCPU: -500, Memory: 1 << 30, Pods: 5}
	if got := overcommitted.Insufficient(Resource{Memory: 1 << 20, Pods: 1}); len(got) != 0 {
		t.Errorf("a pod requesting no cpu is rejected on a cpu-overcommitted node: %v", got)
	}
	if got := overcommitted.Insufficient(Resource{MilliCPU: 1, Pods: 1}); len(got) != 1 || got[0] != v1.ResourceCPU {
		t.Errorf("Insufficient = %v, want [cpu]", got)
	}
}

func TestToListRoundTrips(t *testing.T) {
	for _, rl := range []v1.ResourceList{
		{},
		{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("3Gi")},
		{v1.ResourceCPU: resource.MustParse("2"), v1.ResourcePods: resource.MustParse("110"),
			v1.ResourceEphemeralStorage: resource.MustParse("10Gi"), "nvidia.com/gpu": resource.MustParse("4")},
	} {
		r := FromList(rl)
		back := r.ToList()
		if len(back) != len(rl) {
			t.Errorf("FromList(%v).ToList() = %v: %d names, want %d", rl, back, len(back), len(rl))
		}
		for name, q := range rl {
			if got := back[name]; got.Cmp(q) != 0 {
				t.Errorf("%s: got %s, want %s", name, got.String(), q.String())
			}
		}
		if again := FromList(back); again.String() != r.String() {
			t.Errorf("round trip changed %s into %s", r, again)
		}
	}
}
