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

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"

	"example.com/acme-scheduler/acme"
)

// Both builds know the built-in handlers and the vendor's.
func TestListEventHandlers(t *testing.T) {
	for _, name := range []string{"acme-scheduler", "acme-scheduler-blank"} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), binaries[name], "--list-event-handlers")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s --list-event-handlers: %v; stderr: %s", name, err, stderr.String())
			}
			got := strings.Fields(stdout.String())
			// The built-in handlers grow with batch-scheduler; the vendor's
			// and the default must be there, sorted.
			if !slices.Contains(got, "acme") || !slices.Contains(got, "default") || !slices.IsSorted(got) {
				t.Errorf("%s --list-event-handlers printed %q, want a sorted list with acme and default", name, got)
			}
		})
	}
}

// With a reserve of one CPU on 4-CPU nodes, a pod asking for 3.5 CPUs
// fits nowhere: the pool's node has 3 left, and the node outside the pool
// does not exist for the scheduler although it is empty. A pod asking for
// 2 CPUs lands on the pool's node.
func TestReserveAndPool(t *testing.T) {
	for _, name := range []string{"acme-scheduler", "acme-scheduler-blank"} {
		t.Run(name, func(t *testing.T) {
			run := strings.ToLower(name + "-" + utilrand.String(5))
			ns := createNamespace(t, run)
			// Every node of this run carries runLabel, and the scheduler
			// is started with --node-selector on it, so runs never see
			// each other's nodes.
			inPool := makeNode(run+"-pool", run, true)
			outside := makeNode(run+"-outside", run, false)
			for _, n := range []*v1.Node{inPool, outside} {
				if _, err := controlplane.CreateNode(t.Context(), cp.Client, n); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() {
				for _, n := range []*v1.Node{inPool, outside} {
					_ = cp.Client.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
				}
			})

			schedulerName := run
			cfg := filepath.Join(t.TempDir(), "acme.yaml")
			writeFile(t, cfg, `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
eventHandlers:
- name: acme
  args:
    reserve: {cpu: "1"}
`)
			startScheduler(t, binaries[name],
				"--kubeconfig", cp.KubeconfigPath,
				"--leader-elect=false",
				"--secure-port=0",
				"--scheduler-name", schedulerName,
				"--node-selector", runLabel+"="+run,
				"--event-handler=acme",
				"--config-path", cfg,
				"-v=2")

			createPod(t, ns, "big", schedulerName, "3500m")
			// One node considered, not two: the node outside the pool is
			// ignored; on the pool's node the reserve leaves 3 CPUs.
			waitUnschedulable(t, ns, "big", "0/1 nodes are available", "Insufficient cpu")

			createPod(t, ns, "small", schedulerName, "2")
			if got := waitBound(t, ns, "small"); got != inPool.Name {
				t.Errorf("pod small was bound to %s, want %s (the only node in the pool)", got, inPool.Name)
			}
			p, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), "big", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Spec.NodeName != "" {
				t.Errorf("pod big was bound to %s; with the reserve it fits nowhere", p.Spec.NodeName)
			}
		})
	}
}

// runLabel marks the nodes of one test run.
const runLabel = "e2e.example.com/run"

// makeNode returns a node with 4 CPUs and 16Gi, labelled with run, and in
// the acme pool or not.
func makeNode(name, run string, inPool bool) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{runLabel: run}}}
	if inPool {
		n.Labels[acme.DefaultPoolLabel] = "batch"
	}
	res := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("16Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	n.Status.Capacity, n.Status.Allocatable = res, res
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	return n
}

// createNamespace creates a namespace for one run; its pods are deleted
// at once when the test ends (no kubelet runs here to confirm a graceful
// deletion).
func createNamespace(t *testing.T, name string) string {
	t.Helper()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
		_ = cp.Client.CoreV1().Pods(name).DeleteCollection(ctx, now, metav1.ListOptions{})
		_ = cp.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// createPod creates a pending pod of schedulerName that requests cpu.
func createPod(t *testing.T, ns, name, schedulerName, cpu string) {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []v1.Container{{
				Name:      "work",
				Image:     "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}},
			}},
		},
	}
	if _, err := cp.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
}

// waitBound polls until the pod is bound and returns its node.
func waitBound(t *testing.T, ns, name string) string {
	t.Helper()
	var node string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		t.Fatalf("waiting for pod %s/%s to be bound: %v", ns, name, err)
	}
	return node
}

// waitUnschedulable polls until the pod has PodScheduled=False with reason
// Unschedulable and a message containing every want; binding the pod
// fails the test at once.
func waitUnschedulable(t *testing.T, ns, name string, want ...string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			return false, fmt.Errorf("the pod was bound to %s", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				last = c.Message
				for _, w := range want {
					if !strings.Contains(c.Message, w) {
						return false, nil
					}
				}
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for pod %s/%s to be unschedulable with %q: %v; last message: %q", ns, name, want, err, last)
	}
}

// startScheduler runs binary with args until the test ends, then stops it
// with SIGTERM and expects a clean exit. Its log is shown if the test
// fails.
func startScheduler(t *testing.T, binary string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		defer logFile.Close()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("sending SIGTERM to %s: %v", binary, err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("%s exited with %v", filepath.Base(binary), err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("%s did not stop within 30s of SIGTERM", filepath.Base(binary))
		}
		if t.Failed() {
			if log, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s log:\n%s", filepath.Base(binary), log)
			}
		}
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
