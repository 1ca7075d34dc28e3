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

package operators

import (
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// integration is one of KubeRay's batch scheduler integrations, as
// KubeRay v1.5.0 writes it (controllers/ray/batchscheduler in its module).
type integration struct {
	// name is the operator's --batch-scheduler value.
	name string
	// schedulerName is the spec.schedulerName it sets on the pods.
	schedulerName string
	// podGroupGVR is the PodGroup it writes, named podGroupName(cluster).
	podGroupGVR  schema.GroupVersionResource
	podGroupName func(cluster string) string
	// updatesPodGroup: it rewrites the PodGroup's minMember and
	// minResources when the RayCluster changes (scheduler-plugins' only
	// creates it).
	updatesPodGroup bool
	// member says whether pod carries the integration's group marker
	// naming the PodGroup of cluster.
	member func(pod *v1.Pod, cluster string) bool
}

var integrations = []integration{
	{
		name:          "scheduler-plugins",
		schedulerName: "scheduler-plugins-scheduler",
		podGroupGVR:   coschedulingGVR,
		podGroupName:  func(cluster string) string { return cluster },
		member: func(pod *v1.Pod, cluster string) bool {
			return pod.Labels[framework.CoschedulingPodGroupLabel] == cluster
		},
	},
	{
		name:            "volcano",
		schedulerName:   "volcano",
		podGroupGVR:     volcanoGVR,
		podGroupName:    func(cluster string) string { return "ray-" + cluster + "-pg" },
		updatesPodGroup: true,
		member: func(pod *v1.Pod, cluster string) bool {
			return pod.Annotations[framework.GroupNameAnnotation] == "ray-"+cluster+"-pg"
		},
	},
}

// eachIntegration runs f as a subtest per integration.
func eachIntegration(t *testing.T, f func(t *testing.T, in integration)) {
	for _, in := range integrations {
		t.Run(in.name, func(t *testing.T) { f(t, in) })
	}
}

// rayCluster is a RayCluster with a head and one worker group.
type rayCluster struct {
	name      string
	headCPU   string
	workers   int64
	workerCPU string
}

// pods is how many pods the operator creates for it.
func (rc rayCluster) pods() int { return 1 + int(rc.workers) }

func rayContainer(name, cpu string) map[string]any {
	return map[string]any{
		"name":  name,
		"image": "rayproject/ray:2.46.0",
		"resources": map[string]any{
			"requests": map[string]any{"cpu": cpu, "memory": "256Mi"},
			"limits":   map[string]any{"cpu": cpu, "memory": "256Mi"},
		},
	}
}

// create creates the RayCluster in e's namespace, with gang scheduling
// enabled (the label scheduler-plugins' integration requires).
func (rc rayCluster) create(e *env) {
	e.t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1",
		"kind":       "RayCluster",
		"metadata": map[string]any{
			"name":      rc.name,
			"namespace": e.ns,
			"labels":    map[string]any{"ray.io/gang-scheduling-enabled": "true"},
		},
		"spec": map[string]any{
			"rayVersion": "2.46.0",
			"headGroupSpec": map[string]any{
				"rayStartParams": map[string]any{},
				"template": map[string]any{"spec": map[string]any{
					"containers": []any{rayContainer("ray-head", rc.headCPU)},
				}},
			},
			"workerGroupSpecs": []any{map[string]any{
				"groupName":      "workers",
				"replicas":       rc.workers,
				"minReplicas":    rc.workers,
				"maxReplicas":    rc.workers + 4,
				"rayStartParams": map[string]any{},
				"template": map[string]any{"spec": map[string]any{
					"containers": []any{rayContainer("ray-worker", rc.workerCPU)},
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(rayClusterGVR).Namespace(e.ns).Create(e.t.Context(), obj, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating RayCluster %s/%s: %v", e.ns, rc.name, err)
	}
}

// scaleWorkers sets the worker group's replicas and minReplicas.
func (e *env) scaleWorkers(name string, replicas int64) {
	e.t.Helper()
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": replicas},
		{"op": "replace", "path": "/spec/workerGroupSpecs/0/minReplicas", "value": replicas},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := dyn.Resource(rayClusterGVR).Namespace(e.ns).Patch(e.t.Context(), name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("scaling RayCluster %s/%s to %d workers: %v", e.ns, name, replicas, err)
	}
}

func (e *env) deleteRayCluster(name string) {
	e.t.Helper()
	e.watch.Retire(name)
	if err := dyn.Resource(rayClusterGVR).Namespace(e.ns).Delete(e.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("deleting RayCluster %s/%s: %v", e.ns, name, err)
	}
}

// checkMembers checks that the operator wrote the integration's scheduler
// name and group marker on every pod.
func (e *env) checkMembers(cluster string, pods []v1.Pod) {
	e.t.Helper()
	for _, p := range pods {
		if p.Spec.SchedulerName != e.in.schedulerName {
			e.t.Errorf("pod %s/%s: schedulerName %q, want %q", p.Namespace, p.Name, p.Spec.SchedulerName, e.in.schedulerName)
		}
		if !e.in.member(&p, cluster) {
			e.t.Errorf("pod %s/%s does not name the PodGroup %s: labels %v, annotations %v", p.Namespace, p.Name, e.in.podGroupName(cluster), p.Labels, p.Annotations)
		}
	}
}

// runningPhase is the PodGroup phase batch-scheduler writes once the
// quorum runs, in both dialects.
const runningPhase = "Running"

// A RayCluster with room for it is placed whole, from the PodGroup and
// the group marker the operator writes, and all its pods run.
func TestRayClusterPlacedWhole(t *testing.T) {
	eachIntegration(t, func(t *testing.T, in integration) {
		e := newEnv(t, in, "2", "2")
		rc := rayCluster{name: "whole", headCPU: "500m", workers: 3, workerCPU: "500m"}
		e.expectQuorum(rc.name, rc.pods())
		rc.create(e)
		e.waitPodGroup(rc.name, int64(rc.pods()), "2")
		pods := e.waitRunning(rc.name, rc.pods())
		e.checkMembers(rc.name, pods)
		e.waitPodGroupPhase(rc.name, runningPhase)
	})
}

// A RayCluster larger than the cluster (room for any three of its four
// pods) gets none bound, and its pods say at once that it can never start.
func TestRayClusterThatDoesNotFitStaysPending(t *testing.T) {
	eachIntegration(t, func(t *testing.T, in integration) {
		// 500m + 3 x 600m = 2.3 CPUs on a 2-CPU node: any three fit.
		e := newEnv(t, in, "2")
		rc := rayCluster{name: "toobig", headCPU: "500m", workers: 3, workerCPU: "600m"}
		e.expectQuorum(rc.name, rc.pods())
		rc.create(e)
		e.waitPodGroup(rc.name, int64(rc.pods()), "2300m")
		e.waitCreated(rc.name, rc.pods())
		// More than the node holds with every other pod gone: the pods
		// say at once that it can never start, and what it lacks.
		msgs := e.waitUnschedulable(rc.name, rc.pods(), "can never start: its quorum (min-available 4) needs cpu 2300m but this scheduler could use cpu 2")
		for pod, msg := range msgs {
			t.Logf("pod %s: %s", pod, msg)
		}
		e.holds("no pod of a gang that does not fit is bound", 3*time.Second, e.noneBound(rc.name))
	})
}

// Raising a worker group's replicas adds pods, which are placed; the
// Volcano integration raises the PodGroup's minMember first.
func TestRayClusterScaleUp(t *testing.T) {
	eachIntegration(t, func(t *testing.T, in integration) {
		e := newEnv(t, in, "4")
		rc := rayCluster{name: "grow", headCPU: "500m", workers: 1, workerCPU: "500m"}
		e.expectQuorum(rc.name, rc.pods())
		rc.create(e)
		e.waitPodGroup(rc.name, int64(rc.pods()), "1")
		e.waitRunning(rc.name, rc.pods())

		rc.workers = 3
		if in.updatesPodGroup {
			e.expectQuorum(rc.name, rc.pods())
		}
		e.scaleWorkers(rc.name, rc.workers)
		if in.updatesPodGroup {
			e.waitPodGroup(rc.name, int64(rc.pods()), "2")
		}
		pods := e.waitRunning(rc.name, rc.pods())
		e.checkMembers(rc.name, pods)
		if !in.updatesPodGroup {
			// KubeRay's scheduler-plugins integration creates the
			// PodGroup once and never updates it: the gang's quorum
			// stays what it was, and the new pods join a running gang.
			pg, err := e.podGroup(t.Context(), rc.name)
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
			t.Logf("PodGroup %s/%s after scaling to %d pods: minMember %d (KubeRay %s does not update it)", e.ns, pg.GetName(), rc.pods(), got, in.name)
		}
	})
}

// Deleting a RayCluster removes its pods (the garbage collector, through
// their owner references), which frees the room a waiting RayCluster
// needs; that one is then placed whole.
func TestRayClusterDeletionPlacesTheNext(t *testing.T) {
	eachIntegration(t, func(t *testing.T, in integration) {
		e := newEnv(t, in, "2")
		first := rayCluster{name: "first", headCPU: "500m", workers: 2, workerCPU: "500m"}
		second := rayCluster{name: "second", headCPU: "500m", workers: 1, workerCPU: "500m"}
		e.expectQuorum(first.name, first.pods())
		e.expectQuorum(second.name, second.pods())
		first.create(e)
		e.waitRunning(first.name, first.pods())

		// 1.5 of 2 CPUs are taken: the second (1 CPU) waits whole.
		second.create(e)
		e.waitCreated(second.name, second.pods())
		e.waitUnschedulable(second.name, second.pods(), "1 of 2 tasks could be placed, min-available 2")
		e.holds("the second RayCluster waits whole while the first runs", 2*time.Second, e.noneBound(second.name))

		e.deleteRayCluster(first.name)
		e.waitGone(first.name)
		e.waitRunning(second.name, second.pods())
		e.waitPodGroupPhase(second.name, runningPhase)
	})
}
