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
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var (
	queueGVR        = v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.QueuesResource)
	volcanoQueueGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}

	queueCRDsOnce sync.Once
	queueCRDsErr  error
	dyn           dynamic.Interface
)

// installQueueCRDs installs the project's Queue CRD and the Volcano
// Queue CRD of config/crds/third-party, once per test binary, before the
// test starts its scheduler (which discovers them at start-up).
func installQueueCRDs(t *testing.T) {
	t.Helper()
	queueCRDsOnce.Do(func() {
		if dyn, queueCRDsErr = dynamic.NewForConfig(cp.Config); queueCRDsErr != nil {
			return
		}
		for _, f := range []string{
			filepath.Join("..", "..", "deploy", "crds", "batch-scheduler.io_queues.yaml"),
			filepath.Join("..", "..", "config", "crds", "third-party", "scheduling.volcano.sh_queues.yaml"),
		} {
			if queueCRDsErr = controlplane.InstallCRDFile(context.Background(), dyn, f); queueCRDsErr != nil {
				return
			}
		}
	})
	if queueCRDsErr != nil {
		t.Fatal(queueCRDsErr)
	}
}

// createQueue creates a cluster-scoped queue of gvr with spec, deleted
// when the test ends: queues are cluster-wide, and a queue left behind
// would change how the next test's jobs share the cluster.
func createQueue(t *testing.T, gvr schema.GroupVersionResource, kind, name string, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := dyn.Resource(gvr).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", kind, name, err)
	}
	t.Cleanup(func() {
		if err := dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting %s %s: %v", kind, name, err)
		}
	})
}

// queueJob is gangJob in queue (the project's label).
func queueJob(ns, name, queue string, n int32, cpu, runFor string) *batchv1.Job {
	j := gangJob(ns, name, n, cpu, map[string]string{controlplane.RunForAnnotation: runFor})
	j.Spec.Template.Labels = map[string]string{framework.QueueLabel: queue}
	return j
}

// running waits until Job name has n pods running.
func waitRunning(t *testing.T, ns, name string, n int, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		running := 0
		for _, p := range podsOf(t, ns, name) {
			if p.Status.Phase == v1.PodRunning {
				running++
			}
		}
		return running >= n, nil
	})
	if err != nil {
		t.Fatalf("Job %s never had %d pods running: %s", name, n, describe(podsOf(t, ns, name)))
	}
}

// Team a borrows the whole cluster while team b is idle; team b's gang
// arrives and reclaims its fair share from a by evicting one of a's
// gangs whole (never leaving it below its quorum), starts long before
// a's work would have ended, and every Job completes: the evicted gang
// is retried by its controller and runs once b is done.
func TestQueueReclaimsBorrowedShare(t *testing.T) {
	installQueueCRDs(t)
	ns := setup(t, 4, "1")
	watch(t, ns, func(string) int { return 2 })
	createQueue(t, queueGVR, "Queue", ns+"-a", map[string]any{"weight": int64(1)})
	createQueue(t, queueGVR, "Queue", ns+"-b", map[string]any{"weight": int64(1)})
	startScheduler(t)

	const aRuns = 40 * time.Second
	createJob(t, queueJob(ns, "a1", ns+"-a", 2, "1", aRuns.String()))
	createJob(t, queueJob(ns, "a2", ns+"-a", 2, "1", aRuns.String()))
	waitRunning(t, ns, "a1", 2, time.Minute)
	waitRunning(t, ns, "a2", 2, time.Minute)
	aStarted := time.Now()

	createJob(t, queueJob(ns, "b1", ns+"-b", 2, "1", "3s"))
	bJob := waitJob(t, ns, "b1", batchv1.JobComplete, 2*time.Minute)
	if bJob.Status.Succeeded != 2 {
		t.Errorf("Job b1: %s; want 2 succeeded", jobStatus(bJob))
	}
	b := spanOf(t, ns, "b1")
	// Reclaim, not a's Jobs finishing, made room: b started well before
	// a's pods would have ended on their own.
	if latency := b.start.Sub(aStarted); latency > aRuns/2 {
		t.Errorf("team b's gang started %s after it was created, too late for reclaim (team a's work runs %s)", latency.Round(time.Second), aRuns)
	} else {
		t.Logf("team b's gang started within %s of its creation", latency.Round(time.Second))
	}
	// Exactly one of a's gangs was evicted, whole.
	evicted := 0
	for _, name := range []string{"a1", "a2"} {
		failed := 0
		for _, p := range podsOf(t, ns, name) {
			if p.Status.Phase == v1.PodFailed || p.DeletionTimestamp != nil {
				failed++
			}
		}
		j, err := cp.Client.BatchV1().Jobs(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.Failed > 0 || failed > 0 {
			evicted++
		}
	}
	if evicted != 1 {
		t.Errorf("%d of team a's gangs lost pods, want exactly 1 (b's share is 2 of 4 CPUs)", evicted)
	}
	// The queues' status is written while team a's work runs (its
	// surviving gang, or the evicted one back).
	waitQueueStatus(t, ns+"-a", func(st map[string]any) bool {
		conds, _, _ := unstructured.NestedSlice(st, "conditions")
		alloc, _, _ := unstructured.NestedStringMap(st, "allocated")
		return len(conds) == 1 && conds[0].(map[string]any)["status"] == "True" && alloc["cpu"] != ""
	})
	for _, name := range []string{"a1", "a2"} {
		j := waitJob(t, ns, name, batchv1.JobComplete, 3*time.Minute)
		if j.Status.Succeeded != 2 {
			t.Errorf("Job %s: %s; want 2 succeeded", name, jobStatus(j))
		}
	}
}

// waitQueueStatus waits until the status of the project's Queue name
// satisfies ok.
func waitQueueStatus(t *testing.T, name string, ok func(status map[string]any) bool) {
	t.Helper()
	var last map[string]any
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(queueGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last, _, _ = unstructured.NestedMap(u.Object, "status")
		return ok(last), nil
	})
	if err != nil {
		t.Fatalf("Queue %s never had the status expected; last %v", name, last)
	}
}

// A Job naming a queue that does not exist waits, its pods saying which;
// a Volcano Queue of that name, created later, lets it run, and its limit
// holds: of two gangs of 2 one-CPU pods under a capability of 2 CPUs,
// the second waits, saying the queue is at its limit, until the first is
// done. A gang larger than the limit is told at once it can never start.
func TestVolcanoQueueLimitAndUnknownQueue(t *testing.T) {
	installQueueCRDs(t)
	ns := setup(t, 4, "1")
	w := watch(t, ns, func(string) int { return 2 })
	startScheduler(t)
	q := ns + "-v"

	createJob(t, queueJob(ns, "first", q, 2, "1", "4s"))
	waitPodsSay(t, ns, "first", fmt.Sprintf("queue %q", q), "does not exist")

	createQueue(t, volcanoQueueGVR, "Queue", q, map[string]any{"weight": int64(1), "capability": map[string]any{"cpu": "2"}})
	waitRunning(t, ns, "first", 2, time.Minute)
	createJob(t, queueJob(ns, "second", q, 2, "1", "2s"))
	waitPodsSay(t, ns, "second", "queue "+q+" at its limit: cpu 2/2")
	big := queueJob(ns, "big", q, 3, "1", "1s")
	createJob(t, big)
	waitPodsSay(t, ns, "big", "can never start", fmt.Sprintf("queue %q is limited to cpu 2", q))

	for _, name := range []string{"first", "second"} {
		if j := waitJob(t, ns, name, batchv1.JobComplete, 2*time.Minute); j.Status.Succeeded != 2 {
			t.Errorf("Job %s: %s; want 2 succeeded", name, jobStatus(j))
		}
	}
	f, s := spanOf(t, ns, "first"), spanOf(t, ns, "second")
	if s.start.Before(f.finish) {
		t.Errorf("the second gang started at %s, before the first finished at %s: the queue's limit of 2 CPUs was exceeded",
			s.start.Format(time.TimeOnly), f.finish.Format(time.TimeOnly))
	}
	if g := w.Gangs()["big"]; g.Peak != 0 {
		t.Errorf("Job big, larger than its queue's limit, ran %d pods", g.Peak)
	}
}

// waitPodsSay waits until every pod of Job name exists and its
// PodScheduled message contains each of parts.
func waitPodsSay(t *testing.T, ns, name string, parts ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		pods := podsOf(t, ns, name)
		if len(pods) == 0 {
			return false, nil
		}
		for i := range pods {
			msg := message(&pods[i])
			for _, p := range parts {
				if !strings.Contains(msg, p) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the pods of Job %s never all said %q: %s", name, parts, describe(podsOf(t, ns, name)))
	}
}

// A gang of 4 waits for 4 free CPUs while single one-CPU jobs of its
// queue keep arriving and taking every CPU that frees. With
// anti-starvation (the Capacity plugin's starvationAfter, 4 s here) the
// singles that arrived after it stop starting once it has waited that
// long, the CPUs drain, and the gang starts; with it off (the control),
// the gang is overtaken for as long as singles keep coming.
func TestAntiStarvationLetsABigGangStart(t *testing.T) {
	installQueueCRDs(t)
	for _, tc := range []struct {
		name            string
		starvationAfter string
		wantStart       bool
	}{
		{name: "on", starvationAfter: "4s", wantStart: true},
		{name: "off", starvationAfter: "0", wantStart: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Reservations (on in the default profile) are left out: this
			// is anti-starvation alone, and the "off" run the control of
			// TestReservationLetsABigGangStart.
			_, started := bigGangAmidSingles(t, `  plugins:
    postFilter:
      disabled:
      - name: Reservation
  pluginConfig:
  - name: Capacity
    args:
      starvationAfter: `+tc.starvationAfter+"\n")
			if started != tc.wantStart {
				t.Errorf("starvationAfter %s: the gang started within %s: %v, want %v", tc.starvationAfter, bigGangWindow, started, tc.wantStart)
			}
		})
	}
}

// bigGangWindow is how long bigGangAmidSingles waits for the gang.
const bigGangWindow = 25 * time.Second

// bigGangAmidSingles runs the scene of the tests above and below: 4 nodes
// of 1 CPU, one Queue, batch-scheduler with profile (the YAML of the
// profile's fields after its schedulerName), singles of 3 s arriving every
// second from three feeders, which keep the 4 CPUs busy, and then a gang of
// 4 (of 2 s each). It returns the namespace and whether the gang started
// within bigGangWindow of its creation.
func bigGangAmidSingles(t *testing.T, profile string) (ns string, started bool) {
	t.Helper()
	ns = setup(t, 4, "1")
	watch(t, ns, func(job string) int {
		if job == "big" {
			return 4
		}
		return 1
	})
	queue := ns + "-q"
	createQueue(t, queueGVR, "Queue", queue, map[string]any{"weight": int64(1)})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, cfg, `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: batch-scheduler
`+profile)
	startScheduler(t, "--config-path="+cfg)

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var fed sync.WaitGroup
	for f := range 3 {
		fed.Add(1)
		go func() {
			defer fed.Done()
			for i := 0; ctx.Err() == nil; i++ {
				j := queueJob(ns, fmt.Sprintf("s%d-%d", f, i), queue, 1, "1", "3s")
				delete(j.Spec.Template.Annotations, "batch-scheduler.io/job-gang")
				if _, err := cp.Client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
					t.Errorf("creating a single: %v", err)
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
	time.Sleep(5 * time.Second)
	created := time.Now()
	createJob(t, queueJob(ns, "big", queue, 4, "1", "2s"))
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, bigGangWindow, true, func(context.Context) (bool, error) {
		running := 0
		for _, p := range podsOf(t, ns, "big") {
			if p.Status.Phase == v1.PodRunning || p.Status.Phase == v1.PodSucceeded {
				running++
			}
		}
		return running == 4, nil
	})
	stop()
	fed.Wait()
	if err == nil {
		t.Logf("the gang started %s after it was created", time.Since(created).Round(time.Second))
	}
	return ns, err == nil
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The same scene, anti-starvation off, with the default profile's
// Reservation plugin first among the PostFilter plugins: the gang reserves the nodes whose
// singles end first, the singles that follow may not take the room that
// frees there (they give no runtime, so they cannot backfill), and the
// gang starts within seconds, with nothing evicted. The control is the
// "off" run above: without the reservation the singles keep overtaking
// it.
func TestReservationLetsABigGangStart(t *testing.T) {
	installQueueCRDs(t)
	ns, started := bigGangAmidSingles(t, `  pluginConfig:
  - name: Capacity
    args:
      starvationAfter: "0"
`)
	if !started {
		t.Fatalf("the gang did not start within %s of its creation with a reservation: %s", bigGangWindow, describe(podsOf(t, ns, "big")))
	}
	pods, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue {
				t.Errorf("pod %s was evicted (%s): waiting for the singles should have been enough", p.Name, c.Reason)
			}
		}
	}
}
