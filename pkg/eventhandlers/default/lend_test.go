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

package defaulthandler_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// recordCache is the fake cache taking records (an
// eventhandlers.PodRecordCache). It checks, during each call, that the
// pod it is given is the record's pod, and keeps the pointers to check
// after the call whether they were lent.
type recordCache struct {
	*fakeCache
	t        *testing.T
	records  []*framework.PodRecord
	pods     []*v1.Pod
	raised   []*v1.Pod
	labelsOf []map[string]string
}

var _ eventhandlers.PodRecordCache = (*recordCache)(nil)

func (c *recordCache) SetPodRecord(rec *framework.PodRecord, pod *v1.Pod) error {
	if want := rec.Pod(); !equality.Semantic.DeepEqual(pod, want) {
		c.t.Errorf("SetPodRecord(%s) was given a pod that is not the record's:\n%+v\nwant\n%+v", rec.GetName(), pod, want)
	}
	c.records, c.pods = append(c.records, rec), append(c.pods, pod)
	return nil
}

func (c *recordCache) MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, oldObj, newObj any) {
	if p, ok := newObj.(*v1.Pod); ok {
		c.raised = append(c.raised, p)
		c.labelsOf = append(c.labelsOf, p.Labels)
	}
	c.fakeCache.MoveAllToActiveOrBackoffQueue(event, oldObj, newObj)
}

// The pods the handler makes of records are lent for the event and
// emptied after it, when nothing may keep them: the cache takes records
// and the handler has no pod policy. With a policy, whose hook may keep
// its argument, each is a pod of its own, left as it was.
func TestPodsOfRecordsAreLent(t *testing.T) {
	bound := func(rv, label string) *framework.PodRecord {
		return framework.NewPodRecord(st.MakePod().Namespace("ns").Name("p").UID("u1").RV(rv).Node("n1").
			Scheduler("other").Label("app", label).Req(map[v1.ResourceName]string{"cpu": "1"}).Obj())
	}
	for _, tc := range []struct {
		name     string
		opts     []defaulthandler.Option
		wantLent bool
	}{
		{"no policy", nil, true},
		{"a pod policy", []defaulthandler.Option{defaulthandler.WithPolicy(defaulthandler.Policy{Pod: func(p *v1.Pod) *v1.Pod { return p }})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &recordCache{fakeCache: newFakeCache(t), t: t}
			h, err := defaulthandler.NewWithArgs(c, defaulthandler.Args{}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			first, second := bound("1", "web"), bound("2", "api")
			h.AddPod(first)
			h.UpdatePod(first, second)
			// With a policy the handler passes pods, not records, to
			// the cache: AddPod and UpdatePod.
			wantRecords := 2
			if !tc.wantLent {
				wantRecords = 0
			}
			if len(c.records) != wantRecords {
				t.Fatalf("SetPodRecord called %d times, want %d (calls %v)", len(c.records), wantRecords, c.Calls())
			}
			if wantRecords > 0 && (c.records[0] != first || c.records[1] != second) {
				t.Errorf("SetPodRecord was given records %v, want the informer's", c.records)
			}
			// Raised: the add, then the label change; during each call
			// the pod carried the labels of its version.
			if len(c.raised) != 2 || c.labelsOf[0]["app"] != "web" || c.labelsOf[1]["app"] != "api" {
				t.Fatalf("raised %d events with labels %v, want the add (web) and the label change (api)", len(c.raised), c.labelsOf)
			}
			for i, p := range append(c.pods, c.raised...) {
				if emptied := p.Name == "" && p.Labels == nil; emptied != tc.wantLent {
					t.Errorf("pod %d handed out: emptied after the event %v, want %v (lent)", i, emptied, tc.wantLent)
				}
			}
		})
	}
}
