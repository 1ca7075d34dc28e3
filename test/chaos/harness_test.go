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

package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// recoveryBound is how long the checker may take, after a fault ends, to
// report no difference: the bound this suite states and enforces.
const recoveryBound = 30 * time.Second

// phase is how long a fault lasts (or one round of it).
func phase() time.Duration {
	if full {
		return 45 * time.Second
	}
	return 6 * time.Second
}

// rounds is how many times a repeatable fault is injected.
func rounds() int {
	if full {
		return 3
	}
	return 1
}

// options shape a fault's environment.
type options struct {
	nodes int
	// nodeLabels adds labels to node i.
	nodeLabels map[int]map[string]string
	// handler is --event-handler (default "default"); env is added to the
	// scheduler's environment.
	handler string
	env     []string
	args    []string
	// replicas > 1 runs that many schedulers with leader election.
	replicas int
	external podwatch.ExternalUsage
	// load tuning; zero values take the defaults.
	interval   time.Duration
	maxLive    int
	loadLabels map[string]string
	labelEvery int
	// bound replaces recoveryBound.
	bound time.Duration
	// cp replaces the shared control plane.
	cp *controlplane.ControlPlane
	// prepare runs once the nodes exist, before the scheduler starts; it
	// returns more arguments for it.
	prepare func(e *env) []string
}

// env is one fault's world: a namespace, a pool of nodes, the proxy, the
// watcher, the load and the scheduler(s).
type env struct {
	t          *testing.T
	cp         *controlplane.ControlPlane
	ns         string
	pool       string
	nodes      []string
	proxy      *FaultProxy
	kubeconfig string
	watcher    *podwatch.Watcher
	load       *Load
	stopLoad   context.CancelFunc
	loadDone   chan struct{}
	scheds     []*Scheduler
	// gone are the schedulers killed on purpose and not restarted.
	gone  map[int]bool
	bound time.Duration
}

// sched is the first (or only) scheduler.
func (e *env) sched() *Scheduler { return e.scheds[0] }

func setup(t *testing.T, o options) *env {
	t.Helper()
	if o.nodes == 0 {
		o.nodes = 4
	}
	if o.handler == "" {
		o.handler = "default"
	}
	if o.replicas == 0 {
		o.replicas = 1
	}
	if o.interval == 0 {
		o.interval = 100 * time.Millisecond
	}
	if o.maxLive == 0 {
		o.maxLive = 40
	}
	// Before the cleanup below: t.TempDir's own cleanup then runs after
	// it, which prints the logs of a failed test.
	logDir := t.TempDir()
	e := &env{t: t, bound: o.bound, cp: o.cp, gone: map[int]bool{}}
	if e.cp == nil {
		e.cp = cp
	}
	cp := e.cp
	if e.bound == 0 {
		e.bound = recoveryBound
	}
	ctx := t.Context()
	e.ns = "chaos-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	if len(e.ns) > 50 {
		e.ns = e.ns[:50]
	}
	e.ns += "-" + utilrand.String(5)
	e.pool = e.ns
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", e.ns, err)
	}
	capacity := map[string]podwatch.Capacity{}
	for i := range o.nodes {
		name := fmt.Sprintf("%s-n%d", e.ns, i)
		labels := map[string]string{"chaos-pool": e.pool}
		for k, v := range o.nodeLabels[i] {
			labels[k] = v
		}
		alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("20")}
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: v1.NodeStatus{
			Capacity: alloc, Allocatable: alloc,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
		if _, err := controlplane.CreateNode(ctx, cp.Client, node); err != nil {
			t.Fatal(err)
		}
		e.nodes = append(e.nodes, name)
		capacity[name] = podwatch.Capacity{MilliCPU: 4000, Memory: 16 << 30, Pods: 20}
	}
	t.Cleanup(func() { e.cleanup() })

	var err error
	if e.proxy, err = NewFaultProxy(cp.Config); err != nil {
		t.Fatal(err)
	}
	e.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: e.proxy.URL}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	if err := clientcmd.WriteToFile(*kc, e.kubeconfig); err != nil {
		t.Fatal(err)
	}

	e.watcher = podwatch.New(cp.Client, e.ns, capacity, o.external)
	e.watcher.Settle = 15 * time.Second
	watchCtx, stopWatch := context.WithCancel(context.Background())
	t.Cleanup(stopWatch)
	if err := e.watcher.Start(watchCtx); err != nil {
		t.Fatal(err)
	}

	if o.prepare != nil {
		o.args = append(o.args, o.prepare(e)...)
	}
	args := append([]string{"--kubeconfig", e.kubeconfig, "--secure-port=0", "--node-selector", "chaos-pool=" + e.pool,
		"--event-handler", o.handler}, o.args...)
	if o.replicas > 1 {
		args = append(args, "--leader-elect=true", "--leader-elect-resource-namespace", e.ns, "--leader-elect-resource-name", "chaos",
			"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms")
	} else {
		args = append(args, "--leader-elect=false")
	}
	for i := range o.replicas {
		s, err := StartScheduler(schedulerBinary, filepath.Join(logDir, fmt.Sprintf("scheduler-%d.log", i)), o.env, args...)
		if err != nil {
			t.Fatal(err)
		}
		e.scheds = append(e.scheds, s)
	}
	for _, s := range e.scheds {
		if o.replicas == 1 {
			if err := s.WaitReady(ctx, 60*time.Second); err != nil {
				t.Fatalf("%v\n%s", err, tail(s.Log(), 40))
			}
		}
	}

	e.load = &Load{Client: cp.Client, NS: e.ns, Watcher: e.watcher, PodCPU: "500m", GangSize: 3, MaxLive: o.maxLive,
		Lifetime: 4 * time.Second, Interval: o.interval, Labels: o.loadLabels, LabelEvery: o.labelEvery}
	loadCtx, stopLoad := context.WithCancel(context.Background())
	e.stopLoad, e.loadDone = stopLoad, make(chan struct{})
	go func() {
		defer close(e.loadDone)
		e.load.Run(loadCtx)
	}()
	return e
}

// cleanup stops everything and removes what the fault created.
func (e *env) cleanup() {
	e.endLoad()
	for i, s := range e.scheds {
		if err := s.Stop(); err != nil {
			e.t.Errorf("stopping scheduler %d: %v", i, err)
		}
		if e.t.Failed() {
			e.t.Logf("scheduler %d log (%s), last lines:\n%s", i, s.LogPath, tail(s.Log(), 60))
		}
	}
	if e.proxy != nil {
		_ = e.proxy.Close()
	}
	ctx := context.Background()
	zero := int64(0)
	cp := e.cp
	_ = cp.Client.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	_ = cp.Client.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{})
	for _, n := range e.nodes {
		_ = cp.Client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
	}
}

// endLoad stops the load and waits for its last step.
func (e *env) endLoad() {
	if e.stopLoad == nil {
		return
	}
	e.stopLoad()
	<-e.loadDone
	e.stopLoad = nil
}

// waitBinds waits until the watcher saw n more binds than before, or
// fails with what.
func (e *env) waitBinds(n int, timeout time.Duration, what string) {
	e.t.Helper()
	start, _ := e.watcher.Bound()
	err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		total, _ := e.watcher.Bound()
		return total >= start+n, nil
	})
	if err != nil {
		total, _ := e.watcher.Bound()
		e.t.Fatalf("%s: %d binds in %s, want %d (load %+v)", what, total-start, timeout, n, e.load.Stats())
	}
}

// checkAlive fails the test if a scheduler exited.
func (e *env) checkAlive() {
	e.t.Helper()
	for i, s := range e.scheds {
		if done, err := s.Exited(); done && !e.gone[i] {
			e.t.Fatalf("scheduler %d exited (%v); log:\n%s", i, err, tail(s.Log(), 60))
		}
	}
}

// outcome gathers what one fault showed.
type outcome struct {
	recoveries []Recovery
	note       string
	// expected says which checker differences the fault causes on
	// purpose (objects a handler refuses); nil expects none.
	expected func(Difference) bool
}

// recover polls the checker of s after a fault ended; it records the
// round in o.
func (e *env) recover(s *Scheduler, o *outcome) {
	e.t.Helper()
	rec := s.WaitConsistentExcept(e.t.Context(), e.bound, o.expected)
	o.recoveries = append(o.recoveries, rec)
	switch {
	case errors.Is(rec.LastErr, ErrNoChecker):
		e.t.Errorf("the scheduler has no /debug/cache/verify: the consistency checker (branch h-checker) is not merged")
	case !rec.Recovered:
		e.t.Errorf("the checker did not report 0 differences within %s of the fault's end (%d runs, last error %v); differences seen:\n%s",
			e.bound, rec.Runs, rec.LastErr, diffList(rec.Differences))
	default:
		e.t.Logf("checker: 0 differences %.2fs after the fault ended (%d runs, %d distinct differences before, %d expected, %d candidates in flight)", rec.Took.Seconds(), rec.Runs, len(rec.Differences), rec.Expected, rec.InFlight)
	}
}

// finish checks that scheduling goes on, stops the load, runs the checker
// once more at rest, and records the fault's row.
func (e *env) finish(fault string, o *outcome) {
	e.t.Helper()
	e.checkAlive()
	e.waitBinds(3, 60*time.Second, "scheduling after the fault")
	e.endLoad()
	s := e.scheds[len(e.scheds)-1]
	for _, c := range e.scheds {
		if done, _ := c.Exited(); !done {
			s = c
		}
	}
	final := s.WaitConsistentExcept(e.t.Context(), e.bound, o.expected)
	if !final.Recovered && !errors.Is(final.LastErr, ErrNoChecker) {
		e.t.Errorf("at rest after the load, the checker did not report 0 differences within %s (%d runs, last error %v); differences:\n%s",
			e.bound, final.Runs, final.LastErr, diffList(final.Differences))
	}
	if final.Expected > 0 {
		o.note += fmt.Sprintf("; %d differences expected at rest", final.Expected)
	}
	violations := e.watcher.Violations(e.load.Created())
	for key, n := range e.proxy.DoubleBinds() {
		violations = append(violations, podwatch.Violation{Kind: "double-bind", At: time.Now(), Message: fmt.Sprintf("the API server accepted %d binds of pod %s", n, key)})
	}
	for _, v := range violations {
		e.t.Errorf("violation: %s", v)
	}
	r := row{fault: fault, rounds: len(o.recoveries), recovered: final.Recovered, violations: len(violations), note: o.note}
	distinct := map[string]bool{}
	for _, rec := range append(o.recoveries, final) {
		if errors.Is(rec.LastErr, ErrNoChecker) {
			r.noChecker = true
		}
		r.recovered = r.recovered && rec.Recovered
		for _, d := range rec.Differences {
			distinct[d.Kind+"/"+d.Name+"/"+d.Field] = true
		}
	}
	for _, rec := range o.recoveries {
		r.recovery = append(r.recovery, rec.Took)
	}
	r.diffs = len(distinct)
	for _, rec := range append(o.recoveries, final) {
		r.inFlight += rec.InFlight
	}
	ls := e.load.Stats()
	ws := e.watcher.Stats()
	r.created, r.binds = ls.Created, ws.Binds
	e.t.Logf("load %+v, watcher %+v, proxy %+v", ls, ws, e.proxy.Stats())
	record(r)
}

func diffList(ds []Difference) string {
	var b strings.Builder
	for i, d := range ds {
		if i == 20 {
			fmt.Fprintf(&b, "  ... and %d more\n", len(ds)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", d)
	}
	return b.String()
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// writeFile writes content to a new file in a test directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
