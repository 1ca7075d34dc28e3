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

package runtime

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// judgingFilter filters nothing and judges by spec every pod but those
// named in not.
type judgingFilter struct{ not map[string]bool }

func (*judgingFilter) Name() string { return "judging" }
func (*judgingFilter) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return nil
}
func (j *judgingFilter) JudgesBySpec(pod *v1.Pod) bool { return !j.not[pod.Name] }

func TestAlike(t *testing.T) {
	base := func(name string) *st.PodWrapper {
		return st.MakePod().Name(name).Label("app", "a").Req(map[v1.ResourceName]string{"cpu": "1"})
	}
	judging := &judgingFilter{not: map[string]bool{"own-claims": true}}
	tests := []struct {
		name    string
		filters []framework.FilterPlugin
		a, b    *v1.Pod
		want    bool
	}{
		{name: "names and host names differ", filters: []framework.FilterPlugin{judging},
			a: base("p-0").Hostname("p-0").Obj(), b: base("p-1").Hostname("p-1").Obj(), want: true},
		{name: "one quantity written two ways", filters: []framework.FilterPlugin{judging},
			a: base("p-0").Obj(), b: withCPU(base("p-1").Obj(), resource.MustParse("1000m")), want: true},
		{name: "namespaces differ", filters: []framework.FilterPlugin{judging},
			a: base("p-0").Obj(), b: base("p-1").Namespace("other").Obj()},
		{name: "labels differ", filters: []framework.FilterPlugin{judging},
			a: base("p-0").Obj(), b: base("p-1").Label("app", "b").Obj()},
		{name: "requests differ", filters: []framework.FilterPlugin{judging},
			a: base("p-0").Obj(), b: withCPU(base("p-1").Obj(), resource.MustParse("2"))},
		{name: "tolerations differ", filters: []framework.FilterPlugin{judging},
			a: base("p-0").Obj(), b: base("p-1").Toleration("k", "v", v1.TaintEffectNoSchedule).Obj()},
		{name: "a plugin reads more of one", filters: []framework.FilterPlugin{judging},
			a: base("p-0").Obj(), b: base("own-claims").Obj()},
		{name: "a plugin is no SpecJudge", filters: []framework.FilterPlugin{judging, &plainFilter{name: "plain"}},
			a: base("p-0").Obj(), b: base("p-1").Obj()},
		{name: "no filter plugins", a: base("p-0").Obj(), b: base("p-1").Obj(), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Framework{filter: tt.filters}
			if got := f.Alike(tt.a, tt.b); got != tt.want {
				t.Errorf("Alike = %v, want %v", got, tt.want)
			}
			if got := f.Alike(tt.b, tt.a); got != tt.want {
				t.Errorf("Alike, the other way = %v, want %v", got, tt.want)
			}
		})
	}
}

// withCPU sets the CPU request of pod's first container.
func withCPU(pod *v1.Pod, q resource.Quantity) *v1.Pod {
	pod.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = q
	return pod
}
