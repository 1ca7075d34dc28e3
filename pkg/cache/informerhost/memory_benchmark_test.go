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

package informerhost

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// replicaPod is the i-th running replica of one of 500 Deployments on
// one of 5,000 nodes, as the API server serves it: defaulted fields set,
// a kubelet's status, the service account token volume.
func replicaPod(i int) *v1.Pod {
	app := i % 500
	appName := fmt.Sprintf("service-%03d", app)
	hash := fmt.Sprintf("%09x", app*7919)[:9]
	rsName := appName + "-" + hash
	token := "kube-api-access-" + fmt.Sprintf("%05x", i%(1<<20))[:5]
	start := metav1.NewTime(time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond))
	container := func(name, image, cpu, mem string, port int32) v1.Container {
		return v1.Container{
			Name: name, Image: image,
			Ports: []v1.ContainerPort{{Name: name, ContainerPort: port, Protocol: v1.ProtocolTCP}},
			Env: []v1.EnvVar{{Name: "APP_NAME", Value: appName},
				{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
			},
			VolumeMounts:             []v1.VolumeMount{{Name: token, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
			ReadinessProbe:           &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(port)}}, PeriodSeconds: 10},
			TerminationMessagePath:   v1.TerminationMessagePathDefault,
			TerminationMessagePolicy: v1.TerminationMessageReadFile,
			ImagePullPolicy:          v1.PullIfNotPresent,
		}
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("team-%03d", i%100), Name: fmt.Sprintf("%s-%05d", rsName, i), GenerateName: rsName + "-",
			UID:             types.UID(fmt.Sprintf("00000000-0000-4000-9000-%012x", i)),
			ResourceVersion: strconv.Itoa(100000 + i), CreationTimestamp: start,
			Labels: map[string]string{"app.kubernetes.io/name": appName, "pod-template-hash": hash,
				"tier": []string{"frontend", "backend", "worker"}[app%3]},
			Annotations: map[string]string{"prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName,
				UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", app)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: v1.PodSpec{
			NodeName: fmt.Sprintf("node-%04d", i%5000),
			Containers: []v1.Container{
				container("app", "registry.example.com/apps/"+appName+":2.14.3", "100m", "128Mi", 8080),
				container("proxy", "registry.example.com/platform/proxy:1.31.0", "50m", "64Mi", 15001),
			},
			Volumes: []v1.Volume{{Name: token, VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				},
				DefaultMode: ptr.To[int32](0o644),
			}}}},
			RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy: v1.DNSClusterFirst, ServiceAccountName: "default", DeprecatedServiceAccount: "default",
			SecurityContext: &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), FSGroup: ptr.To[int64](2000)},
			SchedulerName:   v1.DefaultSchedulerName,
			Tolerations: []v1.Toleration{
				{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			Priority: ptr.To[int32](0), PreemptionPolicy: ptr.To(v1.PreemptLowerPriority), EnableServiceLinks: ptr.To(true),
		},
	}
	podIP := fmt.Sprintf("100.%d.%d.%d", 64+i/65536, (i/256)%256, i%256)
	hostIP := fmt.Sprintf("10.0.%d.%d", (i%5000)/256, i%256)
	pod.Status = v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue, LastTransitionTime: start},
			{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: start},
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: start},
			{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: start},
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: start},
		},
		HostIP: hostIP, HostIPs: []v1.HostIP{{IP: hostIP}}, PodIP: podIP, PodIPs: []v1.PodIP{{IP: podIP}},
		StartTime: &start, QOSClass: v1.PodQOSBurstable,
	}
	for j, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Ready: true, Started: ptr.To(true), Image: c.Image,
			ImageID:     c.Image + "@sha256:" + strings.Repeat(strconv.Itoa(j), 64),
			ContainerID: fmt.Sprintf("containerd://%064x", i*2+j),
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: start}},
		})
	}
	return pod
}

// BenchmarkStoredPod measures the heap a stored pod keeps (B/pod, live
// after a collection) for running Deployment replicas decoded from
// protobuf, as an informer stores them: decoded only (the baseline), and
// decoded and passed through StripForScheduler.
func BenchmarkStoredPod(b *testing.B) {
	const n = 20000
	wire := make([][]byte, n)
	for i := range wire {
		data, err := replicaPod(i).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		wire[i] = data
	}
	for _, strip := range []bool{false, true} {
		name := "decoded"
		if strip {
			name = "stripped"
		}
		b.Run(name, func(b *testing.B) {
			var perPod float64
			for b.Loop() {
				podInterner = newInterner()
				stored := make([]any, n)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for i, data := range wire {
					pod := &v1.Pod{}
					if err := pod.Unmarshal(data); err != nil {
						b.Fatal(err)
					}
					stored[i] = pod
					if strip {
						obj, err := StripForScheduler(pod)
						if err != nil {
							b.Fatal(err)
						}
						stored[i] = obj
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perPod = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
				runtime.KeepAlive(stored)
			}
			b.ReportMetric(perPod, "B/pod")
		})
	}
}
