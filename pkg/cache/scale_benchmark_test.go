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

package cache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// scaleSize returns the cluster size of the scale benchmarks: 5,000 nodes
// and 150,000 pods (Kubernetes' documented limits), 500 and 15,000 with
// -short, or BENCH_NODES and BENCH_PODS.
func scaleSize(b *testing.B) (nodes, pods int) {
	nodes, pods = 5000, 150000
	if testing.Short() {
		nodes, pods = 500, 15000
	}
	for _, v := range []struct {
		env string
		to  *int
	}{{"BENCH_NODES", &nodes}, {"BENCH_PODS", &pods}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				b.Fatalf("%s=%q: want a positive integer", v.env, s)
			}
			*v.to = n
		}
	}
	return nodes, pods
}

// lastApplied is what kubectl apply leaves on an object: the whole
// manifest, about 1.5 KB for the pods below.
var lastApplied = func() string {
	manifest := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "team-a", "labels": map[string]string{"app": "web", "tier": "frontend"}},
		"spec": map[string]any{"containers": []map[string]any{
			{"name": "app", "image": "registry.example.com/team-a/web:1.27.3", "env": []map[string]string{{"name": "LOG_LEVEL", "value": "info"}, {"name": "LISTEN_ADDR", "value": ":8080"}, {"name": "UPSTREAM", "value": "http://api.team-a.svc.cluster.local:8080"}},
				"resources": map[string]any{"requests": map[string]string{"cpu": "250m", "memory": "256Mi"}, "limits": map[string]string{"memory": "512Mi"}}},
			{"name": "sidecar", "image": "registry.example.com/infra/proxy:3.4.1", "args": []string{"--config=/etc/proxy/config.yaml", "--admin-port=15000"},
				"resources": map[string]any{"requests": map[string]string{"cpu": "50m", "memory": "64Mi"}}},
			{"name": "logs", "image": "registry.example.com/infra/log-shipper:2.0.9", "env": []map[string]string{{"name": "SHIP_TO", "value": "logs.infra.svc:24224"}}},
		}},
	}
	raw, err := json.Marshal(manifest)
	if err != nil {
		panic(err)
	}
	return string(raw)
}()

// managedFieldsV1 is a field set as the API server records it for a pod's
// status written by the kubelet, about 1.4 KB.
var managedFieldsV1 = []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},` +
	`"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PodReadyToStartContainers\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},` +
	`"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},` +
	`"f:podIPs":{".":{},"k:{\"ip\":\"10.0.0.1\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`)

// managedFieldsSpec is the field set of the controller that created the
// pod, about 2 KB.
var managedFieldsSpec = []byte(`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},` +
	`"f:ownerReferences":{".":{},"k:{\"uid\":\"5c8e3d1a-0000-4000-8000-000000000001\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{".":{},"k:{\"name\":\"LISTEN_ADDR\"}":{".":{},"f:name":{},"f:value":{}},` +
	`"k:{\"name\":\"LOG_LEVEL\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"UPSTREAM\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{},"f:resources":{".":{},"f:limits":{},"f:requests":{}},` +
	`"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}},"k:{\"name\":\"logs\"}":{".":{},"f:env":{},"f:image":{},"f:name":{}},"k:{\"name\":\"sidecar\"}":{".":{},"f:args":{},"f:image":{},"f:name":{},"f:resources":{}}},` +
	`"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)

// realisticPod returns pod i, bound to node, as a workload controller and
// the kubelet leave it: labels, owner, the last-applied annotation,
// managedFields, three containers with environment, a service account
// token volume, and a status with conditions and container statuses.
func realisticPod(i, node int) *v1.Pod {
	t := metav1.NewTime(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	name := fmt.Sprintf("web-7d9c5b8f4-%06d", i)
	q := resource.MustParse
	env := func(kv ...string) []v1.EnvVar {
		var out []v1.EnvVar
		for j := 0; j+1 < len(kv); j += 2 {
			out = append(out, v1.EnvVar{Name: kv[j], Value: kv[j+1]})
		}
		return out
	}
	mounts := []v1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	container := func(n, image string, e []v1.EnvVar, req v1.ResourceList) v1.Container {
		return v1.Container{Name: n, Image: image, Env: e, VolumeMounts: mounts,
			Resources:                v1.ResourceRequirements{Requests: req},
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent}
	}
	cond := func(ct v1.PodConditionType) v1.PodCondition {
		return v1.PodCondition{Type: ct, Status: v1.ConditionTrue, LastTransitionTime: t}
	}
	status := func(n, image string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: n, Image: image, ImageID: image + "@sha256:0f4b3c1d2e5a6978a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718",
			ContainerID: fmt.Sprintf("containerd://%064x", i), Ready: true, Started: new(bool),
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: t}}}
	}
	podIP := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a", GenerateName: "web-7d9c5b8f4-",
			UID:             types.UID(fmt.Sprintf("9b6f0e2c-%04x-4000-8000-%012x", i>>16&0xffff, i)),
			ResourceVersion: strconv.Itoa(1000 + i), CreationTimestamp: t,
			Labels:      map[string]string{"app": "web", "tier": "frontend", "pod-template-hash": "7d9c5b8f4"},
			Annotations: map[string]string{informerhost.LastAppliedConfigAnnotation: lastApplied, "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9c5b8f4",
				UID: "5c8e3d1a-0000-4000-8000-000000000001", Controller: new(true), BlockOwnerDeletion: new(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: managedFieldsSpec}},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: managedFieldsV1}, Subresource: "status"},
			},
		},
		Spec: v1.PodSpec{
			NodeName: fmt.Sprintf("node-%05d", node), SchedulerName: "default-scheduler", ServiceAccountName: "web",
			RestartPolicy: v1.RestartPolicyAlways, DNSPolicy: v1.DNSClusterFirst, TerminationGracePeriodSeconds: new(int64(30)),
			Containers: []v1.Container{
				container("app", "registry.example.com/team-a/web:1.27.3", env("LOG_LEVEL", "info", "LISTEN_ADDR", ":8080", "UPSTREAM", "http://api.team-a.svc.cluster.local:8080", "POD_NAME", name),
					v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("256Mi")}),
				container("sidecar", "registry.example.com/infra/proxy:3.4.1", env("PROXY_ADMIN_PORT", "15000"),
					v1.ResourceList{v1.ResourceCPU: q("50m"), v1.ResourceMemory: q("64Mi")}),
				container("logs", "registry.example.com/infra/log-shipper:2.0.9", env("SHIP_TO", "logs.infra.svc:24224"), nil),
			},
			Volumes: []v1.Volume{{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: new(int64(3607))}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			}}}}},
			Tolerations: []v1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
			},
		},
		Status: v1.PodStatus{
			Phase:      v1.PodRunning,
			Conditions: []v1.PodCondition{cond("PodReadyToStartContainers"), cond(v1.PodInitialized), cond(v1.PodReady), cond(v1.ContainersReady), cond(v1.PodScheduled)},
			HostIP:     fmt.Sprintf("192.168.%d.%d", node>>8&255, node&255), PodIP: podIP, PodIPs: []v1.PodIP{{IP: podIP}},
			StartTime: &t, QOSClass: v1.PodQOSBurstable,
			ContainerStatuses: []v1.ContainerStatus{status("app", "registry.example.com/team-a/web:1.27.3"),
				status("sidecar", "registry.example.com/infra/proxy:3.4.1"), status("logs", "registry.example.com/infra/log-shipper:2.0.9")},
		},
	}
}

// realisticNode returns node i with capacity for 110 pods, labels and
// conditions as a kubelet reports them.
func realisticNode(i int) *v1.Node {
	t := metav1.NewTime(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	name := fmt.Sprintf("node-%05d", i)
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110")}
	var conds []v1.NodeCondition
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady} {
		s := v1.ConditionFalse
		if c == v1.NodeReady {
			s = v1.ConditionTrue
		}
		conds = append(conds, v1.NodeCondition{Type: c, Status: s, LastHeartbeatTime: t, LastTransitionTime: t, Reason: "Kubelet" + string(c)})
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("node-uid-%d", i)), ResourceVersion: strconv.Itoa(10 + i),
			Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3), "node.kubernetes.io/instance-type": "m6.16xlarge"}},
		Status: v1.NodeStatus{Capacity: capacity, Allocatable: capacity, Conditions: conds,
			Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: fmt.Sprintf("192.168.%d.%d", i>>8&255, i&255)}, {Type: v1.NodeHostName, Address: name}}},
	}
}

// decodedPods returns pods pods spread over nodes nodes, each encoded in
// protobuf and decoded again, so that none shares memory with another, as
// objects decoded from the API server do not.
func decodedPods(b *testing.B, pods, nodes int) []v1.Pod {
	out := make([]v1.Pod, pods)
	for i := range out {
		data, err := realisticPod(i, i%nodes).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		if err := out[i].Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

func decodedNodes(b *testing.B, nodes int) []v1.Node {
	out := make([]v1.Node, nodes)
	for i := range out {
		data, err := realisticNode(i).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		if err := out[i].Unmarshal(data); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// listSource makes client list pods and nodes (lists, once each) and watch
// nothing.
func listSource(pods []v1.Pod, nodes []v1.Node) *fake.Clientset {
	client := fake.NewClientset()
	podList := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "200000"}, Items: pods}
	nodeList := &v1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "200000"}, Items: nodes}
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		l := podList
		// The informer keeps the items; a relist would get none.
		podList = &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "200000"}}
		return true, l, nil
	})
	client.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		l := nodeList
		nodeList = &v1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "200000"}}
		return true, l, nil
	})
	client.PrependWatchReactor("*", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, watch.NewFake(), nil
	})
	return client
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkInitialSync lists 5,000 nodes and 150,000 realistic pods
// through the real informers and measures the time until the handler has
// synced, and the heap the informers and the cache hold per pod (s/sync,
// B/pod; cpu-s/sync is the process's CPU time over the sync, less
// disturbed than wall time on a shared machine), against a baseline in the same run: bare pod and node
// informers with a no-op handler. Each case runs with the scheduler's
// transform (informerhost.StripForScheduler, as NewInformerFactory sets it) and
// without.
func BenchmarkInitialSync(b *testing.B) {
	klog.SetOutput(devNull{})
	klog.LogToStderr(false)
	nodes, pods := scaleSize(b)
	for _, tc := range []struct {
		name      string
		transform bool
		scheduler bool
	}{
		{"baseline=bare-informers+noop-handler/transform", true, false},
		{"informers+dispatch+default-handler+cache/transform", true, true},
		{"baseline=bare-informers+noop-handler/no-transform", false, false},
		{"informers+dispatch+default-handler+cache/no-transform", false, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var total, cpuTotal time.Duration
			var bytes uint64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				before := heapInUse()
				client := listSource(decodedPods(b, pods, nodes), decodedNodes(b, nodes))
				factory := informers.NewSharedInformerFactory(client, 0)
				if tc.transform {
					factory = informerhost.NewInformerFactory(client, 0)
				}
				ctx, cancel := context.WithCancel(context.Background())
				b.StartTimer()
				start, cpuStart := time.Now(), processCPU()
				var synced func() bool
				var keep any
				if tc.scheduler {
					c, err := cache.New(cache.Options{Client: client, InformerFactory: factory, Resources: []framework.EventResource{}})
					if err != nil {
						b.Fatal(err)
					}
					h, err := defaulthandler.New(ctx, c, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := c.Run(ctx, h); err != nil {
						b.Fatal(err)
					}
					synced = func() bool { ok, _ := c.HandlersSynced(); return ok }
					keep = c
				} else {
					var regs []toolscache.ResourceEventHandlerRegistration
					for _, inf := range []toolscache.SharedIndexInformer{factory.Core().V1().Pods().Informer(), factory.Core().V1().Nodes().Informer()} {
						reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) {}})
						if err != nil {
							b.Fatal(err)
						}
						regs = append(regs, reg)
					}
					factory.Start(ctx.Done())
					synced = func() bool { return regs[0].HasSynced() && regs[1].HasSynced() }
					keep = factory
				}
				if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Minute, true,
					func(context.Context) (bool, error) { return synced(), nil }); err != nil {
					b.Fatalf("not synced: %v", err)
				}
				total += time.Since(start)
				cpuTotal += processCPU() - cpuStart
				b.StopTimer()
				after := heapInUse()
				runtime.KeepAlive(keep)
				runtime.KeepAlive(client)
				bytes += after - before
				cancel()
				factory.Shutdown()
				b.StartTimer()
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/sync")
			b.ReportMetric(cpuTotal.Seconds()/float64(b.N), "cpu-s/sync")
			b.ReportMetric(float64(bytes)/float64(b.N)/float64(pods), "B/pod")
		})
	}
}

// devNull discards klog's output.
type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }
