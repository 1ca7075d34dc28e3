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

package main

// The batch/v1 Jobs of the hybrid story: gangs that the Job controller of
// kube-controller-manager creates, batch-scheduler places whole on the
// jobs pool, KWOK's simulated kubelets run for a few seconds, and the Job
// controller marks Complete.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// gangJob is a Job of the story: n pods that must start together
// (parallelism = completions = n, opted in as one gang) and each run for
// runFor once started.
type gangJob struct {
	namespace, name string
	n               int32
	req             res
	runFor          time.Duration
	// queue, when set, is the tenant queue its pods name; otherwise they
	// go to the jobs pool.
	queue string
	// expected, when set, is the runtime its pods say they need
	// (framework.ExpectedRuntimeAnnotation).
	expected time.Duration
}

// nightly runs first on the jobs pool: two of its pods fill each node's
// cpu but 1 (see cluster.go). backfill, created while nightly runs, needs
// 3500m cpu on each of the two nodes: it fits only once nightly has
// finished. nightly runs long enough for the demo to see backfill wait
// beside it, and backfill long enough to be seen running.
var (
	nightly  = gangJob{namespace: "etl", name: "nightly", n: 4, req: res{"cpu": "1500m", "memory": "2Gi"}, runFor: 8 * time.Second}
	backfill = gangJob{namespace: "etl", name: "backfill", n: 2, req: res{"cpu": "3500m", "memory": "6Gi"}, runFor: 5 * time.Second}
)

// key is the Job's "namespace/name".
func (j gangJob) key() string { return j.namespace + "/" + j.name }

func (j gangJob) String() string {
	in := ""
	if j.queue != "" {
		in = " in queue " + j.queue
	}
	says := ""
	if j.expected > 0 {
		says = ", expected-runtime " + j.expected.String()
	}
	return fmt.Sprintf("%s%s (%d pods × %s, one gang; each runs %s%s)", j.key(), in, j.n, strings.Join(slices.Sorted(maps.Values(j.req)), " "), j.runFor, says)
}

// obj is the Job: its pod template opts into one gang
// (framework.JobGangAnnotation), tells the simulated kubelet how long the
// pod runs (controlplane.RunForAnnotation) and, if expected is set, the
// scheduler how long it is expected to (framework.ExpectedRuntimeAnnotation).
// In a queue, its pods name the queue (framework.QueueLabel), and an
// evicted pod counts as a failure of the Job, which replaces it (the
// default back-off limit, 6, leaves room for an eviction or two).
// Otherwise they select the jobs pool and tolerate its taint, and a failed
// pod fails the Job (backoffLimit 0) rather than being replaced.
func (j gangJob) obj() *batchv1.Job {
	pod := st.MakePod().Req(j.req).Annotation(framework.JobGangAnnotation, "true").Annotation(controlplane.RunForAnnotation, j.runFor.String()).Obj()
	if j.expected > 0 {
		pod.Annotations[framework.ExpectedRuntimeAnnotation] = j.expected.String()
	}
	n, zero := j.n, int32(0)
	backoff := &zero
	if j.queue != "" {
		pod.Labels, backoff = map[string]string{framework.QueueLabel: j.queue}, nil
	} else {
		pod.Spec.NodeSelector = map[string]string{"pool": jobsPool}
		pod.Spec.Tolerations = []v1.Toleration{{Key: jobsTaintKey, Operator: v1.TolerationOpEqual, Value: jobsPool, Effect: v1.TaintEffectNoSchedule}}
	}
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.namespace, Name: j.name},
		Spec: batchv1.JobSpec{Parallelism: &n, Completions: &n, BackoffLimit: backoff,
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}, Spec: pod.Spec}},
	}
}

// createJob creates j; the Job controller then creates its pods.
func createJob(ctx context.Context, e *env, j gangJob) error {
	return progress("creating Job "+j.String(), func() error {
		if _, err := e.cp.Client.BatchV1().Jobs(j.namespace).Create(ctx, j.obj(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Job %s: %w", j.key(), err)
		}
		return nil
	})
}

// jobOutcome is the outcome of the pods of Job j: placed per on, every
// pod in phase (Running or Succeeded).
func jobOutcome(j gangJob, on map[string]int, phase v1.PodPhase, because string) outcome {
	return outcome{Name: "Job " + j.key(), Job: j.key(), Count: int(j.n), On: on, Phase: phase, Because: because}
}

// jobWaits is the outcome of the pods of Job j when none is placed: every
// pod's unschedulable message contains each of why.
func jobWaits(j gangJob, why []string, because string) outcome {
	return outcome{Name: "Job " + j.key(), Job: j.key(), Count: int(j.n), Why: why, Because: because}
}
