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

package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/defaultpreemption"
	"github.com/batch-scheduler/batch-scheduler/pkg/registry"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// With DefaultPreemption's honorPodGroupDisruptionMode, a native
// PodGroup's spec.disruptionMode decides how its running pods go: single
// lets a preemptor take the one pod it needs, even below the gang's
// quorum; all takes the gang whole, as does a multi-level gang whatever
// its mode. Without the arg (the default) every victim gang goes whole.
func TestPreemptionNativeDisruptionMode(t *testing.T) {
	whole := []string{"v-0", "v-1", "v-2"}
	tests := []struct {
		name       string
		disruption framework.Disruption
		// multiLevel splits the gang into sub-groups of its own pods:
		// such a gang goes whole whatever its mode.
		multiLevel bool
		honor      bool
		want       []string
	}{
		{name: "single honoured: one pod goes", disruption: framework.DisruptSingly, honor: true, want: []string{"v-0"}},
		{name: "single by default: the gang goes", disruption: framework.DisruptSingly, want: whole},
		{name: "all honoured: the gang goes", disruption: framework.DisruptWhole, honor: true, want: whole},
		{name: "single honoured but multi-level: the gang goes", disruption: framework.DisruptSingly, honor: true, multiLevel: true, want: whole},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg harnessConfig
			if tt.honor {
				cfg.registry = honoringRegistry(t)
			}
			h := newHarnessWith(t, cfg)
			ev := newEvictions(h)
			policy := &framework.GroupPolicy{MinMember: 3, Source: "PodGroup.scheduling.k8s.io default/v", Disruption: tt.disruption}
			if tt.multiLevel {
				policy.SubGroups = []framework.SubGroupRule{{Name: "w", Selector: labels.Everything(), MinMember: 1, Source: "test"}}
			}
			h.cache.SetGroupPolicy(framework.GroupKindNative, "default", "v", policy)
			group := "v"
			var pods []*v1.Pod
			for i := range 3 {
				node := fmt.Sprintf("n%d", i)
				h.addNode(node, "1")
				p := running(fmt.Sprintf("v-%d", i), node, 10, "1", 10-i).Obj()
				p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
				pods = append(pods, p)
				h.addPod(p)
			}
			id := h.task(pods[0]).Job
			if j, ok := h.cache.Job(id); !ok || !id.Gang || j.Disruption() != tt.disruption && !tt.multiLevel {
				t.Fatalf("the native gang's job %v (found %v) does not go %s", id, ok, tt.disruption)
			}
			h.addPod(st.MakePod().Name("pre").Priority(100).Req(res{v1.ResourceCPU: "1"}).Obj())
			h.cycle()
			if got := ev.evicted(); !slices.Equal(got, tt.want) {
				t.Fatalf("evicted %v, want %v", got, tt.want)
			}
		})
	}
}

// honoringRegistry is the in-tree registry whose DefaultPreemption
// follows victim gangs' disruption modes.
func honoringRegistry(t *testing.T) *frameworkruntime.Registry {
	t.Helper()
	in := plugins.NewInTreeRegistry()
	reg := registry.New[framework.PluginFactory]("plugin")
	for _, name := range in.Names() {
		f, err := in.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == defaultpreemption.Name {
			f = func(ctx context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
				return defaultpreemption.New(ctx, &defaultpreemption.Args{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100,
					HonorPodGroupDisruptionMode: true}, h)
			}
		}
		if err := reg.Register(name, f); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}
