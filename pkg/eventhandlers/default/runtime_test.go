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
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

var jobGVR = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}

// A pod of a batch Job whose spec.activeDeadlineSeconds bounds it gets an
// expected end through the real path: the Job reaches the default
// handler (slimmed as its informer would), the handler tells the real
// cache, and the tasks and cycle jobs the cache hands out read it. Pods
// seen before their Job get it too, and lose it with the Job.
func TestJobDeadlineReachesTheEstimate(t *testing.T) {
	c, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.New(t.Context(), c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var slim func(any) (any, error)
	for _, r := range h.DiscoveredResources() {
		if r.GVR == jobGVR {
			slim = r.Transform
		}
	}
	if slim == nil {
		t.Fatalf("the handler does not watch Jobs (slimmed): %+v", h.DiscoveredResources())
	}
	started := time.Now().Add(-time.Minute).Truncate(time.Second)
	running := st.MakePod().Namespace("ns").Name("train-a").UID("a").Node("n1").Phase(v1.PodRunning).
		ControlledBy("batch/v1", "Job", "train", "job-uid").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	running.Status.StartTime = &metav1.Time{Time: started.Add(10 * time.Second)}
	h.AddPod(running)
	task := func() *framework.TaskInfo {
		t.Helper()
		id, _, ok := c.TaskState("a")
		if !ok {
			t.Fatal("the cache does not have the pod train-a")
		}
		job, ok := c.Job(id)
		if !ok || job.Tasks["a"] == nil {
			t.Fatalf("no task of the pod train-a in its job %v", id)
		}
		return job.Tasks["a"]
	}
	now := time.Now()
	if end, ok := task().ExpectedEnd(now); ok {
		t.Fatalf("before its Job is seen, the pod has an expected end %v", end)
	}

	job := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "train", "namespace": "ns", "uid": "job-uid", "resourceVersion": "1"},
		"spec": map[string]any{"activeDeadlineSeconds": int64(600), "parallelism": int64(1),
			"template": map[string]any{"spec": map[string]any{"containers": []any{}}}},
		"status": map[string]any{"startTime": started.UTC().Format(time.RFC3339), "active": int64(1)},
	}}
	slimmed, err := slim(job)
	if err != nil {
		t.Fatal(err)
	}
	h.AddDynamic(jobGVR, slimmed)
	want := started.Add(10 * time.Minute)
	if end, ok := task().ExpectedEnd(now); !ok || !end.Equal(want) {
		t.Fatalf("running pod of the Job: expected end %v, %v; want the Job's start plus its deadline, %v", end, ok, want)
	}

	// A pending pod of the Job, added after it: the cycle job reads the
	// bound, so it backfills for what is left of the Job's ten minutes.
	h.AddPod(st.MakePod().Namespace("ns").Name("train-b").UID("b").
		ControlledBy("batch/v1", "Job", "train", "job-uid").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj())
	id, _, _ := c.TaskState("b")
	cj, ok := c.CycleJob(id)
	if !ok || len(cj.Pending) != 1 {
		t.Fatalf("no cycle job %v of the pending pod: %v", id, ok)
	}
	if d, ok := framework.EstimatedRuntime(cj.Pending[0], cj.RuntimeBounds.Of(cj.Pending[0]), now); !ok || d != want.Sub(now) {
		t.Errorf("pending pod of the Job: runtime %v, %v; want %v", d, ok, want.Sub(now))
	}

	// The Job is deleted: the pods say nothing any more.
	h.DeleteDynamic(jobGVR, slimmed)
	if end, ok := task().ExpectedEnd(now); ok {
		t.Errorf("after the Job is deleted, its pod still has an expected end %v", end)
	}
}
