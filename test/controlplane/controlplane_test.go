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
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestStartCreateStop(t *testing.T) {
	cp, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	v, err := cp.Client.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.37.1" {
		t.Fatalf("server version = %v, %v; want v1.37.1", v, err)
	}
	n, err := CreateNode(t.Context(), cp.Client, st.MakeNode().Name("n1").Capacity(map[v1.ResourceName]string{"cpu": "2"}).Obj())
	if err != nil {
		t.Fatal(err)
	}
	if n.Status.Allocatable.Cpu().String() != "2" || len(n.Spec.Taints) != 0 {
		t.Errorf("node = allocatable %v taints %v; want cpu 2 and no taints", n.Status.Allocatable, n.Spec.Taints)
	}
	p, err := CreatePod(t.Context(), cp.Client, st.MakePod().Name("p").Node("n1").Phase(v1.PodRunning).Obj())
	if err != nil || p.Status.Phase != v1.PodRunning {
		t.Fatalf("pod = %v, %v", p, err)
	}
	if _, err := os.Stat(cp.KubeconfigPath); err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := cp.Dir
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := cp.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Stop", dir)
	}
	u, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", u.Host); err == nil {
		conn.Close()
		t.Errorf("the API server still listens on %s after Stop", u.Host)
	}
}

func TestKillAndRestartAPIServerKeepsDataAndCredentials(t *testing.T) {
	cp, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	if _, err := CreateNode(t.Context(), cp.Client, st.MakeNode().Name("kept").Obj()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cp.EtcdEndpoint(), "http://127.0.0.1:") {
		t.Errorf("EtcdEndpoint() = %q, want a loopback http URL", cp.EtcdEndpoint())
	}
	if err := cp.RestartAPIServer(t.Context()); err == nil {
		t.Error("RestartAPIServer of a running API server succeeded")
	}
	for i, stop := range []func(context.Context) error{cp.KillAPIServer, cp.StopAPIServer} {
		if err := stop(t.Context()); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
		if conn, err := net.Dial("tcp", cp.APIServerAddress()); err == nil {
			conn.Close()
			t.Fatalf("stop %d: the API server still listens on %s", i, cp.APIServerAddress())
		}
		if err := cp.RestartAPIServer(t.Context()); err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
		// The same client (same address, same certificates) reads the
		// data written before.
		if _, err := cp.Client.CoreV1().Nodes().Get(t.Context(), "kept", metav1.GetOptions{}); err != nil {
			t.Fatalf("after restart %d: %v", i, err)
		}
	}
	if err := cp.Stop(); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", cp.APIServerAddress()); err == nil {
		conn.Close()
		t.Errorf("the restarted API server still listens on %s after Stop", cp.APIServerAddress())
	}
}

// The cluster runs: KWOK's kubelets start, finish and remove pods, the
// Job controller creates them, the disruption controller computes a
// PodDisruptionBudget's status.
func TestClusterRunsPods(t *testing.T) {
	cp, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	ctx := t.Context()
	node, err := CreateKwokNode(ctx, cp.Client, st.MakeNode().Name("k1").Capacity(map[v1.ResourceName]string{"cpu": "4", "pods": "10"}).Obj())
	if err != nil {
		t.Fatal(err)
	}
	if node.Status.Allocatable.Cpu().String() != "4" {
		t.Errorf("KWOK node allocatable %v, want cpu 4 as written", node.Status.Allocatable)
	}
	pods := cp.Client.CoreV1().Pods("default")
	create := func(name string, ann map[string]string) {
		t.Helper()
		p := st.MakePod().Namespace("default").Name(name).Node("k1").Label("app", "sim").RV("").Obj()
		p.Annotations = ann
		p.Spec.Containers = []v1.Container{{Name: "c", Image: "img"}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("runs", nil)
	create("succeeds", map[string]string{RunForAnnotation: "1s"})
	create("fails", map[string]string{FailAfterAnnotation: "1s"})
	want := map[string]v1.PodPhase{"runs": v1.PodRunning, "succeeds": v1.PodSucceeded, "fails": v1.PodFailed}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for name, phase := range want {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.Status.Phase != phase {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pods never reached the phases %v", want)
	}

	// Two pods of app=sim run: a budget of minAvailable 1 allows one
	// disruption, as the disruption controller computes.
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "sim", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: new(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sim"}}}}
	if _, err := cp.Client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cp.Client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "sim", metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == got.Generation && got.Status.CurrentHealthy == 1 && got.Status.DisruptionsAllowed == 1, nil
	})
	if err != nil {
		t.Fatalf("the disruption controller never computed the budget's status: %v", err)
	}

	// A graceful delete of a running pod ends with the pod gone, as a
	// kubelet would stop it.
	if err := pods.Delete(ctx, "runs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, "runs", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatal("a running pod deleted with a grace period was never removed")
	}

	// The Job controller creates the pods of a Job.
	two := int32(2)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default"}, Spec: batchv1.JobSpec{
		Parallelism: &two, Completions: &two,
		Template: v1.PodTemplateSpec{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, SchedulerName: "nobody",
			Containers: []v1.Container{{Name: "c", Image: "img"}}}}}}
	if _, err := cp.Client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=j"})
		return err == nil && len(list.Items) == 2, nil
	})
	if err != nil {
		t.Fatal("the Job controller never created the Job's 2 pods")
	}

	// A pod bound to a node before the node joins runs once it has: the
	// node's simulated kubelet runs every pod bound to it, whichever came
	// first (CreateKwokNode's resync; without it KWOK may never look at
	// the pod again).
	early := st.MakePod().Namespace("default").Name("early").Node("k2").RV("").Obj()
	early.Spec.Containers = []v1.Container{{Name: "c", Image: "img"}}
	if _, err := pods.Create(ctx, early, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateKwokNode(ctx, cp.Client, st.MakeNode().Name("k2").Capacity(map[v1.ResourceName]string{"cpu": "4", "pods": "10"}).Obj()); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "early", metav1.GetOptions{})
		return err == nil && p.Status.Phase == v1.PodRunning, nil
	})
	if err != nil {
		t.Fatal("a pod bound to node k2 before it joined never ran")
	}
}
