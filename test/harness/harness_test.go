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

package harness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

func TestConsistent(t *testing.T) {
	cpu := func(m int64) resources.Resource { return resources.Resource{MilliCPU: m} }
	pods := map[string]Pod{
		"ns/a": {Key: "ns/a", Node: "n1", Phase: v1.PodRunning, Requests: cpu(1000)},
		"ns/b": {Key: "ns/b", Node: "n1", Phase: v1.PodSucceeded, Requests: cpu(1000)},
		"ns/c": {Key: "ns/c"},
	}
	node := func(mod func(*cache.NodeDump)) *cache.Dump {
		n := cache.NodeDump{Name: "n1", Schedulable: cpu(2000), Requested: cpu(1000), Pods: []string{"ns/b", "ns/a"}}
		if mod != nil {
			mod(&n)
		}
		return &cache.Dump{Nodes: []cache.NodeDump{n}}
	}
	vm := map[string]External{"n1": {Keys: []string{"externalworkload/vm"}, Usage: cpu(500)}}
	for _, tc := range []struct {
		name     string
		dump     *cache.Dump
		external map[string]External
		// want is a substring of the error, "" for none; final says the
		// error must end a wait.
		want  string
		final bool
	}{
		{name: "agrees", dump: node(nil)},
		{name: "assumed", dump: node(func(n *cache.NodeDump) { n.AssumedPods = []string{"ns/a"} }), want: "assumed"},
		{name: "pod missing", dump: node(func(n *cache.NodeDump) { n.Pods = []string{"ns/a"} }), want: "holds pods"},
		{name: "finished pod counted", dump: node(func(n *cache.NodeDump) { n.Requested = cpu(2000) }), want: "requested"},
		{name: "no node", dump: &cache.Dump{}, want: "no node"},
		{name: "over-committed", dump: node(func(n *cache.NodeDump) { n.Schedulable = cpu(500) }), want: "more than", final: true},
		{name: "external counted", dump: node(func(n *cache.NodeDump) { n.ExternalKeys, n.External = []string{"externalworkload/vm"}, cpu(500) }), external: vm},
		{name: "external missing", dump: node(nil), external: vm, want: "external usage"},
		{name: "external over", dump: node(func(n *cache.NodeDump) { n.ExternalKeys, n.External = []string{"externalworkload/vm"}, cpu(1500) }),
			external: map[string]External{"n1": {Keys: []string{"externalworkload/vm"}, Usage: cpu(1500)}}, want: "more than", final: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Consistent(tc.dump, pods, tc.external)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Consistent: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Consistent: %v, want an error with %q", err, tc.want)
			case err != nil && IsFinal(err) != tc.final:
				t.Fatalf("Consistent: %v: final %t, want %t", err, IsFinal(err), tc.final)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	bound := func(node string, phase v1.PodPhase) Pod { return Pod{Node: node, Phase: phase} }
	waiting := Pod{Unschedulable: true, Message: "0/3 nodes are available: 3 Insufficient cpu."}
	for _, tc := range []struct {
		name           string
		outcome        Outcome
		pods           map[string]Pod
		pending, final bool
	}{
		{name: "placed", outcome: Outcome{Pods: []string{"a", "b"}, On: map[string]int{"n1": 1, "n2": 1}},
			pods: map[string]Pod{"a": bound("n1", v1.PodRunning), "b": bound("n2", v1.PodRunning)}},
		{name: "not bound yet", outcome: Outcome{Pods: []string{"a"}, On: map[string]int{"n1": 1}},
			pods: map[string]Pod{"a": {}}, pending: true},
		{name: "not running yet", outcome: Outcome{Pods: []string{"a"}, On: map[string]int{"n1": 1}},
			pods: map[string]Pod{"a": bound("n1", v1.PodPending)}, pending: true},
		{name: "wrong node", outcome: Outcome{Pods: []string{"a"}, On: map[string]int{"n1": 1}},
			pods: map[string]Pod{"a": bound("n2", v1.PodRunning)}, final: true},
		{name: "wrong split", outcome: Outcome{Pods: []string{"a", "b"}, On: map[string]int{"n1": 1, "n2": 1}},
			pods: map[string]Pod{"a": bound("n1", v1.PodRunning), "b": bound("n1", v1.PodRunning)}, final: true},
		{name: "past the phase", outcome: Outcome{Pods: []string{"a"}, On: map[string]int{"n1": 1}},
			pods: map[string]Pod{"a": bound("n1", v1.PodSucceeded)}, final: true},
		{name: "waits", outcome: Outcome{Pods: []string{"a"}, Why: []string{"Insufficient cpu"}}, pods: map[string]Pod{"a": waiting}},
		{name: "waits for another reason", outcome: Outcome{Pods: []string{"a"}, Why: []string{"taint"}}, pods: map[string]Pod{"a": waiting}, pending: true},
		{name: "bound but should wait", outcome: Outcome{Pods: []string{"a"}}, pods: map[string]Pod{"a": bound("n1", v1.PodRunning)}, final: true},
		{name: "anywhere but", outcome: Outcome{Pods: []string{"a"}, Anywhere: true, Avoid: "n1"}, pods: map[string]Pod{"a": bound("n1", v1.PodRunning)}, final: true},
		{name: "gone", outcome: Outcome{Pods: []string{"a"}, Gone: true}, pods: map[string]Pod{}},
		{name: "not gone yet", outcome: Outcome{Pods: []string{"a"}, Gone: true}, pods: map[string]Pod{"a": bound("n1", v1.PodRunning)}, pending: true},
		{name: "job pods not all created", outcome: Outcome{Job: "ns/j", Count: 2, Anywhere: true},
			pods: map[string]Pod{"ns/j-a": {Key: "ns/j-a", Job: "ns/j", Node: "n1", Phase: v1.PodRunning}}, pending: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pending, final := Compare([]Outcome{tc.outcome}, tc.pods)
			if (len(pending) > 0) != tc.pending || (len(final) > 0) != tc.final {
				t.Fatalf("Compare: pending %q, final %q; want pending %t, final %t", pending, final, tc.pending, tc.final)
			}
		})
	}
}

func TestPoll(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := Poll(ctx, time.Minute, "the end", nil, func() (bool, error) {
		calls++
		return false, Final(errors.New("cannot be mended"))
	})
	if err == nil || calls != 1 || !strings.Contains(err.Error(), "cannot be mended") {
		t.Errorf("a Final error: Poll returned %v after %d calls, want it at once", err, calls)
	}
	err = Poll(ctx, time.Minute, "the end", func() error { return errors.New("it exited") }, func() (bool, error) { return true, nil })
	if err == nil || !strings.Contains(err.Error(), "it exited") {
		t.Errorf("a dead program: Poll returned %v, want its end", err)
	}
	err = Poll(ctx, 200*time.Millisecond, "the end", nil, func() (bool, error) { return false, errors.New("not yet") })
	if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "not yet") {
		t.Errorf("a timeout: Poll returned %v, want the last error", err)
	}
	if err := Poll(ctx, time.Minute, "the end", nil, func() (bool, error) { return true, nil }); err != nil {
		t.Errorf("Poll: %v, want nil", err)
	}
}

func TestTwoLevelConsistent(t *testing.T) {
	res := func(cpu string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)} }
	half := resources.Resource{MilliCPU: 4000}
	alloc := &Allocation{Frameworks: map[string]FrameworkStatus{
		"batch": {Grants: map[string]v1.ResourceList{"n1": res("4")}},
		"vms":   {Grants: map[string]v1.ResourceList{"n1": res("4")}},
	}}
	node := func(mod func(*cache.NodeDump)) *cache.Dump {
		n := cache.NodeDump{Name: "n1", Schedulable: resources.Resource{MilliCPU: 8000}, Cap: &half,
			OwnRequested: resources.Resource{MilliCPU: 3000}, Requested: resources.Resource{MilliCPU: 3000}}
		if mod != nil {
			mod(&n)
		}
		return &cache.Dump{Nodes: []cache.NodeDump{n}}
	}
	vm := func(cpu string) []VM {
		return []VM{{Name: "vm", Host: "n1", Phase: "Running", CPU: resource.MustParse(cpu)}}
	}
	for _, tc := range []struct {
		name  string
		dump  *cache.Dump
		vms   []VM
		want  string
		final bool
	}{
		{name: "holds", dump: node(nil), vms: vm("4")},
		{name: "cap not the grant yet", dump: node(func(n *cache.NodeDump) { n.Cap = &resources.Resource{MilliCPU: 2000} }), want: "is not batch's grant"},
		{name: "pods over the grant", dump: node(func(n *cache.NodeDump) { n.OwnRequested = resources.Resource{MilliCPU: 5000} }), want: "over its grant", final: true},
		{name: "VMs over their grant", dump: node(nil), vms: vm("5"), want: "over vms's grant", final: true},
		{name: "node over-committed", dump: node(func(n *cache.NodeDump) { n.External = resources.Resource{MilliCPU: 6000} }), want: "pods and VMs use", final: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := TwoLevelConsistent(tc.dump, alloc, tc.vms, "batch", "vms")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("TwoLevelConsistent: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("TwoLevelConsistent: %v, want an error with %q", err, tc.want)
			case err != nil && IsFinal(err) != tc.final:
				t.Fatalf("TwoLevelConsistent: %v: final %t, want %t", err, IsFinal(err), tc.final)
			}
		})
	}
}
