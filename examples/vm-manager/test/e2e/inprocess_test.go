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
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/examples/vm-manager/internal/app"
	"github.com/batch-scheduler/batch-scheduler/examples/vm-manager/internal/manager"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	controlplane.RunTests("vm-manager", &cp, m.Run)
}

// started is a manager running in-process.
type started struct {
	url  string
	stop func() error
}

// start runs the manager with o (listen, address file, kubeconfig and
// retry interval filled in) until the test ends, and waits for its
// address file.
func start(t *testing.T, o *app.Options) *started {
	t.Helper()
	o.Listen = "127.0.0.1:0"
	o.AddressFile = filepath.Join(t.TempDir(), "address")
	o.Kubeconfig = cp.KubeconfigPath
	o.RetryInterval = 200 * time.Millisecond
	o.SyncTimeout = 30 * time.Second
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, o) }()
	var addr string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, errors.Join(errors.New("the manager stopped"), err)
		default:
		}
		b, err := os.ReadFile(o.AddressFile)
		if err != nil {
			return false, nil
		}
		addr = strings.TrimSpace(string(b))
		return addr != "", nil
	})
	if err != nil {
		cancel()
		t.Fatalf("waiting for the manager's address file: %v", err)
	}
	stopped := false
	s := &started{url: "http://" + addr, stop: func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return errors.New("the manager did not stop within 30s")
		}
	}}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping the manager: %v", err)
		}
	})
	return s
}

// do sends method path with body and returns the status and body.
func (s *started) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// externalWorkloads lists the manager's ExternalWorkloads as
// batch-scheduler's http custom informer source does.
func (s *started) externalWorkloads(t *testing.T) map[string]v1alpha1.ExternalWorkload {
	t.Helper()
	lw, err := custominformer.NewListWatch(&rest.Config{Host: s.url},
		v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.ExternalWorkloadsResource), "", 10*time.Second, &v1alpha1.ExternalWorkload{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := lw.List(metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the ExternalWorkloads at %s: %v", s.url, err)
	}
	out := map[string]v1alpha1.ExternalWorkload{}
	for _, w := range obj.(*v1alpha1.ExternalWorkloadList).Items {
		out[w.Name] = w
	}
	return out
}

func createNode(t *testing.T, name, cpu string) {
	t.Helper()
	createLabeledNode(t, name, cpu, nil)
}

// createLabeledNode creates a Ready node of cpu cores and 16Gi with
// labels.
func createLabeledNode(t *testing.T, name, cpu string, labels map[string]string) {
	t.Helper()
	_, err := controlplane.CreateNode(context.Background(), cp.Client, &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: v1.NodeStatus{
			Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestHybridAgainstAPIServer(t *testing.T) {
	ctx := context.Background()
	createNode(t, "hybrid-1", "4")
	_, err := controlplane.CreatePod(ctx, cp.Client, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hybrid-filler"},
		Spec: v1.PodSpec{
			NodeName: "hybrid-1",
			Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("1Gi")},
			}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := start(t, app.NewOptions())

	code, body := m.do(t, "POST", "/vms", `{"name":"vm-big","cpu":"2","memory":"1Gi","host":"hybrid-1"}`)
	if want := "hybrid-1: cpu 2 requested, 1 free (pods use 3, VMs use 0 of 4)"; code != http.StatusConflict || !strings.Contains(body, want) {
		t.Errorf("a 2-cpu VM next to a 3-cpu pod on a 4-cpu node: %d %s; want 409 saying %q", code, body, want)
	}
	code, body = m.do(t, "POST", "/vms", `{"name":"vm-small","cpu":"1","memory":"1Gi","host":"hybrid-1"}`)
	var vm manager.VM
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &vm) != nil || vm.Host != "hybrid-1" || vm.Phase != manager.PhaseRunning {
		t.Fatalf("a 1-cpu VM: %d %s; want 201, Running on hybrid-1", code, body)
	}

	ws := m.externalWorkloads(t)
	w, ok := ws["vm-small"]
	if !ok || len(ws) != 1 {
		t.Fatalf("ExternalWorkloads %v; want vm-small only", ws)
	}
	if w.Spec.NodeName != "hybrid-1" || w.Spec.WorkloadKind != "vm" || w.Spec.Owner != manager.DefaultOwner ||
		w.Status.Phase != v1alpha1.ExternalWorkloadRunning || w.Spec.Resources.Cpu().String() != "1" {
		t.Errorf("ExternalWorkload vm-small: %+v", w)
	}

	code, body = m.do(t, "GET", "/metrics", "")
	if want := `vm_manager_refusals_total{reason="InsufficientCapacity"} 1`; code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("GET /metrics: %d; want %s", code, want)
	}

	if code, body := m.do(t, "DELETE", "/vms/vm-small", ""); code != http.StatusOK {
		t.Fatalf("deleting vm-small: %d %s", code, body)
	}
	if ws := m.externalWorkloads(t); len(ws) != 0 {
		t.Errorf("ExternalWorkloads after deleting the VM: %v; want none", ws)
	}
	if err := m.stop(); err != nil {
		t.Errorf("stopping: %v", err)
	}
}

// grantStore is an allocator stand-in: Grants in a resourcemanager.Store
// served over HTTP.
func grantStore(t *testing.T) (*resourcemanager.Store, string) {
	t.Helper()
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind:       v1alpha1.SchemeGroupVersion.WithKind("Grant"),
		Resource:               v1alpha1.GrantsResource,
		Example:                &v1alpha1.Grant{},
		InitialResourceVersion: time.Now().UnixMicro(),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(store.Handler())
	t.Cleanup(func() {
		store.Close()
		srv.Close()
	})
	return store, srv.URL
}

func grant(framework, node, cpu string) *v1alpha1.Grant {
	return &v1alpha1.Grant{
		ObjectMeta: metav1.ObjectMeta{Name: framework + "-" + node},
		Spec: v1alpha1.GrantSpec{
			Framework: framework, NodeName: node, Issuer: "test-allocator",
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("8Gi")},
		},
		Status: v1alpha1.GrantStatus{Phase: v1alpha1.GrantActive},
	}
}

func TestTwoLevelAgainstAPIServer(t *testing.T) {
	createNode(t, "two-level-1", "8")
	grants, url := grantStore(t)
	if err := grants.Create(grant("vms", "two-level-1", "1")); err != nil {
		t.Fatal(err)
	}
	// Another framework's grant on the same node gives the VMs nothing.
	if err := grants.Create(grant("batch", "two-level-1", "7")); err != nil {
		t.Fatal(err)
	}
	o := app.NewOptions()
	o.Framework, o.GrantsURL = "vms", url
	m := start(t, o)

	if code, body := m.do(t, "POST", "/vms", `{"name":"vm-a","cpu":"1","memory":"1Gi"}`); code != http.StatusCreated || !strings.Contains(body, `"host": "two-level-1"`) {
		t.Fatalf("vm-a inside the grant: %d %s; want 201 on two-level-1", code, body)
	}
	code, body := m.do(t, "POST", "/vms", `{"name":"vm-b","cpu":"2","memory":"1Gi"}`)
	if code != http.StatusAccepted || !strings.Contains(body, `"phase": "Pending"`) {
		t.Fatalf("vm-b beyond the grant: %d %s; want 202 Pending", code, body)
	}
	if _, ok := m.externalWorkloads(t)["vm-b"]; ok {
		t.Error("pending vm-b is published")
	}
	r, err := demand.Fetch(context.Background(), http.DefaultClient, m.url+demand.Path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Framework != "vms" || r.Waiting != 1 || r.Unmet.Cpu().String() != "2" || r.LargestUnit.Cpu().String() != "2" {
		t.Errorf("demand %+v; want framework vms, 1 waiting, 2 cpu unmet, largest unit 2 cpu", r)
	}

	// The allocator grows the grant: vm-b is placed without another call.
	g := grant("vms", "two-level-1", "3")
	if err := grants.Update(g); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, ok := m.externalWorkloads(t)["vm-b"]
		return ok, nil
	})
	if err != nil {
		_, body := m.do(t, "GET", "/vms/vm-b", "")
		t.Fatalf("vm-b not published after the grant grew: %s", body)
	}
	if code, body := m.do(t, "GET", "/vms/vm-b", ""); code != http.StatusOK || !strings.Contains(body, `"phase": "Running"`) {
		t.Errorf("vm-b after the grant grew: %d %s; want Running", code, body)
	}
}
