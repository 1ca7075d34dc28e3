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
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	gangdialects "github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// Gangs inferred from the owner: each test creates the owner object and
// its pods itself, with the controller owner reference (or labels) the
// owner's operator would set; no operator runs here.

var (
	rayGVR    = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
	jobSetGVR = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	lwsGVR    = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
	mpiGVR    = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
	torchGVR  = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
)

// createOwner creates an owner object and returns its UID.
func createOwner(t *testing.T, gvr schema.GroupVersionResource, ns, apiVersion, kind, name string, spec map[string]any) string {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	created, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s %s/%s: %v", kind, ns, name, err)
	}
	return string(created.GetUID())
}

// boundNames returns the names of the bound pods of ns, sorted.
func boundNames(t *testing.T, ns string) string {
	t.Helper()
	var names []string
	for n := range bound(t, ns) {
		names = append(names, n)
	}
	return strings.Join(sortStrings(names), ",")
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// A RayCluster's head and workers are one gang of 1 + minReplicas: none
// starts while only some fit.
func TestRayClusterGang(t *testing.T) {
	ns, _ := setup(t, 1, "2")
	startScheduler(t)
	uid := createOwner(t, rayGVR, ns, "ray.io/v1", "RayCluster", "rc", map[string]any{
		"workerGroupSpecs": []any{
			map[string]any{"groupName": "small", "minReplicas": int64(2), "maxReplicas": int64(5)},
			map[string]any{"groupName": "parked", "minReplicas": int64(4), "suspend": true},
		}})
	for _, n := range []string{"rc-head", "rc-small-a", "rc-small-b"} {
		createPod(t, gangPod(ns, n).Label("ray.io/cluster", "rc").ControlledBy("ray.io/v1", "RayCluster", "rc", uid).Obj())
	}
	waitUnschedulable(t, ns, "rc-head", "RayCluster.ray.io:rc", "min-available 3")
	stayBound(t, ns, 0, "2 of the RayCluster's 3 pods fit")
	addNode(t, "2")
	waitBound(t, ns, 3, "all 3 fit after a node was added")
}

// A JobSet's pods are one gang across its Jobs (the JobSet label wins over
// the Job that controls each pod): a driver and two workers.
func TestJobSetGang(t *testing.T) {
	ns, _ := setup(t, 1, "2")
	startScheduler(t)
	createOwner(t, jobSetGVR, ns, "jobset.x-k8s.io/v1alpha2", "JobSet", "js", map[string]any{
		"replicatedJobs": []any{
			map[string]any{"name": "driver", "template": map[string]any{"spec": map[string]any{"parallelism": int64(1)}}},
			map[string]any{"name": "workers", "replicas": int64(1), "template": map[string]any{"spec": map[string]any{
				"parallelism": int64(2), "completions": int64(2)}}},
		}})
	// The labels the JobSet controller sets: the JobSet, the replicated
	// Job and the Job's index, which make each Job a sub-gang.
	pod := func(name, rj string) *v1.Pod {
		job := "js-" + rj + "-0"
		return gangPod(ns, name).Label(framework.JobSetNameLabel, "js").
			Label(gangdialects.JobSetReplicatedJobNameLabel, rj).Label(gangdialects.JobSetJobIndexLabel, "0").
			ControlledBy("batch/v1", "Job", job, "00000000-0000-0000-0000-00000000000"+job[len(job)-1:]).Obj()
	}
	createPod(t, pod("js-driver-0", "driver"))
	createPod(t, pod("js-workers-0-0", "workers"))
	createPod(t, pod("js-workers-0-1", "workers"))
	waitUnschedulable(t, ns, "js-driver-0", "JobSet.jobset.x-k8s.io:js", "min-available 3")
	stayBound(t, ns, 0, "2 of the JobSet's 3 pods fit")
	addNode(t, "2")
	waitBound(t, ns, 3, "the whole JobSet fits")
}

// A LeaderWorkerSet is one gang whose groups are sub-gangs of its size:
// with room for 3 pods, one group of 2 starts whole (one group is the
// whole's quorum) and the other waits whole.
func TestLeaderWorkerSetGroups(t *testing.T) {
	ns, _ := setup(t, 1, "3")
	startScheduler(t)
	createOwner(t, lwsGVR, ns, "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "serve", map[string]any{
		"replicas": int64(2), "leaderWorkerTemplate": map[string]any{"size": int64(2)}})
	for g := range 2 {
		for w := range 2 {
			createPod(t, gangPod(ns, fmt.Sprintf("serve-%d-%d", g, w)).
				Label(framework.LeaderWorkerSetNameLabel, "serve").
				Label(framework.LeaderWorkerSetGroupIndexLabel, fmt.Sprint(g)).Obj())
		}
	}
	waitBound(t, ns, 2, "one group of 2 fits in 3 CPUs")
	stayBound(t, ns, 2, "the other group does not fit whole")
	names := boundNames(t, ns)
	if names != "serve-0-0,serve-0-1" && names != "serve-1-0,serve-1-1" {
		t.Fatalf("bound pods %s are not one whole group", names)
	}
	addNode(t, "2")
	waitBound(t, ns, 4, "room for the second group")
}

// An MPIJob's launcher (through its labels; a Job controls it) and its
// workers (controlled by the MPIJob) are one gang.
func TestMPIJobGang(t *testing.T) {
	ns, _ := setup(t, 1, "2")
	startScheduler(t)
	uid := createOwner(t, mpiGVR, ns, "kubeflow.org/v2beta1", "MPIJob", "pi", map[string]any{
		"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": int64(1)},
			"Worker":   map[string]any{"replicas": int64(2)},
		}})
	mpiLabels := func(p *v1.Pod, role string) *v1.Pod {
		p.Labels[framework.KubeflowJobNameLabel] = "pi"
		p.Labels[framework.KubeflowOperatorNameLabel] = framework.MPIOperatorName
		p.Labels["training.kubeflow.org/job-role"] = role
		return p
	}
	createPod(t, mpiLabels(gangPod(ns, "pi-launcher").Label("app", "pi").
		ControlledBy("batch/v1", "Job", "pi-launcher", "00000000-0000-0000-0000-000000000001").Obj(), "launcher"))
	for i := range 2 {
		createPod(t, mpiLabels(gangPod(ns, fmt.Sprintf("pi-worker-%d", i)).Label("app", "pi").
			ControlledBy("kubeflow.org/v2beta1", "MPIJob", "pi", uid).Obj(), "worker"))
	}
	waitUnschedulable(t, ns, "pi-worker-0", "MPIJob.kubeflow.org:pi", "min-available 3")
	stayBound(t, ns, 0, "2 of the MPIJob's 3 pods fit")
	addNode(t, "2")
	waitBound(t, ns, 3, "launcher and workers fit")
}

// An explicit signal wins over the owner: KubeRay's Volcano integration
// names a PodGroup of another name, whose minMember is the quorum, and
// that is no conflict.
func TestExplicitSignalWinsOverOwner(t *testing.T) {
	ns, _ := setup(t, 1, "2")
	startScheduler(t)
	uid := createOwner(t, rayGVR, ns, "ray.io/v1", "RayCluster", "rv", map[string]any{
		"workerGroupSpecs": []any{map[string]any{"minReplicas": int64(3)}}})
	createObject(t, volcanoGVR, ns, podGroup("scheduling.volcano.sh/v1beta1", ns, "ray-rv-pg", map[string]any{"minMember": int64(2)}))
	for _, n := range []string{"rv-head", "rv-w-0", "rv-w-1", "rv-w-2"} {
		createPod(t, gangPod(ns, n).Annotation(framework.VolcanoGroupNameAnnotation, "ray-rv-pg").
			ControlledBy("ray.io/v1", "RayCluster", "rv", uid).Obj())
	}
	// The Volcano PodGroup's quorum of 2 fits, the RayCluster's 4 would
	// not.
	waitBound(t, ns, 2, "the PodGroup's minMember 2 of 4 pods")
	stayBound(t, ns, 2, "no room for a third pod")
	// The job is the PodGroup's: its status is written.
	waitObject(t, volcanoGVR, ns, "ray-rv-pg", "phase Running", phaseIs("Running"))
	msg := waitUnschedulable(t, ns, pendingPod(t, ns), "Insufficient cpu")
	if strings.Contains(msg, "conflict") || strings.Contains(msg, "RayCluster") {
		t.Errorf("message %q mentions the owner or a conflict", msg)
	}
}

// pendingPod returns the name of a pod of ns that has no node.
func pendingPod(t *testing.T, ns string) string {
	t.Helper()
	list, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Spec.NodeName == "" {
			return p.Name
		}
	}
	t.Fatalf("no pending pod in %s", ns)
	return ""
}

// A Job's pods are a gang of its parallelism without opting in, and a Job
// that runs one pod at a time is not a gang: its pod is placed at once.
func TestJobInferredWithoutOptIn(t *testing.T) {
	ns, _ := setup(t, 1, "2")
	startScheduler(t)
	wide := &batchv1Job{Name: "wide", Namespace: ns, Parallelism: 3, Completions: 3, Suspend: true, NoOptIn: true}
	uid := wide.create(t)
	for i := range 3 {
		createPod(t, gangPod(ns, fmt.Sprintf("wide-%d", i)).ControlledBy("batch/v1", "Job", "wide", string(uid)).Obj())
	}
	waitUnschedulable(t, ns, "wide-0", "Job.batch:wide", "min-available 3")
	stayBound(t, ns, 0, "2 of the Job's parallelism 3 fit")
	one := &batchv1Job{Name: "one", Namespace: ns, Parallelism: 1, Completions: 4, Suspend: true, NoOptIn: true}
	oneUID := one.create(t)
	createPod(t, gangPod(ns, "one-0").ControlledBy("batch/v1", "Job", "one", string(oneUID)).Obj())
	waitBound(t, ns, 1, "the pod of a Job of parallelism 1 is on its own")
	addNode(t, "2")
	waitBound(t, ns, 4, "the wide Job fits")
}

// A CRD installed after the scheduler started (an operator installed
// later) is found by rediscovery (every 30 seconds): the pods of its kind,
// which waited for their owner, are then a gang.
func TestOwnerCRDInstalledLater(t *testing.T) {
	if _, err := dyn.Resource(controlplane.CRDGVR).Get(t.Context(), "pytorchjobs.kubeflow.org", metav1.GetOptions{}); err == nil {
		t.Skip("the PyTorchJob CRD is installed already (a repeated run): nothing is installed later")
	}
	ns, _ := setup(t, 1, "1")
	startScheduler(t)
	// The scheduler schedules, so it discovered what was served at its
	// start, before the CRD exists.
	createPod(t, st.MakePod().Namespace(ns).Name("probe").Scheduler("batch-scheduler").Obj())
	waitBound(t, ns, 1, "the probe pod")
	if err := cp.Client.CoreV1().Pods(ns).Delete(t.Context(), "probe", now); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ns, 0, "the probe pod deleted")
	if err := installCRD(t.Context(), filepath.Join("..", "..", "config", "crds", "third-party", lateCRD)); err != nil {
		t.Fatal(err)
	}
	uid := createOwner(t, torchGVR, ns, "kubeflow.org/v1", "PyTorchJob", "pt", map[string]any{
		"pytorchReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": int64(1)},
			"Worker": map[string]any{"replicas": int64(1)},
		}})
	for _, n := range []string{"pt-master-0", "pt-worker-0"} {
		createPod(t, gangPod(ns, n).ControlledBy("kubeflow.org/v1", "PyTorchJob", "pt", uid).Obj())
	}
	// Waiting for its owner until rediscovery finds the PyTorchJobs,
	// then for room for both.
	waitUnschedulable(t, ns, "pt-master-0", "waiting for PyTorchJob.kubeflow.org "+ns+"/pt to exist")
	start := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "pt-master-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled {
				last = c.Message
			}
		}
		return strings.Contains(last, "min-available 2"), nil
	})
	if err != nil {
		t.Fatalf("the PyTorchJob was never found by rediscovery: last message %q", last)
	}
	t.Logf("rediscovery found the PyTorchJobs %v after the pods waited for their owner", time.Since(start).Round(time.Second))
	stayBound(t, ns, 0, "1 of the PyTorchJob's 2 pods fits")
	addNode(t, "1")
	waitBound(t, ns, 2, "both fit")
}

// An owner whose spec gives no usable quorum keeps its pods waiting, with
// a message naming the object and the field; fixing it lets them go.
func TestBrokenOwnerWaits(t *testing.T) {
	ns, _ := setup(t, 1, "4")
	startScheduler(t)
	uid := createOwner(t, rayGVR, ns, "ray.io/v1", "RayCluster", "broken", map[string]any{
		"workerGroupSpecs": []any{map[string]any{"minReplicas": int64(-1)}}})
	for _, n := range []string{"broken-head", "broken-w"} {
		createPod(t, gangPod(ns, n).ControlledBy("ray.io/v1", "RayCluster", "broken", uid).Obj())
	}
	waitUnschedulable(t, ns, "broken-head", "RayCluster.ray.io "+ns+"/broken: spec.workerGroupSpecs[0].minReplicas is negative (-1)")
	stayBound(t, ns, 0, "the RayCluster gives no quorum")
	u, err := dyn.Resource(rayGVR).Namespace(ns).Get(t.Context(), "broken", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{"minReplicas": int64(1)}}, "spec", "workerGroupSpecs"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(rayGVR).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBound(t, ns, 2, "the RayCluster was fixed")
}
