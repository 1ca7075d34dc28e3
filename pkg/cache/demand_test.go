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
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestDemand(t *testing.T) {
	c, _ := newTestCache(t, Options{SchedulerNames: []string{"batch"}})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("running").Node("n1").Scheduler("batch").Req(res{"cpu": "1", "memory": "1Gi"}).Obj()))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("theirs").Node("n1").Scheduler("other").Req(res{"cpu": "5"}).Obj()))
	if r := c.Demand(); r.Waiting != 0 || len(r.Unmet) != 0 || r.LargestGang != nil {
		t.Errorf("Demand with nothing waiting = %+v", r)
	}
	// A gang of three 2-cpu pods and a single 3-cpu pod fail their
	// attempts; a single pod not tried yet is not demand.
	for _, name := range []string{"g-0", "g-1", "g-2"} {
		mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name(name).Scheduler("batch").Group("g").MinAvailable("3").Req(res{"cpu": "2", "memory": "1Gi"}).Obj()))
	}
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("solo").Scheduler("batch").Req(res{"cpu": "3"}).Obj()))
	for i := 0; i < 2; i++ {
		qj, err := c.Queue().Pop(t.Context())
		mustNoErr(t, "Pop", err)
		mustNoErr(t, "AddUnschedulable", c.Queue().AddUnschedulable(qj, schedulingqueue.Attempt{Reason: "no room for " + qj.ID.String()}))
	}
	mustNoErr(t, "AddPendingPod", c.AddPendingPod(st.MakePod().Name("fresh").Scheduler("batch").Req(res{"cpu": "7"}).Obj()))

	r := c.Demand()
	qty := func(l v1.ResourceList, name v1.ResourceName) string {
		q := l[name]
		return q.String()
	}
	if r.Waiting != 4 || qty(r.Unmet, v1.ResourceCPU) != "9" || qty(r.Unmet, v1.ResourceMemory) != "3Gi" {
		t.Errorf("waiting %d, unmet %v; want 4 pods, 9 cpu and 3Gi (the fresh pod was never tried)", r.Waiting, r.Unmet)
	}
	if _, ok := r.Unmet[v1.ResourcePods]; ok {
		t.Errorf("unmet %v names the pod count, which grants do not cover", r.Unmet)
	}
	if qty(r.LargestUnit, v1.ResourceCPU) != "3" || qty(r.LargestUnit, v1.ResourceMemory) != "1Gi" {
		t.Errorf("largest unit %v, want 3 cpu (solo) and 1Gi (a gang pod)", r.LargestUnit)
	}
	g := r.LargestGang
	if g == nil || g.Members != 3 || g.MinMember != 3 || qty(g.Total, v1.ResourceCPU) != "6" || g.Reason != "no room for "+g.Name {
		t.Errorf("largest gang %+v, want the gang g: 3 members, quorum 3, 6 cpu, with its reason", g)
	}
	used := r.Used["n1"]
	if len(r.Used) != 1 || used.Cpu().Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("used %v, want 1 cpu on n1 (our running pod only)", r.Used)
	}
	if err := r.Validate(); err != nil {
		t.Errorf("the report does not validate: %v", err)
	}
}
