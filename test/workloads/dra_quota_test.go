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

// draGPU is the extended resource the DeviceClass of
// TestQueueLimitsDRABackedDevices maps to its driver's devices.
const draGPU v1.ResourceName = "example.com/gpu"

// gpuJob is singleJob (or, with n > 1, gangJob) in queue whose pods ask
// for one draGPU each beside their CPU.
func gpuJob(ns, name, queue string, n int32, runFor string) *batchv1.Job {
	j := queueJob(ns, name, queue, n, "1", runFor)
	if n == 1 {
		delete(j.Spec.Template.Annotations, "batch-scheduler.io/job-gang")
	}
	j.Spec.Template.Spec.Containers[0].Resources.Requests[draGPU] = mustQuantity("1")
	j.Spec.Template.Spec.Containers[0].Resources.Limits = v1.ResourceList{draGPU: mustQuantity("1")}
	return j
}

// A queue limited to 2 devices of a class, on Jobs whose pods ask for
// them as an extended resource that no node lists: a DeviceClass maps
// example.com/gpu to a driver whose 8 devices (4 on each of 2 nodes) are
// published only through DRA. Four one-GPU Jobs run at most two at a time
// though the nodes have room for all four, each pod gets a claim of its
// own that names it, and all complete; a gang of 3 is told at once that
// it can never start within the queue's limit.
func TestQueueLimitsDRABackedDevices(t *testing.T) {
	installQueueCRDs(t)
	ns := setup(t, 2, "4")
	watch(t, ns, func(job string) int {
		if job == "gang" {
			return 3
		}
		return 1
	})
	driver := ns + ".gpu.example.com"
	for i := range 2 {
		// As the driver's kubelet plugin would (KWOK runs none).
		node := fmt.Sprintf("%s-n%d", ns, i)
		harness.PublishDevices(t, cp.Client, node+"-gpus", driver, node, harness.GPUs(4))
	}
	mapped := string(draGPU)
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: resourceapi.DeviceClassSpec{
			Selectors:            []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}},
			ExtendedResourceName: &mapped,
		},
	}
	if _, err := cp.Client.ResourceV1().DeviceClasses().Create(t.Context(), class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DeviceClass %s: %v", class.Name, err)
	}
	t.Cleanup(func() {
		_ = cp.Client.ResourceV1().DeviceClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
	})
	q := ns + "-q"
	createQueue(t, queueGVR, "Queue", q, map[string]any{"weight": int64(1), "limit": map[string]any{string(draGPU): "2"}})
	startScheduler(t)

	jobs := []string{"a", "b", "c", "d"}
	for _, name := range jobs {
		createJob(t, gpuJob(ns, name, q, 1, "4s"))
	}
	limited := fmt.Sprintf("queue %s at its limit: %s 2/2", q, draGPU)
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range pods.Items {
			if strings.Contains(message(&pods.Items[i]), limited) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no pod waited saying %q", limited)
	}
	createJob(t, gpuJob(ns, "gang", q, 3, "1s"))
	waitPodsSay(t, ns, "gang", "can never start", fmt.Sprintf("queue %q is limited to %s 2", q, draGPU))

	var spans []span
	for _, name := range jobs {
		if j := waitJob(t, ns, name, batchv1.JobComplete, 2*time.Minute); j.Status.Succeeded != 1 {
			t.Errorf("Job %s: %s; want 1 succeeded", name, jobStatus(j))
		}
		pods := podsOf(t, ns, name)
		for i := range pods {
			checkExtendedClaim(t, &pods[i])
		}
		spans = append(spans, spanOf(t, ns, name))
	}
	// The most Jobs running at once: at the start of each, those whose
	// span holds it (KWOK reports times to the second, so a start in the
	// second another finished is not counted as overlapping it).
	most := 0
	for _, s := range spans {
		n := 0
		for _, o := range spans {
			if !s.start.Before(o.start) && s.start.Before(o.finish) {
				n++
			}
		}
		most = max(most, n)
	}
	ran := make([]string, len(spans))
	for i, s := range spans {
		ran[i] = s.start.Format(time.TimeOnly) + "-" + s.finish.Format(time.TimeOnly)
	}
	if most > 2 {
		t.Errorf("%d one-GPU Jobs ran at once in a queue limited to %s 2 (ran %v)", most, draGPU, ran)
	}
	if most < 2 {
		t.Errorf("at most %d Job ran at a time; the queue's limit allows 2 (ran %v)", most, ran)
	}
}

// checkExtendedClaim checks that pod's status names the claim its
// extended resource was allocated by, and that the claim, unless the
// resource claim controller has deleted it since the pod finished, is the
// pod's and marked as an extended-resource claim.
func checkExtendedClaim(t *testing.T, pod *v1.Pod) {
	t.Helper()
	st := pod.Status.ExtendedResourceClaimStatus
	if st == nil || st.ResourceClaimName == "" {
		t.Errorf("pod %s: no status.extendedResourceClaimStatus", pod.Name)
		return
	}
	claim, err := cp.Client.ResourceV1().ResourceClaims(pod.Namespace).Get(t.Context(), st.ResourceClaimName, metav1.GetOptions{})
	if err != nil {
		// The resource claim controller deletes it once the pod is done
		// with it; that is not an error of ours.
		if !strings.Contains(err.Error(), "not found") {
			t.Errorf("pod %s: reading its claim %s: %v", pod.Name, st.ResourceClaimName, err)
		}
		return
	}
	if claim.Annotations[resourceapi.ExtendedResourceClaimAnnotation] != "true" {
		t.Errorf("claim %s of pod %s lacks the %s annotation", claim.Name, pod.Name, resourceapi.ExtendedResourceClaimAnnotation)
	}
	owned := false
	for _, o := range claim.OwnerReferences {
		owned = owned || o.UID == pod.UID
	}
	if !owned {
		t.Errorf("claim %s is not owned by pod %s: %v", claim.Name, pod.Name, claim.OwnerReferences)
	}
}
