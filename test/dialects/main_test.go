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

package dialects

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

var (
	cp  *controlplane.ControlPlane
	dyn dynamic.Interface
)

var (
	nativeGVR       = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
	coschedulingGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	volcanoGVR      = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	compositeGVR    = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha3", Resource: "compositepodgroups"}
)

func TestMain(m *testing.M) {
	if err := app.ApplyLogging(); err != nil {
		fmt.Fprintln(os.Stderr, "applying the logging configuration:", err)
		os.Exit(1)
	}
	controlplane.RunTests("dialects", &cp, func() int {
		var err error
		if dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
			fmt.Fprintln(os.Stderr, "dynamic client:", err)
			return 1
		}
		if err := installCRDs(); err != nil {
			fmt.Fprintln(os.Stderr, "installing the third-party CRDs:", err)
			return 1
		}
		return m.Run()
	}, controlplane.WithFeatureGates("GenericWorkload=true", "TopologyAwareWorkloadScheduling=true", "DRAWorkloadResourceClaims=true",
		"CompositePodGroup=true"),
		controlplane.WithRuntimeConfig("scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true"),
		controlplane.WithControllers(impersonatedControllers()...))
}

// impersonatedControllers are the default controllers but the Job
// controller and the garbage collector: the tests here create pods by
// hand in the name of owners that no controller runs (and in the name of
// suspended Jobs, whose pods the Job controller would delete), and the
// garbage collector would delete the pods whose owner does not exist.
// test/workloads runs gangs of the real Job controller.
func impersonatedControllers() []string {
	return slices.DeleteFunc(slices.Clone(controlplane.DefaultControllers), func(c string) bool {
		return c == "job-controller" || c == "garbage-collector-controller"
	})
}

// lateCRD is the CRD of config/crds/third-party that TestMain does not
// install: TestOwnerCRDInstalledLater installs it while the scheduler
// runs, as a cluster admin installing an operator after the scheduler
// started.
const lateCRD = "kubeflow.org_pytorchjobs.yaml"

// installCRDs creates the CRDs of config/crds/third-party but lateCRD and
// waits until each is Established and served.
func installCRDs() error {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crds", "third-party", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in config/crds/third-party: %v", err)
	}
	for _, f := range files {
		if filepath.Base(f) == lateCRD {
			continue
		}
		if err := installCRD(context.Background(), f); err != nil {
			return err
		}
	}
	return nil
}

// installCRD creates the CRD in file (of config/crds/third-party) and
// waits until its resource can be listed: the scheduler discovers it.
func installCRD(ctx context.Context, file string) error {
	return controlplane.InstallCRDFile(ctx, dyn, file)
}

// startScheduler runs the real command in this process until the test
// ends, with no serving port.
func startScheduler(t *testing.T) {
	t.Helper()
	harness.InProcess(t, cp.KubeconfigPath)
}

// setup makes a namespace and nodes of cpu CPUs each for one test.
func setup(t *testing.T, nodes int, cpu string) (ns string, nodeNames []string) {
	t.Helper()
	ns = createNamespace(t)
	for range nodes {
		nodeNames = append(nodeNames, addNode(t, cpu))
	}
	return ns, nodeNames
}

func addNode(t *testing.T, cpu string) string {
	t.Helper()
	name := "n-" + utilrand.String(6)
	n := st.MakeNode().Name(name).Allocatable(map[v1.ResourceName]string{"cpu": cpu, "memory": "8Gi", "pods": "110"}).Obj()
	if _, err := controlplane.CreateNode(t.Context(), cp.Client, n); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, now) })
	return name
}

var now = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}

func createNamespace(t *testing.T) string {
	t.Helper()
	name := "d-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name += "-" + utilrand.String(5)
	nsObj := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Pods(name).DeleteCollection(context.Background(), now, metav1.ListOptions{})
	})
	return name
}

func createPod(t *testing.T, p *v1.Pod) {
	t.Helper()
	if _, err := controlplane.CreatePod(t.Context(), cp.Client, p); err != nil {
		t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}

func createObject(t *testing.T, gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s/%s: %v", gvr.Resource, ns, u.GetName(), err)
	}
}

// bound returns the pods of ns that have a node.
func bound(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := cp.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// waitBound waits until exactly want pods of ns are bound.
func waitBound(t *testing.T, ns string, want int, why string) {
	t.Helper()
	var got map[string]string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		got = bound(t, ns)
		return len(got) == want, nil
	})
	if err != nil {
		t.Fatalf("%s: want %d pods bound, have %d: %v", why, want, len(got), got)
	}
}

// stayBound checks for a few seconds that exactly want pods of ns stay
// bound: no more get a node.
func stayBound(t *testing.T, ns string, want int, why string) {
	t.Helper()
	var got map[string]string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 3*time.Second, true, func(context.Context) (bool, error) {
		got = bound(t, ns)
		return len(got) != want, nil
	})
	if err == nil {
		t.Fatalf("%s: want %d pods bound, have %d: %v", why, want, len(got), got)
	}
}

// waitUnschedulable waits until pod's PodScheduled condition is False with
// a message containing every part, and returns the message.
func waitUnschedulable(t *testing.T, ns, pod string, parts ...string) string {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type != v1.PodScheduled || c.Status != v1.ConditionFalse {
				continue
			}
			last = c.Message
			for _, part := range parts {
				if !strings.Contains(c.Message, part) {
					return false, nil
				}
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: no PodScheduled=False condition containing %q; last message %q", ns, pod, parts, last)
	}
	return last
}

// gangPod is a 1-CPU pod of batch-scheduler.
func gangPod(ns, name string) *st.PodWrapper {
	return st.MakePod().Namespace(ns).Name(name).Scheduler("batch-scheduler").Req(map[v1.ResourceName]string{"cpu": "1"})
}

// waitObject waits until the object of gvr satisfies cond, and fails with
// what and the object's last status otherwise.
func waitObject(t *testing.T, gvr schema.GroupVersionResource, ns, name, what string, cond func(u *unstructured.Unstructured) bool) {
	t.Helper()
	var last any
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = u.Object["status"]
		return cond(u), nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s: waiting for %s: %v; last status %v", gvr.Resource, ns, name, what, err, last)
	}
}

// volcanoConditionIs matches a Volcano PodGroup whose Unschedulable
// condition has status and a message containing msg.
func volcanoConditionIs(status, msg string) func(u *unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != "Unschedulable" {
				continue
			}
			got, _ := m["message"].(string)
			return m["status"] == status && strings.Contains(got, msg)
		}
		return false
	}
}

// phaseIs matches status.phase.
func phaseIs(phase string) func(u *unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return p == phase
	}
}

// conditionIs matches the PodGroupInitiallyScheduled condition.
func conditionIs(status, reason, messagePart string) func(u *unstructured.Unstructured) bool {
	return typedConditionIs("PodGroupInitiallyScheduled", status, reason, messagePart)
}

// typedConditionIs matches the condition of type condType.
func typedConditionIs(condType, status, reason, messagePart string) func(u *unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			msg, _ := m["message"].(string)
			if m["type"] == condType && m["status"] == status && m["reason"] == reason && strings.Contains(msg, messagePart) {
				return true
			}
		}
		return false
	}
}
