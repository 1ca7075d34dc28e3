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

package image

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// hostBinary writes the binary of the host's platform, taken out of its
// image's layer (not the build's copy), to a temporary file.
func hostBinary(t *testing.T) string {
	t.Helper()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	l := openLayout(t, filepath.Join(out, "oci"))
	if _, ok := l.images[platform]; !ok {
		t.Skipf("the image has no %s binary to run here", platform)
	}
	bin := file(layerFiles(t, l, platform), "batch-scheduler")
	if bin == nil {
		t.Fatalf("%s: the layer has no batch-scheduler", platform)
	}
	path := filepath.Join(t.TempDir(), "batch-scheduler")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// --version prints what make image linked in through the Makefile's
// LDFLAGS.
func TestBinaryVersion(t *testing.T) {
	bin := hostBinary(t)
	cmd := exec.CommandContext(t.Context(), bin, "--version")
	cmd.Env = []string{}
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	if want := "batch-scheduler " + version + "\n"; string(got) != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}
	cmd = exec.CommandContext(t.Context(), bin, "--version=raw")
	cmd.Env = []string{}
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --version=raw: %v", bin, err)
	}
	for _, want := range []string{`GitCommit:"` + revision + `"`, `BuildDate:"` + buildDate + `"`, `GitVersion:"` + version + `"`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("--version=raw printed %q, want it to contain %s", raw, want)
		}
	}
}

// The binary from the image, run with nothing but a kubeconfig (and an
// empty environment, as in the scratch image), binds a pending pod of
// batch-scheduler's to the cluster's only node.
func TestSchedulesAPod(t *testing.T) {
	bin := hostBinary(t)
	ctx := t.Context()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(cp.Config, kubeconfig); err != nil {
		t.Fatal(err)
	}

	const nodeName = "image-node"
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName},
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
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "image-run"}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: ns.Name},
		Spec: v1.PodSpec{
			// The default of --scheduler-name.
			SchedulerName: "batch-scheduler",
			Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}}}},
		},
	}
	if _, err := controlplane.CreatePod(ctx, cp.Client, pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Pods(ns.Name).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})

	sched := startScheduler(t, bin, "--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port=0")
	var boundTo string
	err := harness.Poll(ctx, 90*time.Second, "the pending pod to be bound", sched.Alive, func() (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns.Name).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		boundTo = p.Spec.NodeName
		return boundTo != "", nil
	})
	if err != nil || boundTo != nodeName {
		t.Fatalf("pod %s/%s bound to %q, want %s: %v; batch-scheduler's log:\n%s", ns.Name, pod.Name, boundTo, nodeName, err, sched.Tail(200))
	}
}

// startScheduler runs bin with args and an empty environment until the
// test ends, then stops it with SIGTERM (SIGKILL after
// harness.StopTimeout) and fails the test if it did not exit cleanly. Its
// output goes to a log file in a temporary directory.
func startScheduler(t *testing.T, bin string, args ...string) *harness.Process {
	t.Helper()
	p, err := harness.StartProcess(t.Context(), harness.ProcessSpec{Name: "batch-scheduler", Bin: bin, Args: args,
		Dir: t.TempDir(), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("batch-scheduler did not exit cleanly on SIGTERM: %v; its log:\n%s", err, p.Tail(200))
		}
	})
	return p
}
