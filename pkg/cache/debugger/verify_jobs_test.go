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

package debugger

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// The checker holds the cache to its rule of job records: another
// scheduler's bound pod outside any gang has none and is indexed under
// its job instead; every other task is in its job's record.
func TestCompareJobsRecordsAndJobless(t *testing.T) {
	task := func(name, scheduler string, gang bool) *framework.TaskInfo {
		p := st.MakePod().Name(name).UID(name).Scheduler(scheduler).Node("n1")
		if gang {
			p = p.Group("g").MinAvailable("1")
		}
		t := framework.NewTaskInfo(p.Obj(), dialects.Resolver())
		t.Own = scheduler == cache.DefaultSchedulerName // as the cache sets it
		return t
	}
	theirs := task("theirs", "default-scheduler", false)
	theirsInGang := task("theirs-g", "default-scheduler", true)
	ours := task("ours", "batch-scheduler", false)
	stale := task("theirs", "default-scheduler", false) // not the cache's current task
	view := func() *cache.View {
		return &cache.View{
			Tasks: map[types.UID]*framework.TaskInfo{"theirs": theirs, "theirs-g": theirsInGang, "ours": ours},
			Jobs: map[framework.JobID]cache.JobView{
				ours.Job:         {MinAvailable: 1, Tasks: []*framework.TaskInfo{ours}},
				theirsInGang.Job: {MinAvailable: 1, Tasks: []*framework.TaskInfo{theirsInGang}},
			},
			Jobless: map[framework.JobID]*framework.TaskInfo{theirs.Job: theirs},
		}
	}
	for _, tc := range []struct {
		name   string
		breaks func(v *cache.View)
		want   []string // Field of each difference
	}{
		{"consistent", func(*cache.View) {}, nil},
		{"record of another scheduler's pod", func(v *cache.View) {
			v.Jobs[theirs.Job] = cache.JobView{MinAvailable: 1, Tasks: []*framework.TaskInfo{theirs}}
		}, []string{"record"}},
		{"not indexed", func(v *cache.View) { delete(v.Jobless, theirs.Job) }, []string{"jobless"}},
		{"index holds a stale task", func(v *cache.View) { v.Jobless[theirs.Job] = stale }, []string{"jobless", "jobless"}},
		{"index holds a task with a record", func(v *cache.View) { v.Jobless[ours.Job] = ours }, []string{"jobless"}},
		{"gang member of another scheduler missing from its record", func(v *cache.View) { delete(v.Jobs, theirsInGang.Job) }, []string{"tasks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := view()
			tc.breaks(v)
			ds := &diffs{}
			(&verifier{}).compareJobs(ds, nil, v)
			var got []string
			for _, d := range ds.out {
				got = append(got, d.Field)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("differences %v, want fields %v", ds.out, tc.want)
			}
		})
	}
}
