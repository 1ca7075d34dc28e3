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

package dialects

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	gangdialects "github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// rackOf returns the rack of each bound pod of ns, by the racks' nodes.
func rackOf(t *testing.T, ns string, racks map[string]map[string]bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for pod, node := range bound(t, ns) {
		for rack, nodes := range racks {
			if nodes[node] {
				out[pod] = rack
			}
		}
	}
	return out
}

// A Volcano PodGroup with a subGroupPolicy: three replicas of 2 pods,
// each within one rack (tier 1), at least 2 of them, with room for 5 of
// the 6 pods in racks of 2, 2 and 1 nodes. Two replicas start, each in a
// rack of its own; the third places neither of its pods (the whole's
// minMember 4 alone would have let it place one) and says why; a node
// joining its rack starts it.
func TestVolcanoSubGroupPolicy(t *testing.T) {
	ns := createNamespace(t)
	const rackLabel = "topology.kubernetes.io/rack"
	suffix := utilrand.String(5)
	racks := map[string]map[string]bool{
		"x": addRack(t, rackLabel, "x-"+suffix, 2, "1"),
		"y": addRack(t, rackLabel, "y-"+suffix, 2, "1"),
		"z": addRack(t, rackLabel, "z-"+suffix, 1, "1"),
	}
	startScheduler(t)
	createObject(t, volcanoGVR, ns, podGroup("scheduling.volcano.sh/v1beta1", ns, "vs", map[string]any{
		"minMember": int64(4),
		"subGroupPolicy": []any{map[string]any{
			"name": "replica", "subGroupSize": int64(2), "minSubGroups": int64(2),
			"labelSelector":   map[string]any{"matchLabels": map[string]any{"app": "vs"}},
			"matchLabelKeys":  []any{"replica"},
			"networkTopology": map[string]any{"mode": "hard", "highestTierAllowed": int64(1)},
		}},
	}))
	for r := range 3 {
		for i := range 2 {
			createPod(t, gangPod(ns, fmt.Sprintf("vs-%d-%d", r, i)).Annotation(framework.GroupNameAnnotation, "vs").
				Label("app", "vs").Label("replica", fmt.Sprint(r)).Obj())
		}
	}
	waitBound(t, ns, 4, "two replicas of 2 in racks of their own")
	stayBound(t, ns, 4, "the third replica fits in no rack")
	in := rackOf(t, ns, racks)
	for r := range 2 {
		a, b := in[fmt.Sprintf("vs-%d-0", r)], in[fmt.Sprintf("vs-%d-1", r)]
		if a == "" || a != b {
			t.Errorf("replica %d in racks %q and %q, want one", r, a, b)
		}
	}
	if in["vs-0-0"] == in["vs-1-0"] {
		t.Errorf("replicas 0 and 1 share rack %s", in["vs-0-0"])
	}
	waitUnschedulable(t, ns, "vs-2-0", `sub-group "replica/2" of gang `+ns+`/vs must run within one `+rackLabel+` domain`,
		"spec.subGroupPolicy[0].networkTopology")
	for n := range addRack(t, rackLabel, "z-"+suffix, 1, "1") {
		racks["z"][n] = true
	}
	waitBound(t, ns, 6, "the third replica's rack has room")
	if in := rackOf(t, ns, racks); in["vs-2-0"] != "z" || in["vs-2-1"] != "z" {
		t.Errorf("replica 2 in racks %q and %q, want z", in["vs-2-0"], in["vs-2-1"])
	}
}

// createExclusiveJobSet creates the JobSet ns/name of two worker Jobs of
// 2 pods, each to run within one domain of key
// (alpha.jobset.sigs.k8s.io/exclusive-topology).
func createExclusiveJobSet(t *testing.T, ns, name, key string) {
	t.Helper()
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": name, "namespace": ns,
			"annotations": map[string]any{gangdialects.JobSetExclusiveTopologyAnnotation: key}},
		"spec": map[string]any{"replicatedJobs": []any{
			map[string]any{"name": "workers", "replicas": int64(2), "template": map[string]any{"spec": map[string]any{
				"parallelism": int64(2), "completions": int64(2)}}},
		}},
	}}
	if _, err := dyn.Resource(jobSetGVR).Namespace(ns).Create(t.Context(), js, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating JobSet: %v", err)
	}
}

// jobSetWorker is pod i of worker Job job of the JobSet ns/js, labelled
// as JobSet's controller labels it: <js>-workers-<job>-<i>.
func jobSetWorker(ns, js string, job, i int) *v1.Pod {
	name := fmt.Sprintf("%s-workers-%d", js, job)
	return gangPod(ns, fmt.Sprintf("%s-%d", name, i)).Label(framework.JobSetNameLabel, js).
		Label(gangdialects.JobSetReplicatedJobNameLabel, "workers").Label(gangdialects.JobSetJobIndexLabel, fmt.Sprint(job)).
		ControlledBy("batch/v1", "Job", name, fmt.Sprintf("00000000-0000-0000-0000-00000000000%d", job)).Obj()
}

// A JobSet whose Jobs must each run within one rack
// (alpha.jobset.sigs.k8s.io/exclusive-topology): two worker Jobs of 2 pods
// and racks of 3 and 1 nodes. The whole needs both Jobs, which fit in the
// 4 nodes only across racks: nothing starts until a second rack of 2 joins.
func TestJobSetJobsWithinOneRack(t *testing.T) {
	ns := createNamespace(t)
	key := "e2e.batch-scheduler.io/rack-" + utilrand.String(5)
	racks := map[string]map[string]bool{"a": addRack(t, key, "a", 3, "1"), "b": addRack(t, key, "b", 1, "1")}
	startScheduler(t)
	createExclusiveJobSet(t, ns, "js", key)
	for job := range 2 {
		for i := range 2 {
			createPod(t, jobSetWorker(ns, "js", job, i))
		}
	}
	waitUnschedulable(t, ns, "js-workers-1-0", "must run within one "+key+" domain")
	stayBound(t, ns, 0, "only one rack holds a Job of 2")
	racks["c"] = addRack(t, key, "c", 2, "1")
	waitBound(t, ns, 4, "two racks hold a Job each")
	in := rackOf(t, ns, racks)
	for job := range 2 {
		a, b := in[fmt.Sprintf("js-workers-%d-0", job)], in[fmt.Sprintf("js-workers-%d-1", job)]
		if a == "" || a != b || a == "b" {
			t.Errorf("Job %d in racks %q and %q, want one rack of 2 or more", job, a, b)
		}
	}
}

// exclusiveAffinity gives pod the affinity JobSet's and LeaderWorkerSet's
// webhooks add for exclusive placement on key: its group's pods in one
// domain of key (affinity to the label keyLabel=group), no other group's
// pods there (anti-affinity to keyLabel present with another value).
func exclusiveAffinity(pod *v1.Pod, key, keyLabel, group string) *v1.Pod {
	pod.Labels[keyLabel] = group
	pod.Spec.Affinity = &v1.Affinity{
		PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			TopologyKey: key,
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: keyLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{group}}}},
		}}},
		PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			TopologyKey: key,
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: keyLabel, Operator: metav1.LabelSelectorOpExists},
				{Key: keyLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{group}}}},
		}}},
	}
	return pod
}

// Exclusive placement of a JobSet's Jobs: the JobSet's
// alpha.jobset.sigs.k8s.io/exclusive-topology makes each Job a sub-gang
// within one rack, and the pod (anti-)affinity JobSet's webhook adds
// keeps the other Jobs out of that rack. Racks of 4 and 1 nodes hold both
// Jobs of 2 only by sharing the rack of 4: nothing starts (the whole
// needs both), the anti-affinity holding the second Job back; a rack of
// 2 joining lets each Job run alone in a rack.
func TestJobSetExclusivePlacement(t *testing.T) {
	ns := createNamespace(t)
	key := "e2e.batch-scheduler.io/rack-" + utilrand.String(5)
	racks := map[string]map[string]bool{"a": addRack(t, key, "a", 4, "1"), "b": addRack(t, key, "b", 1, "1")}
	startScheduler(t)
	createExclusiveJobSet(t, ns, "jx", key)
	for job := range 2 {
		for i := range 2 {
			createPod(t, exclusiveAffinity(jobSetWorker(ns, "jx", job, i), key, "jobset.sigs.k8s.io/job-key", fmt.Sprintf("jx-workers-%d", job)))
		}
	}
	waitUnschedulable(t, ns, "jx-workers-1-0", "didn't match pod anti-affinity rules")
	stayBound(t, ns, 0, "the rack of 4 holds one Job only, exclusively")
	racks["c"] = addRack(t, key, "c", 2, "1")
	waitBound(t, ns, 4, "a rack of 2 for the other Job")
	in := rackOf(t, ns, racks)
	jobRack := map[int]string{}
	for job := range 2 {
		a, b := in[fmt.Sprintf("jx-workers-%d-0", job)], in[fmt.Sprintf("jx-workers-%d-1", job)]
		if a == "" || a != b {
			t.Errorf("Job %d in racks %q and %q, want one", job, a, b)
		}
		jobRack[job] = a
	}
	if jobRack[0] == jobRack[1] {
		t.Errorf("both Jobs in rack %s, want a rack each", jobRack[0])
	}
}
