package main

// The batch/v1 Jobs of the hybrid story: gangs that the Job controller of
// kube-controller-manager creates, batch-scheduler places whole on the
// jobs pool, KWOK's simulated kubelets run for a few seconds, and the Job
// controller marks Complete.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// gangJob is a Job of the story: n pods that must start together
// (parallelism = completions = n, opted in as one gang) and each run for
// runFor once started.
type gangJob struct {
	namespace, name string
	n               int32
	req             res
	runFor          time.Duration
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
	return fmt.Sprintf("%s (%d pods × %s cpu, %s; each runs %s)", j.key(), j.n, j.req["cpu"], j.req["memory"], j.runFor)
}

// obj is the Job: its pod template opts into one gang
// (framework.JobGangAnnotation), selects the jobs pool and tolerates its
// taint, and tells the simulated kubelet how long the pod runs
// (controlplane.RunForAnnotation). A failed pod fails the Job
// (backoffLimit 0) rather than being replaced.
func (j gangJob) obj() *batchv1.Job {
	pod := st.MakePod().Req(j.req).
		NodeSelector(map[string]string{"pool": jobsPool}).Toleration(jobsTaintKey, jobsPool, v1.TaintEffectNoSchedule).
		Annotation(framework.JobGangAnnotation, "true").Annotation(controlplane.RunForAnnotation, j.runFor.String()).Obj()
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	n, zero := j.n, int32(0)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: j.namespace, Name: j.name},
		Spec: batchv1.JobSpec{
			Parallelism:  &n,
			Completions:  &n,
			BackoffLimit: &zero,
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: pod.Annotations},
				Spec:       pod.Spec,
			},
		},
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

// jobState is what the API says of a Job.
type jobState = harness.Job

// printJobs prints the Jobs.
func printJobs(jobs map[string]jobState, states map[string]podState) {
	harness.WriteJobs(os.Stdout, jobs, states)
}

// joinOr joins parts with ", ", or returns none when there are none.
func joinOr(parts []string, none string) string {
	if len(parts) == 0 {
		return none
	}
	return strings.Join(parts, ", ")
}
