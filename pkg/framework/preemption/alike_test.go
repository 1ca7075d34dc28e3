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

package preemption

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/defaultbinder"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/gang"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/noderesources"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/prioritysort"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// podLog is a PreFilterPod plugin that records the pods it sees and
// judges every pod by spec when judge is set.
type podLog struct {
	judge bool
	mu    sync.Mutex
	pods  []string
}

func (*podLog) Name() string { return "PodLog" }

func (l *podLog) PreFilterPod(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.pods, pod.Name) {
		l.pods = append(l.pods, pod.Name)
	}
	return nil
}

func (l *podLog) JudgesBySpec(*v1.Pod) bool { return l.judge }

// A gang of alike pods for which no victims make room is searched once:
// the pods after the first get its answer while the simulation changed
// nothing; a pod placed in between, or a plugin that reads more of a pod,
// searches again. A gang whose quorum is out of reach stops at once.
func TestSimulationAlikePodsSearchedOnce(t *testing.T) {
	for _, tt := range []struct {
		name  string
		judge bool
		cpus  []string
		// gang enables the Gang plugin at Permit: a quorum of 3.
		gang bool
		want []string
	}{
		{name: "alike, nothing fits", judge: true, cpus: []string{"3", "3", "3"}, want: []string{"p-0"}},
		{name: "not judged by spec", judge: false, cpus: []string{"3", "3", "3"}, want: []string{"p-0", "p-1", "p-2"}},
		{name: "a pod placed in between", judge: true, cpus: []string{"3", "1", "3"}, want: []string{"p-0", "p-1", "p-2"}},
		{name: "the quorum out of reach", judge: false, cpus: []string{"3", "1", "1"}, gang: true, want: []string{"p-0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			log := &podLog{judge: tt.judge}
			reg := frameworkruntime.NewRegistry()
			for name, factory := range map[string]framework.PluginFactory{
				prioritysort.Name: prioritysort.New, noderesources.Name: noderesources.New, defaultbinder.Name: defaultbinder.New,
				log.Name(): func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) { return log, nil },
				gang.Name:  gang.New,
			} {
				if err := reg.Register(name, factory); err != nil {
					t.Fatal(err)
				}
			}
			points := map[frameworkruntime.ExtensionPoint]frameworkruntime.PluginSet{
				frameworkruntime.QueueSortPoint: {{Name: prioritysort.Name}},
				frameworkruntime.PreFilterPoint: {{Name: noderesources.Name}, {Name: log.Name()}},
				frameworkruntime.FilterPoint:    {{Name: noderesources.Name}},
				frameworkruntime.BindPoint:      {{Name: defaultbinder.Name}},
			}
			if tt.gang {
				points[frameworkruntime.PermitPoint] = frameworkruntime.PluginSet{{Name: gang.Name}}
			}
			fwk, err := frameworkruntime.NewFramework(ctx, reg, frameworkruntime.ProfileSpec{SchedulerName: "batch-scheduler", Plugins: points}, testHandle{client: fake.NewClientset()})
			if err != nil {
				t.Fatal(err)
			}
			// Two nodes of 2 cpus, each running a pod of 1 cpu that may
			// be a victim: a pod of 1 cpu fits; one of 3 fits nowhere.
			jobs := jobList{}
			var nodes []*framework.NodeInfo
			for _, name := range []string{"n1", "n2"} {
				ni := framework.NewNodeInfo(st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: "2", v1.ResourcePods: "110"}).Obj())
				info, byName := newJob(t, []*v1.Pod{running(name+"-0", name, 10, "1", 0).Obj()})
				jobs[info.ID] = info
				for _, task := range byName {
					ni.AddTask(task)
				}
				nodes = append(nodes, ni)
			}
			var pods []*v1.Pod
			for i, cpu := range tt.cpus {
				pods = append(pods, st.MakePod().Name("p-"+strconv.Itoa(i)).Priority(100).Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Obj())
			}
			job := &framework.Job{ID: framework.JobID{Namespace: "default", Name: "g", Gang: true}, MinAvailable: 3, Pending: pods, Priority: 100}
			state := framework.NewCycleState()
			if s := fwk.RunPreFilterPlugins(ctx, state, job); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			e := &Engine{opts: Options{Snapshot: newTestSnapshot(nodes...), Jobs: jobs}}
			c := &Cycle{Framework: fwk, State: state, Job: job, Placements: [][]*framework.NodeInfo{nil}}
			b := SearchBounds{Victims: func(t *framework.TaskInfo) bool { return t.Priority() < 100 }}
			res, err := e.Simulate(ctx, c, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			// No node holds a pod of 3 cpus, even without its victim.
			wantPlaced := []string(nil)
			if slices.Contains(tt.cpus, "1") && !tt.gang {
				wantPlaced = []string{"p-1"}
			}
			if got := placedNames(t, res); !slices.Equal(got, wantPlaced) {
				t.Errorf("placed %v, want %v", got, wantPlaced)
			}
			if !slices.Equal(log.pods, tt.want) {
				t.Errorf("pods searched: %v, want %v", log.pods, tt.want)
			}
		})
	}
}
