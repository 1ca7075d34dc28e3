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

package operators

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// testNodeLabel marks the nodes of one test; its scheduler uses only
// those (--node-selector).
const testNodeLabel = "test.batch-scheduler.io/id"

// waitTimeout bounds every wait for the operator, the scheduler or KWOK.
const waitTimeout = 2 * time.Minute

// env is what one test of one integration runs against: a namespace,
// nodes of its own, batch-scheduler, the operator and a watcher.
type env struct {
	t  *testing.T
	in integration
	ns string
	id string
	// nodes are the test's nodes and their allocatable.
	nodes map[string]podwatch.Capacity
	op    *operator
	watch *podwatch.Watcher

	// mu guards quorums: the quorum the watcher holds each RayCluster's
	// pods to, by RayCluster name.
	mu      sync.Mutex
	quorums map[string]int
}

// newEnv makes a namespace and one KWOK node per entry of nodeCPUs (with
// that many CPUs, 8Gi of memory), and starts batch-scheduler, the
// operator with integration in, and the watcher.
func newEnv(t *testing.T, in integration, nodeCPUs ...string) *env {
	t.Helper()
	e := &env{t: t, in: in, id: utilrand.String(6), nodes: map[string]podwatch.Capacity{}, quorums: map[string]int{}}
	e.ns = createNamespace(t)
	for _, cpu := range nodeCPUs {
		e.addNode(cpu)
	}
	startScheduler(t, testNodeLabel+"="+e.id)
	e.op = startOperator(t, in, e.ns)

	ctx, cancel := context.WithCancel(context.Background())
	e.watch = podwatch.New(cp.Client, e.ns, e.nodes, nil)
	// Binds of one gang are separate calls: a gang may take a moment to
	// reach its quorum, never longer.
	e.watch.Settle = 5 * time.Second
	e.watch.GangOf = podwatch.ControllerGang("RayCluster", e.quorum)
	if err := e.watch.Start(ctx); err != nil {
		cancel()
		t.Fatalf("starting the pod watcher of %s: %v", e.ns, err)
	}
	t.Cleanup(cancel)
	t.Cleanup(func() {
		for _, v := range e.watch.Violations(nil) {
			t.Errorf("pod watcher: %s", v)
		}
	})
	return e
}

// expectQuorum sets the quorum the watcher holds the pods of RayCluster
// name to (what its PodGroup's minMember says).
func (e *env) expectQuorum(name string, quorum int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.quorums[name] = quorum
}

func (e *env) quorum(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.quorums[name]
}

func (e *env) addNode(cpu string) string {
	e.t.Helper()
	name := "kr-" + e.id + "-" + utilrand.String(4)
	alloc := map[v1.ResourceName]string{"cpu": cpu, "memory": "8Gi", "pods": "110"}
	n := st.MakeNode().Name(name).Label(testNodeLabel, e.id).Allocatable(alloc).Obj()
	if _, err := controlplane.CreateKwokNode(e.t.Context(), cp.Client, n); err != nil {
		e.t.Fatalf("creating KWOK node %s: %v", name, err)
	}
	e.t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), name, now) })
	cpuQ, memQ := resource.MustParse(cpu), resource.MustParse("8Gi")
	e.nodes[name] = podwatch.Capacity{MilliCPU: cpuQ.MilliValue(), Memory: memQ.Value(), Pods: 110}
	return name
}

// poll waits until cond holds, failing the test with what and cond's last
// explanation otherwise, or at once if the operator exited.
func (e *env) poll(what string, cond func(ctx context.Context) (bool, string, error)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.op.exitErr(); err != nil {
			return false, err
		}
		ok, why, err := cond(ctx)
		if ctx.Err() != nil {
			// The poll's deadline cut the last API call: keep what was
			// seen before it.
			return false, ctx.Err()
		}
		if why != "" {
			last = why
		} else if err != nil {
			last = err.Error()
		}
		return ok, err
	})
	if err != nil {
		e.t.Fatalf("%s (%s): %v; last seen: %s", what, e.ns, err, last)
	}
}

// holds checks for d that cond keeps holding.
func (e *env) holds(what string, d time.Duration, cond func(ctx context.Context) (bool, string, error)) {
	e.t.Helper()
	var last string
	// cond gets the test's context, not the poll's, whose deadline would
	// fail its last API call.
	err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, d, true, func(context.Context) (bool, error) {
		ok, why, err := cond(e.t.Context())
		last = why
		if err != nil {
			return false, err
		}
		return !ok, nil
	})
	if err == nil {
		e.t.Fatalf("%s (%s): no longer holds: %s", what, e.ns, last)
	}
	if e.t.Context().Err() == nil && !wait.Interrupted(err) {
		e.t.Fatalf("%s (%s): %v", what, e.ns, err)
	}
}

// pods returns the pods of RayCluster name.
func (e *env) pods(ctx context.Context, name string) ([]v1.Pod, error) {
	list, err := cp.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: "ray.io/cluster=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of RayCluster %s/%s: %w", e.ns, name, err)
	}
	return list.Items, nil
}

// describe is a one-line summary of pods: name, node and phase.
func describe(pods []v1.Pod) string {
	var parts []string
	for _, p := range pods {
		parts = append(parts, fmt.Sprintf("%s@%s:%s", p.Name, p.Spec.NodeName, p.Status.Phase))
	}
	return fmt.Sprintf("%d pods [%s]", len(pods), strings.Join(parts, " "))
}

// waitRunning waits until RayCluster name has exactly want pods, all bound
// and Running, and returns them.
func (e *env) waitRunning(name string, want int) []v1.Pod {
	e.t.Helper()
	var pods []v1.Pod
	e.poll(fmt.Sprintf("RayCluster %s: waiting for %d pods Running", name, want), func(ctx context.Context) (bool, string, error) {
		var err error
		if pods, err = e.pods(ctx, name); err != nil {
			return false, "", err
		}
		if len(pods) != want {
			return false, describe(pods), nil
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" || p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
				return false, describe(pods), nil
			}
		}
		return true, describe(pods), nil
	})
	return pods
}

// waitCreated waits until RayCluster name has want pods (bound or not).
func (e *env) waitCreated(name string, want int) {
	e.t.Helper()
	e.poll(fmt.Sprintf("RayCluster %s: waiting for the operator to create %d pods", name, want), func(ctx context.Context) (bool, string, error) {
		pods, err := e.pods(ctx, name)
		if err != nil {
			return false, "", err
		}
		return len(pods) == want, describe(pods), nil
	})
}

// noneBound reports whether no pod of RayCluster name has a node.
func (e *env) noneBound(name string) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		pods, err := e.pods(ctx, name)
		if err != nil {
			return false, "", err
		}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				return false, describe(pods), nil
			}
		}
		return true, describe(pods), nil
	}
}

// waitGone waits until RayCluster name has no pod left.
func (e *env) waitGone(name string) {
	e.t.Helper()
	e.poll(fmt.Sprintf("RayCluster %s: waiting for its pods to go", name), func(ctx context.Context) (bool, string, error) {
		pods, err := e.pods(ctx, name)
		if err != nil {
			return false, "", err
		}
		return len(pods) == 0, describe(pods), nil
	})
}

// waitUnschedulable waits until every pod of RayCluster name (want of
// them) has PodScheduled=False with a message containing every part, and
// returns the messages by pod.
func (e *env) waitUnschedulable(name string, want int, parts ...string) map[string]string {
	e.t.Helper()
	msgs := map[string]string{}
	e.poll(fmt.Sprintf("RayCluster %s: waiting for %d pods to say why they wait (%q)", name, want, parts), func(ctx context.Context) (bool, string, error) {
		pods, err := e.pods(ctx, name)
		if err != nil {
			return false, "", err
		}
		clear(msgs)
		// every pod's PodScheduled condition, for the failure message.
		all := map[string]string{}
		for _, p := range pods {
			all[p.Name] = "no PodScheduled condition"
			for _, c := range p.Status.Conditions {
				if c.Type != v1.PodScheduled {
					continue
				}
				all[p.Name] = fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
				if c.Status == v1.ConditionFalse && containsAll(c.Message, parts) {
					msgs[p.Name] = c.Message
				}
			}
		}
		return len(pods) == want && len(msgs) == want, fmt.Sprintf("%s; conditions %q", describe(pods), all), nil
	})
	return msgs
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// podGroup returns the PodGroup the operator wrote for RayCluster name.
func (e *env) podGroup(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	pg, err := dyn.Resource(e.in.podGroupGVR).Namespace(e.ns).Get(ctx, e.in.podGroupName(name), metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting %s %s/%s: %w", e.in.podGroupGVR.GroupResource(), e.ns, e.in.podGroupName(name), err)
	}
	return pg, nil
}

// waitPodGroup waits until the PodGroup of RayCluster name says minMember
// and, if minCPU is set, spec.minResources.cpu minCPU.
func (e *env) waitPodGroup(name string, minMember int64, minCPU string) {
	e.t.Helper()
	e.poll(fmt.Sprintf("RayCluster %s: waiting for its PodGroup with minMember %d", name, minMember), func(ctx context.Context) (bool, string, error) {
		pg, err := e.podGroup(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		got, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
		cpu, _, _ := unstructured.NestedString(pg.Object, "spec", "minResources", "cpu")
		why := fmt.Sprintf("spec %v", pg.Object["spec"])
		if got != minMember {
			return false, why, nil
		}
		if minCPU != "" {
			got, err := resource.ParseQuantity(cpu)
			if err != nil || got.Cmp(resource.MustParse(minCPU)) != 0 {
				return false, why, nil
			}
		}
		return true, why, nil
	})
}

// waitPodGroupPhase waits until the PodGroup of RayCluster name has
// status.phase phase (batch-scheduler writes it).
func (e *env) waitPodGroupPhase(name, phase string) {
	e.t.Helper()
	e.poll(fmt.Sprintf("RayCluster %s: waiting for its PodGroup's phase %s", name, phase), func(ctx context.Context) (bool, string, error) {
		pg, err := e.podGroup(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		got, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
		return got == phase, fmt.Sprintf("status %v", pg.Object["status"]), nil
	})
}

var now = metav1.DeleteOptions{GracePeriodSeconds: new(int64)}

func createNamespace(t *testing.T) string {
	t.Helper()
	name := "kr-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.TrimRight(name, "-") + "-" + utilrand.String(5)
	nsObj := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), nsObj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	// Runs last, once the test's operator and scheduler stopped. The pods
	// go at once, so that no pending pod is left for the next test's
	// scheduler (which serves the same scheduler names); the namespace
	// controller deletes the rest (RayClusters, PodGroups) unwaited.
	t.Cleanup(func() {
		ctx := context.Background()
		_ = cp.Client.CoreV1().Pods(name).DeleteCollection(ctx, now, metav1.ListOptions{})
		_ = cp.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// startScheduler runs the real command in this process until the test
// ends, with no serving port, on the nodes nodeSelector selects, for the
// pods of every scheduler name KubeRay's integrations set.
func startScheduler(t *testing.T, nodeSelector string) {
	t.Helper()
	args := []string{"--node-selector", nodeSelector}
	for _, in := range integrations {
		args = append(args, "--scheduler-name", in.schedulerName)
	}
	harness.InProcess(t, cp.KubeconfigPath, args...)
}

// operator is a running bin/kuberay-operator.
type operator struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	// stopping is closed before the test stops it: an exit after that
	// is expected.
	stopping chan struct{}
}

// operatorArgs are the flags the operator runs with: the integration,
// only ns watched, no leader election, no metrics or probe listeners
// (their default ports are fixed), logs in plain text.
func operatorArgs(in integration, ns string) []string {
	return []string{
		"--kubeconfig=" + cp.KubeconfigPath,
		"--batch-scheduler=" + in.name,
		"--watch-namespace=" + ns,
		"--enable-leader-election=false",
		"--metrics-addr=0",
		"--health-probe-bind-address=0",
		"--log-stdout-encoder=console",
	}
}

// startOperator runs the KubeRay operator with integration in, watching
// only ns, until the test ends. Its log is printed if the test fails.
func startOperator(t *testing.T, in integration, ns string) *operator {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "kuberay-operator.log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("creating the operator log %s: %v", logPath, err)
	}
	cmd := exec.Command(operatorBin, operatorArgs(in, ns)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		t.Fatalf("starting %s: %v", operatorBin, err)
	}
	op := &operator{cmd: cmd, log: logPath, exited: make(chan struct{}), stopping: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(op.exited)
	}()
	t.Cleanup(func() {
		close(op.stopping)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-op.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-op.exited
		}
		if t.Failed() {
			t.Logf("KubeRay operator log (%s), last lines:\n%s", logPath, controlplane.Tail(logPath, 40))
		}
	})
	return op
}

// exitErr says, before the test stops it, whether the operator exited.
func (op *operator) exitErr() error {
	select {
	case <-op.stopping:
		return nil
	case <-op.exited:
		return fmt.Errorf("the KubeRay operator exited (%s); its log ends with:\n%s", op.cmd.ProcessState, controlplane.Tail(op.log, 20))
	default:
		return nil
	}
}
