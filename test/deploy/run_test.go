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

package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// Where a pod finds the API server and its ServiceAccount credentials.
const (
	inClusterServer = "https://kubernetes.default.svc"
	podSADir        = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// TestSchedulerRunsWithDeployedPermissions runs batch-scheduler in this
// process as the Deployment runs it: its arguments and the ConfigMap's
// files, authenticated as the ServiceAccount with a token from the
// TokenRequest API, so with nothing but what deploy/ grants. It must take
// the leader election Lease, see an ExternalWorkload (the CRD and the
// custom informer of the ConfigMap), bind a pod, set the PodScheduled
// condition of a pod that does not fit, and write events. A permission
// missing from rbac.yaml for an informer the scheduler starts keeps it
// from ever scheduling, so this also catches informers the RBAC table
// misses.
func TestSchedulerRunsWithDeployedPermissions(t *testing.T) {
	runAsDeployed(t, installation{
		objs: built(t), namespace: saNamespace, serviceAccount: saName,
		deployment: "batch-scheduler", configMap: "batch-scheduler-config",
		lease: saNamespace + "/batch-scheduler", prefix: "deploy-run",
	})
}

// installation is one way of installing the scheduler: the objects, and
// the names runAsDeployed needs among them.
type installation struct {
	objs []*unstructured.Unstructured
	// namespace and serviceAccount name the ServiceAccount the scheduler
	// runs as.
	namespace, serviceAccount string
	// deployment and configMap are the names of the Deployment and of the
	// ConfigMap it mounts.
	deployment, configMap string
	// lease is the leader election Lease, "namespace/name".
	lease string
	// prefix starts the names of the node, namespace and ExternalWorkload
	// the run creates, so that runs on one control plane do not meet
	// (envtest runs no namespace controller: a deleted namespace stays).
	prefix string
}

// runAsDeployed runs batch-scheduler in this process as in's Deployment
// runs it (see TestSchedulerRunsWithDeployedPermissions).
func runAsDeployed(t *testing.T, in installation) {
	ctx := t.Context()
	applyObjects(t, in.objs, isKind("CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"))
	dir := t.TempDir()

	// The pod's files: the ServiceAccount token and CA as the kubelet
	// projects them, and the ConfigMap's keys.
	saDir := filepath.Join(dir, "serviceaccount")
	tr, err := cp.Client.CoreV1().ServiceAccounts(in.namespace).CreateToken(ctx, in.serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s/%s: %v", in.namespace, in.serviceAccount, err)
	}
	writeFile(t, filepath.Join(saDir, "token"), tr.Status.Token)
	writeFile(t, filepath.Join(saDir, "ca.crt"), string(cp.Config.CAData))

	var d appsv1.Deployment
	decode(t, findIn(t, in.objs, "Deployment", in.deployment), &d)
	c := schedulerContainer(t, &d)
	var cm v1.ConfigMap
	decode(t, findIn(t, in.objs, "ConfigMap", in.configMap), &cm)
	configDir := filepath.Join(dir, "config")
	mountDir := configMapMount(t, &d, c, cm.Name)
	// Paths in the pod become paths here; the in-cluster API server
	// becomes this control plane.
	local := strings.NewReplacer(mountDir, configDir, podSADir, saDir)
	var kubeconfig string
	for key, data := range cm.Data {
		path := filepath.Join(configDir, key)
		if kc, err := clientcmd.Load([]byte(data)); err == nil && len(kc.Clusters) > 0 {
			data = localKubeconfig(t, kc, data)
			kubeconfig = path
		}
		writeFile(t, path, local.Replace(data))
	}
	if kubeconfig == "" {
		t.Fatalf("ConfigMap %s has no kubeconfig for this cluster", cm.Name)
	}

	// The objects to schedule: a node with 4 CPUs of which a VM uses 3, a
	// pod that fits next to the VM and one that would fit only without it.
	nodeName := in.prefix + "-node"
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{v1.LabelHostname: nodeName}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")},
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
	if _, err := controlplane.CreateNode(ctx, cp.Client, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}) })
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	vm := &bsv1.ExternalWorkload{
		TypeMeta:   metav1.TypeMeta{APIVersion: bsv1.SchemeGroupVersion.String(), Kind: "ExternalWorkload"},
		ObjectMeta: metav1.ObjectMeta{Name: in.prefix + "-vm"},
		Spec: bsv1.ExternalWorkloadSpec{NodeName: nodeName, WorkloadKind: "vm",
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}},
	}
	vmObj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vm)
	if err != nil {
		t.Fatal(err)
	}
	ewGVR := bsv1.SchemeGroupVersion.WithResource(bsv1.ExternalWorkloadsResource)
	// Right after Established a CRD's endpoint may still answer NotFound.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(ewGVR).Create(ctx, &unstructured.Unstructured{Object: vmObj}, metav1.CreateOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("creating ExternalWorkload %s: %v", vm.Name, err)
	}
	t.Cleanup(func() { _ = dyn.Resource(ewGVR).Delete(context.Background(), vm.Name, metav1.DeleteOptions{}) })

	// The namespace's label is what the affinity term of pod
	// near-fits selects namespaces by: InterPodAffinity reads namespaces
	// through an informer, so that pod is placed only if the
	// ServiceAccount may list and watch them.
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.prefix, Labels: map[string]string{"team": in.prefix}}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	pod := func(name, cpu string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Labels: map[string]string{"app": name}},
			Spec: v1.PodSpec{
				SchedulerName: "batch-scheduler",
				Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
					Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}},
			},
		}
	}
	nearFits := pod("near-fits", "100m")
	nearFits.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fits"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": in.prefix}},
			TopologyKey:       v1.LabelHostname,
		}},
	}}
	for _, p := range []*v1.Pod{pod("fits", "500m"), pod("needs-the-vm-room", "2"), nearFits} {
		if _, err := controlplane.CreatePod(ctx, cp.Client, p); err != nil {
			t.Fatal(err)
		}
		// No kubelet finishes a graceful deletion: delete at once.
		t.Cleanup(func() {
			err := cp.Client.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if ignoreNotFound(err) != nil {
				t.Error(err)
			}
		})
	}

	stop := runScheduler(t, kubeconfig, local.Replace, c.Args)

	// What only the ServiceAccount's permissions make possible.
	var missing []string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var m []string
		leaseNS, leaseName, _ := strings.Cut(in.lease, "/")
		lease, err := cp.Client.CoordinationV1().Leases(leaseNS).Get(ctx, leaseName, metav1.GetOptions{})
		if ignoreNotFound(err) != nil {
			return false, err
		}
		if err != nil || ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
			m = append(m, "a holder of Lease "+in.lease)
		}
		fits, err := cp.Client.CoreV1().Pods(ns.Name).Get(ctx, "fits", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if fits.Spec.NodeName != nodeName {
			m = append(m, "pod fits bound to "+nodeName)
		}
		near, err := cp.Client.CoreV1().Pods(ns.Name).Get(ctx, nearFits.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if near.Spec.NodeName != nodeName {
			m = append(m, "pod near-fits (affinity with a namespace selector) bound to "+nodeName)
		}
		big, err := cp.Client.CoreV1().Pods(ns.Name).Get(ctx, "needs-the-vm-room", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if big.Spec.NodeName != "" {
			return false, fmt.Errorf("pod %s bound to %s although ExternalWorkload %s uses the room it needs", big.Name, big.Spec.NodeName, vm.Name)
		}
		if !hasCondition(big, v1.PodScheduled, v1.ConditionFalse, v1.PodReasonUnschedulable) {
			m = append(m, "condition PodScheduled=False (Unschedulable) on pod needs-the-vm-room")
		}
		events, err := cp.Client.EventsV1().Events(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if !hasEvent(events.Items, "fits", "Scheduled") {
			m = append(m, "event Scheduled for pod fits")
		}
		if !hasEvent(events.Items, "needs-the-vm-room", "FailedScheduling") {
			m = append(m, "event FailedScheduling for pod needs-the-vm-room")
		}
		missing = m // what the last complete round did not see
		return len(m) == 0, nil
	})
	if err != nil {
		t.Errorf("batch-scheduler as ServiceAccount %s/%s: %v; missing: %s", in.namespace, in.serviceAccount, err, strings.Join(missing, "; "))
	}
	if code, stderr := stop(); code != 0 {
		t.Errorf("batch-scheduler exited with %d: %s", code, stderr)
	}
}

// localKubeconfig returns data, a kubeconfig, with the in-cluster API
// server replaced by this control plane's address, checking that the
// clusters use it, so the replacement is not a silent no-op.
func localKubeconfig(t *testing.T, kc *clientcmdapi.Config, data string) string {
	t.Helper()
	for name, c := range kc.Clusters {
		if c.Server != inClusterServer {
			t.Fatalf("kubeconfig cluster %s: server %s, want %s", name, c.Server, inClusterServer)
		}
	}
	return strings.ReplaceAll(data, inClusterServer, cp.Config.Host)
}

// runScheduler starts the batch-scheduler command with the Deployment's
// args (paths mapped through local) and kubeconfig, and returns a function
// that stops it and returns its exit code and error output.
func runScheduler(t *testing.T, kubeconfig string, local func(string) string, deployArgs []string) (stop func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := app.NewSchedulerCommand()
	args := []string{"--kubeconfig=" + kubeconfig}
	for _, a := range deployArgs {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--secure-port":
			args = append(args, "--secure-port="+freePort(t))
		case "--cert-dir":
			args = append(args, "--cert-dir="+t.TempDir())
		case "-v", "--v", "--vmodule", "--logging-format":
			// Logging is process-wide, and TestMain set it up before
			// any test ran; the Deployment's own setting would be a
			// change the command refuses.
		default:
			args = append(args, local(a))
		}
	}
	cmd.SetArgs(args)
	cmd.SetContext(ctx)
	var stderr strings.Builder
	cmd.SetErr(&stderr)
	done := make(chan int, 1)
	go func() { done <- app.Execute(cmd) }()
	stopped := false
	var code int
	stop = func() (int, string) {
		if !stopped {
			stopped = true
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("batch-scheduler did not stop within 30s of being cancelled")
			}
		}
		return code, stderr.String()
	}
	t.Cleanup(func() { stop() })
	return stop
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	port, err := controlplane.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(port)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func hasCondition(p *v1.Pod, typ v1.PodConditionType, status v1.ConditionStatus, reason string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == status && c.Reason == reason {
			return true
		}
	}
	return false
}

func hasEvent(events []eventsv1.Event, pod, reason string) bool {
	for _, e := range events {
		if e.Regarding.Kind == "Pod" && e.Regarding.Name == pod && e.Reason == reason {
			return true
		}
	}
	return false
}
