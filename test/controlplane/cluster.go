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

package controlplane

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// kwokConfig is KWOK's configuration and stages; see kwok.yaml.
//
//go:embed kwok.yaml
var kwokConfig []byte

const (
	// KwokNodeLabel marks the nodes the simulated kubelets (KWOK) manage;
	// its value is KwokNodeLabelValue. CreateKwokNode sets it. (A label,
	// not an annotation: KWOK's watch selects by it on the server, so a
	// node that loses it is gone for KWOK, which stops renewing its Lease.)
	KwokNodeLabel      = "kwok.x-k8s.io/node"
	KwokNodeLabelValue = "fake"
	// RunForAnnotation on a pod of a simulated node makes it succeed this
	// long (a Go duration, e.g. "30s") after it started running.
	RunForAnnotation = "sim.batch-scheduler.io/run-for"
	// FailAfterAnnotation on a pod of a simulated node makes it fail (exit
	// code 1) this long after it started running.
	FailAfterAnnotation = "sim.batch-scheduler.io/fail-after"
)

// DefaultControllers are the kube-controller-manager controllers Start
// runs unless WithControllers says otherwise: what batch workloads rely on
// (Jobs and CronJobs, ReplicaSets and Deployments, StatefulSets, the
// garbage collector and the pod garbage collector, PodDisruptionBudget
// status, namespace deletion, finished-Job cleanup, default
// ServiceAccounts, ResourceClaims from templates).
//
// The node lifecycle controllers are left out: nodes created without KWOK
// (CreateNode) have no heartbeat, and would be tainted unreachable and
// emptied after the grace period. WithNodeLifecycle adds them.
var DefaultControllers = []string{
	"job-controller", "cronjob-controller",
	"replicaset-controller", "deployment-controller", "statefulset-controller",
	"garbage-collector-controller", "pod-garbage-collector-controller",
	"disruption-controller", "namespace-controller", "ttl-after-finished-controller",
	"serviceaccount-controller", "resourceclaim-controller",
}

// WithoutCluster starts only etcd and kube-apiserver: no
// kube-controller-manager and no simulated kubelets.
func WithoutCluster() Option {
	return func(o *startOptions) { o.noCluster = true }
}

// WithoutSimulatedKubelets runs kube-controller-manager but not KWOK: the
// nodes a test creates stay as it wrote them, and pods bound to them are
// never run.
func WithoutSimulatedKubelets() Option {
	return func(o *startOptions) { o.noKWOK = true }
}

// WithControllers runs these kube-controller-manager controllers instead of
// DefaultControllers.
func WithControllers(names ...string) Option {
	return func(o *startOptions) { o.controllers = names }
}

// WithNodeLifecycle also runs the node lifecycle and taint eviction
// controllers: a node whose Lease is not renewed for grace (see LoseNode)
// turns NotReady, is tainted unreachable, and its pods are evicted once
// their tolerations run out.
func WithNodeLifecycle(grace time.Duration) Option {
	return func(o *startOptions) { o.nodeGrace = grace }
}

// process is a control plane process started by this package (not by
// envtest): kube-controller-manager or KWOK.
type process struct {
	name string
	cmd  *exec.Cmd
	// exited is closed once cmd.Wait returned.
	exited chan struct{}
	log    string
}

// startCluster starts kube-controller-manager and KWOK against the API
// server, with their output in Dir.
func (cp *ControlPlane) startCluster(assets string, o *startOptions) error {
	controllers := o.controllers
	if controllers == nil {
		controllers = DefaultControllers
	}
	kcmArgs := []string{
		"--kubeconfig=" + cp.KubeconfigPath,
		"--authentication-kubeconfig=" + cp.KubeconfigPath,
		"--authorization-kubeconfig=" + cp.KubeconfigPath,
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		// Test clusters are small and want answers fast.
		"--kube-api-qps=500", "--kube-api-burst=1000",
		"--concurrent-job-syncs=10",
		"--controllers=" + strings.Join(append(append([]string(nil), controllers...), lifecycleControllers(o.nodeGrace)...), ","),
	}
	if len(o.featureGates) > 0 {
		// The controllers of gated APIs (ResourceClaims of PodGroups,
		// say) need the gates the API server has.
		kcmArgs = append(kcmArgs, "--feature-gates="+strings.Join(o.featureGates, ","))
	}
	if o.nodeGrace > 0 {
		kcmArgs = append(kcmArgs,
			"--node-monitor-grace-period="+o.nodeGrace.String(),
			"--node-monitor-period=1s",
			"--node-startup-grace-period="+o.nodeGrace.String())
	}
	kcm, err := cp.startProcess("kube-controller-manager", filepath.Join(assets, "kube-controller-manager"), kcmArgs)
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, kcm)
	if o.noKWOK {
		return cp.waitForControllers(controllers)
	}

	configPath := filepath.Join(cp.Dir, "kwok.yaml")
	if err := os.WriteFile(configPath, kwokConfig, 0o600); err != nil {
		return fmt.Errorf("writing the KWOK configuration %s: %w", configPath, err)
	}
	kwok, err := cp.startProcess("kwok", filepath.Join(assets, "kwok"), []string{
		"--kubeconfig=" + cp.KubeconfigPath,
		"--config=" + configPath,
	})
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, kwok)
	return cp.waitForControllers(controllers)
}

// waitForControllers waits until the started processes run and, with the
// service account controller among controllers, until it created
// default/default: the sign that the controller manager works.
func (cp *ControlPlane) waitForControllers(controllers []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, p := range cp.procs {
			select {
			case <-p.exited:
				return false, fmt.Errorf("%s exited while starting; its log %s ends with:\n%s", p.name, p.log, Tail(p.log, 20))
			default:
			}
		}
		if !containsController(controllers, "serviceaccount-controller") {
			return true, nil
		}
		_, err := cp.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-controller-manager to work: %w", err)
	}
	return nil
}

func lifecycleControllers(grace time.Duration) []string {
	if grace <= 0 {
		return nil
	}
	return []string{"node-lifecycle-controller", "taint-eviction-controller"}
}

func containsController(names []string, name string) bool {
	for _, n := range names {
		if n == name || n == "*" {
			return true
		}
	}
	return false
}

// startProcess starts bin in its own process group with its output in
// Dir/<name>.log.
func (cp *ControlPlane) startProcess(name, bin string, args []string) (*process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s missing (build it with 'make control-plane'): %w", bin, err)
	}
	logPath := filepath.Join(cp.Dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the %s log %s: %w", name, logPath, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(p.exited)
	}()
	return p, nil
}

// stopCluster stops the processes startCluster started: SIGTERM, then
// SIGKILL after 10 s.
func (cp *ControlPlane) stopCluster() {
	for _, p := range cp.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range cp.procs {
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	cp.procs = nil
}

// Tail returns the last n lines of the file at path (a process's log), or
// the error that kept it from being read.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CreateKwokNode creates node as a node of the simulated kubelets: KWOK
// reports it Ready, renews its Lease, and runs the pods bound to it (see
// kwok.yaml). Capacity and allocatable are node.Status's (allocatable
// defaults to capacity and the reverse); KWOK keeps them.
//
// The node joins as a real one does: tainted node.kubernetes.io/not-ready
// (NoSchedule) until its kubelet reports it Ready, when the taint is
// removed (the node lifecycle controller's job, which does not run by
// default). A pod bound to it before KWOK manages it would never start.
// It returns once the node is Ready and untainted.
func CreateKwokNode(ctx context.Context, client kubernetes.Interface, node *v1.Node) (*v1.Node, error) {
	node = node.DeepCopy()
	node.ResourceVersion = ""
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	node.Labels[KwokNodeLabel] = KwokNodeLabelValue
	taints := node.Spec.Taints
	node.Spec.Taints = append(slices.Clone(taints), v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule})
	status := node.Status
	if status.Allocatable == nil {
		status.Allocatable = status.Capacity
	}
	if status.Capacity == nil {
		status.Capacity = status.Allocatable
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating node %s: %w", node.Name, err)
	}
	// A merge patch of the resources only: KWOK writes the conditions at
	// the same time.
	patch, err := jsonPatchOfResources(status)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node.Name, err)
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return nil, fmt.Errorf("setting the capacity of node %s: %w", node.Name, err)
	}
	var last *v1.Node
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = n
		return NodeReady(n) && len(n.Status.Allocatable) > 0, nil
	})
	if err != nil {
		var conditions []v1.NodeCondition
		if last != nil {
			conditions = last.Status.Conditions
		}
		return nil, fmt.Errorf("node %s never became Ready under KWOK (is bin/kwok running? conditions %+v): %w", node.Name, conditions, err)
	}
	untainted, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", node.Name, err)
	}
	ready, err := client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, untainted, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("removing the not-ready taint of node %s: %w", node.Name, err)
	}
	if err := resyncPodsBoundBefore(ctx, client, node.Name); err != nil {
		return nil, err
	}
	return ready, nil
}

// KwokResyncAnnotation is set by CreateKwokNode on the pods that were
// bound to a node before the node existed.
const KwokResyncAnnotation = "test.batch-scheduler.io/kwok-resync"

// resyncPodsBoundBefore touches the pending pods bound to node name before
// it joined, once KWOK runs it. KWOK (v0.8.0) lists a node's pods when it
// starts managing the node, but a pod it meets before its own node cache
// holds the node is skipped as unmanaged and never looked at again, so
// such a pod would stay Pending. A real kubelet runs every pod bound to
// it; an update event makes KWOK do the same.
func resyncPodsBoundBefore(ctx context.Context, client kubernetes.Interface, name string) error {
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return fmt.Errorf("listing the pods bound to node %s: %w", name, err)
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, KwokResyncAnnotation, name))
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != v1.PodPending || pod.DeletionTimestamp != nil {
			continue
		}
		if _, err := client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("touching pod %s/%s, bound to node %s before it joined: %w", pod.Namespace, pod.Name, name, err)
		}
	}
	return nil
}

// LoseNode makes the simulated kubelet of node name stop, by removing its
// label: KWOK no longer renews its Lease nor changes its pods, as if the
// machine had died.
// Without WithNodeLifecycle nothing else happens to the node.
func LoseNode(ctx context.Context, client kubernetes.Interface, name string) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, KwokNodeLabel))
	if _, err := client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("losing node %s: %w", name, err)
	}
	return nil
}

// NodeReady reports whether node's Ready condition is True.
func NodeReady(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func jsonPatchOfResources(s v1.NodeStatus) ([]byte, error) {
	type resources struct {
		Capacity    v1.ResourceList `json:"capacity,omitempty"`
		Allocatable v1.ResourceList `json:"allocatable,omitempty"`
	}
	type patch struct {
		Status resources `json:"status"`
	}
	if len(s.Capacity) == 0 {
		return nil, errors.New("a KWOK node needs its capacity or allocatable in Status")
	}
	return json.Marshal(patch{Status: resources{Capacity: s.Capacity, Allocatable: s.Allocatable}})
}

// DeleteNamespace deletes namespace name and waits until the namespace
// controller has emptied and removed it.
func DeleteNamespace(ctx context.Context, client kubernetes.Interface, name string) error {
	err := client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting namespace %s: %w", name, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("namespace %s was not removed: %w", name, err)
	}
	return nil
}
