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
	driver := ns + ".gpu.example.com"
	for i := range 2 {
		// As the driver's kubelet plugin would (KWOK runs none).
		node := fmt.Sprintf("%s-n%d", ns, i)
		harness.PublishDevices(t, cp.Client, node+"-gpus", driver, node, harness.GPUs(4))
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
	devices := resourceapi.ResourceDeviceClassPrefix + class.Name
	q := ns + "-q"
	createQueue(t, queueGVR, "Queue", q, map[string]any{"weight": int64(1), "limit": map[string]any{devices: "2"}})
	startScheduler(t)

	job := queueJob(ns, "train", q, 3, "1", "6s")
	// Single pods, not a gang of the Job.
	job.Spec.Template.Annotations["batch-scheduler.io/job-gang"] = "false"
	job.Spec.Template.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl.Name}}
	job.Spec.Template.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	createJob(t, job)

	limited := fmt.Sprintf("queue %s at its limit: %s 2/2", q, devices)
	var last []v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=train"})
		if err != nil {
			return false, nil
		}
		last = pods.Items
		bound, waiting := 0, 0
		for i := range pods.Items {
			p := &pods.Items[i]
			switch {
			case p.Spec.NodeName != "":
				bound++
			case strings.Contains(message(p), limited):
				waiting++
			}
		}
		return bound == 2 && waiting == 1, nil
	})
	if err != nil {
		t.Fatalf("want 2 pods bound and 1 waiting with %q; pods: %s", limited, describe(last))
	}

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
