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

package workloads

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// WORKLOADS_V raises the log verbosity of the schedulers the tests
	// run in this process (logging is applied once per process).
	var logArgs []string
	if v := os.Getenv("WORKLOADS_V"); v != "" {
		logArgs = []string{"-v", v}
	}
	if err := app.ApplyLogging(logArgs...); err != nil {
		fmt.Fprintln(os.Stderr, "applying the logging configuration:", err)
		os.Exit(1)
	}
	controlplane.RunTests("workloads", &cp, m.Run)
}

// startScheduler runs the real command in this process until the test
// ends, with no serving port.
func startScheduler(t *testing.T, args ...string) {
	t.Helper()
	if v := os.Getenv("WORKLOADS_V"); v != "" {
		args = append(args, "--v="+v)
	}
	harness.InProcess(t, cp.KubeconfigPath, args...)
}

// setup makes a namespace, and nodes of the simulated kubelets with cpu
// CPUs each, for one test; both are deleted when it ends.
func setup(t *testing.T, nodes int, cpu string) (ns string) {
	t.Helper()
	ns = "w-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns += "-" + utilrand.String(5)
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	t.Cleanup(func() {
		// The namespace controller empties it: Jobs, then their pods.
		if err := controlplane.DeleteNamespace(context.Background(), cp.Client, ns); err != nil {
			t.Error(err)
		}
	})
	for i := range nodes {
		addNode(t, fmt.Sprintf("%s-n%d", ns, i), cpu)
	}
	return ns
}

// watch starts a podwatch.Watcher of ns whose gangs are the Jobs, each of
// quorum(job).
func watch(t *testing.T, ns string, quorum func(job string) int) *podwatch.Watcher {
	t.Helper()
	w := podwatch.New(cp.Client, ns, nil, nil)
	w.GangOf = podwatch.ControllerGang("Job", quorum)
	w.Settle = 5 * time.Second
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, v := range w.Violations(nil) {
			t.Errorf("watcher: %s", v)
		}
	})
	return w
}

// gangJob is a Job of n pods at once (and n completions, indexed) of
// batch-scheduler, opted in to run as one gang, whose pods request cpu
// and carry the given annotations (a run time, say).
func gangJob(ns, name string, n int32, cpu string, annotations map[string]string) *batchv1.Job {
	ann := map[string]string{"batch-scheduler.io/job-gang": "true"}
	for k, v := range annotations {
		ann[k] = v
	}
	indexed := batchv1.IndexedCompletion
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{
			Parallelism:    &n,
			Completions:    &n,
			CompletionMode: &indexed,
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: ann},
				Spec: v1.PodSpec{
					SchedulerName: "batch-scheduler",
					RestartPolicy: v1.RestartPolicyNever,
					Containers: []v1.Container{{Name: "main", Image: "busybox", Resources: v1.ResourceRequirements{
						Requests: v1.ResourceList{v1.ResourceCPU: mustQuantity(cpu)}}}},
				},
			},
		},
	}
}

func createJob(t *testing.T, job *batchv1.Job) {
	t.Helper()
	if _, err := cp.Client.BatchV1().Jobs(job.Namespace).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Job %s/%s: %v", job.Namespace, job.Name, err)
	}
}

// waitJob waits until the Job has condition cond True, and returns it.
func waitJob(t *testing.T, ns, name string, cond batchv1.JobConditionType, timeout time.Duration) *batchv1.Job {
	t.Helper()
	var last *batchv1.Job
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		j, err := cp.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = j
		for _, c := range j.Status.Conditions {
			if c.Type == cond && c.Status == v1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Job %s/%s never had condition %s within %s; last status %+v", ns, name, cond, timeout, jobStatus(last))
	}
	return last
}

func jobStatus(j *batchv1.Job) string {
	if j == nil {
		return "none"
	}
	return fmt.Sprintf("active %d, ready %v, succeeded %d, failed %d, conditions %v", j.Status.Active, ptrValue(j.Status.Ready), j.Status.Succeeded, j.Status.Failed, j.Status.Conditions)
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// podsOf returns the pods of Job name.
func podsOf(t *testing.T, ns, name string) []v1.Pod {
	t.Helper()
	list, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
