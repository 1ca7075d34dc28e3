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
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// claimDevices publishes perNode devices of a driver of its own on each
// of the first nodes nodes of ns (as the driver's kubelet plugin would;
// KWOK runs none), and creates a DeviceClass (named ns) selecting them
// and a ResourceClaimTemplate "gpu" in ns asking for one device of it.
// It returns the class's implicit resource name and the template's name.
func claimDevices(t *testing.T, ns string, nodes, perNode int) (devices, template string) {
	t.Helper()
	driver := ns + ".gpu.example.com"
	for i := range nodes {
		node := fmt.Sprintf("%s-n%d", ns, i)
		harness.PublishDevices(t, cp.Client, node+"-gpus", driver, node, harness.GPUs(perNode))
	}
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}},
		},
	}
	if _, err := cp.Client.ResourceV1().DeviceClasses().Create(t.Context(), class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DeviceClass %s: %v", class.Name, err)
	}
	t.Cleanup(func() {
		_ = cp.Client.ResourceV1().DeviceClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpu"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class.Name}}},
		}}},
	}
	if _, err := cp.Client.ResourceV1().ResourceClaimTemplates(ns).Create(t.Context(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ResourceClaimTemplate %s: %v", tmpl.Name, err)
	}
	return resourceapi.ResourceDeviceClassPrefix + class.Name, tmpl.Name
}

// claimJob is queueJob of n single pods (not a gang of the Job), each
// with a claim made from template.
func claimJob(ns, name, queue string, n int32, cpu, runFor, template string) *batchv1.Job {
	job := queueJob(ns, name, queue, n, cpu, runFor)
	job.Spec.Template.Annotations["batch-scheduler.io/job-gang"] = "false"
	job.Spec.Template.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &template}}
	job.Spec.Template.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	return job
}

// waitBoundAndWaiting waits until, of the pods of Job name, exactly bound
// are bound to a node and waiting others' PodScheduled message contains
// msg.
func waitBoundAndWaiting(t *testing.T, ns, name string, bound, waiting int, msg string) {
	t.Helper()
	var last []v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
		if err != nil {
			return false, nil
		}
		last = pods.Items
		b, w := 0, 0
		for i := range pods.Items {
			p := &pods.Items[i]
			switch {
			case p.Spec.NodeName != "":
				b++
			case strings.Contains(message(p), msg):
				w++
			}
		}
		return b == bound && w == waiting, nil
	})
	if err != nil {
		t.Fatalf("Job %s: want %d pods bound and %d waiting with %q; pods: %s", name, bound, waiting, msg, describe(last))
	}
}

// A queue limited to 2 devices of a class, on a Job of 3 pods (run at
// once, not a gang) that each claim one device of the class through a
// ResourceClaimTemplate: the resource claim controller of the real
// kube-controller-manager makes each pod's claim. The nodes have devices
// and CPU for all three, yet two run and the third waits, saying that
// the queue is at its limit on the class's implicit resource name; it
// runs once one of the two finished, and all three complete.
func TestQueueLimitsClaimDevices(t *testing.T) {
	installQueueCRDs(t)
	ns := setup(t, 2, "4")
	watch(t, ns, func(string) int { return 1 })
	devices, tmpl := claimDevices(t, ns, 2, 4)
	q := ns + "-q"
	createQueue(t, queueGVR, "Queue", q, map[string]any{"weight": int64(1), "limit": map[string]any{devices: "2"}})
	startScheduler(t)

	createJob(t, claimJob(ns, "train", q, 3, "1", "6s", tmpl))
	waitBoundAndWaiting(t, ns, "train", 2, 1, fmt.Sprintf("queue %s at its limit: %s 2/2", q, devices))

	if j := waitJob(t, ns, "train", batchv1.JobComplete, 2*time.Minute); j.Status.Succeeded != 3 {
		t.Errorf("Job train: %s; want 3 succeeded", jobStatus(j))
	}
	// The most pods running at once: at the start of each, those whose
	// span holds it (KWOK reports times to the second).
	pods := podsOf(t, ns, "train")
	type run struct{ start, finish time.Time }
	var runs []run
	for i := range pods {
		p := &pods[i]
		if p.Status.StartTime == nil {
			continue
		}
		r := run{start: p.Status.StartTime.Time}
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Terminated != nil {
				r.finish = c.State.Terminated.FinishedAt.Time
			}
		}
		runs = append(runs, r)
	}
	most := 0
	for _, s := range runs {
		n := 0
		for _, o := range runs {
			if !s.start.Before(o.start) && s.start.Before(o.finish) {
				n++
			}
		}
		most = max(most, n)
	}
	if most > 2 {
		t.Errorf("%d pods claiming one device each ran at once in a queue limited to %s 2 (pods: %s)", most, devices, describe(pods))
	}
}

// Two queues of weight 1 that may not borrow share 4 devices that only a
// ResourceSlice publishes (no node lists them in its allocatable): each
// queue is entitled to 2 of them. Each runs a Job of 4 single pods
// claiming one device each: 2 pods of each run, the other 2 wait, saying
// that the queue may not borrow beyond its share, though the node has
// the devices and CPU for them. The two queues are children of one
// parent: at the root, the implicit default queue (weight 1) would be a
// third sibling, and two queues of the root would be entitled to 4/3,
// rounded down, of the devices each. The pods request no CPU: the
// shares are divided by Dominant Resource Fairness, so a queue's share of
// CPU would shrink with its share of devices, to just what its 2 running
// pods request, and the third pod would be held back on CPU first.
func TestQueueFairShareDRADevices(t *testing.T) {
	installQueueCRDs(t)
	ns := setup(t, 1, "4")
	watch(t, ns, func(string) int { return 1 })
	devices, tmpl := claimDevices(t, ns, 1, 4)
	createQueue(t, queueGVR, "Queue", ns, map[string]any{"weight": int64(1)})
	for _, team := range []string{"a", "b"} {
		createQueue(t, queueGVR, "Queue", ns+"-"+team, map[string]any{"parent": ns, "weight": int64(1), "borrow": false})
	}
	startScheduler(t)

	for _, team := range []string{"a", "b"} {
		createJob(t, claimJob(ns, team, ns+"-"+team, 4, "0", "10m", tmpl))
	}
	for _, team := range []string{"a", "b"} {
		q := ns + "-" + team
		waitBoundAndWaiting(t, ns, team, 2, 2, fmt.Sprintf("queue %s may not borrow beyond its share: %s 2/2", q, devices))
		waitQueueStatus(t, q, func(status map[string]any) bool {
			share, _ := status["fairShare"].(map[string]any)
			return share[devices] == "2"
		})
	}
}
