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
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestJobIDJSON(t *testing.T) {
	data, err := json.Marshal(map[framework.JobID]int{
		{Namespace: "ns", Name: "g", Gang: true}: 1,
		{Namespace: "ns", Name: "p"}:             2,
	})
	mustNoErr(t, "Marshal", err)
	if got := string(data); got != `{"ns/g":1,"ns/pod:p":2}` {
		t.Errorf("JSON = %s", got)
	}
}

// The cache hands raised events, with their objects, to the queue, whose
// registered hints decide.
func TestCacheMoveAll(t *testing.T) {
	c, clk := newTestCache(t, Options{})
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("p").Obj()))
	qj, err := c.Queue().Pop(t.Context())
	mustNoErr(t, "Pop", err)
	var seen []string
	hint := func(_ klog.Logger, job *framework.QueuedJob, oldObj, newObj any) (framework.QueueingHint, error) {
		seen = append(seen, podNames(job.Pods)...)
		if newObj != "help" {
			return framework.QueueSkip, nil
		}
		return framework.Queue, nil
	}
	events := []framework.PluginEvent{{Plugin: "P", ClusterEventWithHint: framework.ClusterEventWithHint{Event: framework.EventNodeAdd, QueueingHintFn: hint}}}
	mustNoErr(t, "AddUnschedulable", c.Queue().AddUnschedulable(qj, schedulingqueue.Attempt{Reason: "no fit", Events: events}))
	clk.Step(schedulingqueue.DefaultMaxBackoff)
	c.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, "no help")
	if l := c.Queue().Lengths(); l.Unschedulable != 1 {
		t.Errorf("lengths = %+v, want still unschedulable", l)
	}
	c.MoveAllToActiveOrBackoffQueue(framework.EventNodeAdd, nil, "help")
	if strings.Join(seen, ",") != "p,p" {
		t.Errorf("hint saw %v, want [p p]", seen)
	}
	if l := c.Queue().Lengths(); l.Active != 1 {
		t.Errorf("lengths = %+v, want active", l)
	}
}
