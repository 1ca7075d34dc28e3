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

package perfsuite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// executor runs one workload's operations against a cluster whose
// scheduler is already running.
type executor struct {
	client  kubernetes.Interface
	dyn     dynamic.Interface
	mapper  meta.RESTMapper
	tc      *TestCase
	w       *Workload
	dir     string // the test case's directory: template paths are relative to it
	sched   *RunningScheduler
	tracker *podTracker
	timeout time.Duration
	workers int
	// profileDir, if set, gets a CPU profile of the scheduler over the
	// first profileFor of each window.
	profileDir string
	profileFor time.Duration
	logf       func(format string, args ...any)

	namespaces sync.Map // namespaces created so far
	open       *window  // the window of startCollectingMetrics, if any
	windows    []Window
	bg         sync.WaitGroup // churn
}

// window is an open collector and the scheduler's CPU at its start.
type window struct {
	c    *collector
	cpu0 time.Duration
}

func (e *executor) startWindow(name string, s podScope) (*window, error) {
	before, err := e.sched.Decisions()
	if err != nil {
		return nil, err
	}
	if e.profileDir != "" {
		path := filepath.Join(e.profileDir, fmt.Sprintf("%s-%s-%s-%d.pprof",
			e.tc.Name, strings.ReplaceAll(e.w.Name, "/", "_"), e.sched.Spec.Which, len(e.windows)))
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			if err := e.sched.Profile(path, e.profileFor); err != nil {
				e.logf("%v", err)
			}
		}()
	}
	return &window{c: e.tracker.startCollector(name, s, before), cpu0: e.sched.CPU()}, nil
}

func (e *executor) stopWindow(w *window) error {
	after, err := e.sched.Decisions()
	if err != nil {
		return err
	}
	res := e.tracker.stop(w.c, after)
	res.SchedCPU = e.sched.CPU() - w.cpu0
	res.Threshold = e.w.Threshold
	e.windows = append(e.windows, res)
	return nil
}

// run executes every op in order; background churn stops when ctx ends.
func (e *executor) run(ctx context.Context) ([]Window, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		e.bg.Wait()
	}()
	for i := range e.tc.WorkloadTemplate {
		op := &e.tc.WorkloadTemplate[i]
		if err := e.runOp(ctx, i, op); err != nil {
			return e.windows, fmt.Errorf("op %d (%s): %w", i, op.Opcode, err)
		}
		if done, err := e.sched.Exited(); done {
			return e.windows, fmt.Errorf("op %d (%s): %s exited: %v\n%s", i, op.Opcode, e.sched.Spec.Which, err, e.sched.LogTail(3000))
		}
	}
	if e.open != nil {
		return e.windows, fmt.Errorf("startCollectingMetrics without stopCollectingMetrics")
	}
	return e.windows, nil
}

func (e *executor) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(e.dir, p)
}

func (e *executor) runOp(ctx context.Context, i int, op *Op) error {
	switch op.Opcode {
	case "createNodes":
		return e.createNodes(ctx, op)
	case "createNamespaces":
		return e.createNamespaces(ctx, op)
	case "createPods":
		return e.createPods(ctx, i, op, "")
	case "createPodSets":
		n, err := e.w.count(op)
		if err != nil {
			return err
		}
		if op.CreatePodsOp == nil {
			return fmt.Errorf("createPodSets without createPodsOp")
		}
		for j := 0; j < n; j++ {
			if err := e.createPods(ctx, i, op.CreatePodsOp, fmt.Sprintf("%s-%d", op.NamespacePrefix, j)); err != nil {
				return err
			}
		}
		return nil
	case "createAny", "createPodGroups":
		if err := e.createAny(ctx, i, op); err != nil {
			return err
		}
		if op.Opcode == "createPodGroups" {
			// Upstream waits here until the scheduler's informer
			// has the groups; a second lets both schedulers see them.
			time.Sleep(time.Second)
		}
		return nil
	case "updateAny":
		return e.updateAny(ctx, op)
	case "allocResourceClaims":
		return e.allocResourceClaims(ctx, op)
	case "barrier":
		return e.barrier(ctx, op)
	case "deletePods":
		return e.deletePods(ctx, op)
	case "churn":
		return e.churn(ctx, i, op)
	case "sleep":
		d, err := e.duration(op)
		if err != nil {
			return err
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		return nil
	case "startCollectingMetrics":
		if e.open != nil {
			return fmt.Errorf("metrics are already being collected")
		}
		w, err := e.startWindow(op.Name, newScope(op.Namespaces, op.LabelSelector))
		e.open = w
		return err
	case "stopCollectingMetrics":
		if e.open == nil {
			return fmt.Errorf("no startCollectingMetrics before it")
		}
		w := e.open
		e.open = nil
		return e.stopWindow(w)
	case "startCollectingProfile", "stopCollectingProfile":
		return nil // profiles of kube-scheduler's in-process run: nothing to do here
	}
	return fmt.Errorf("opcode %q is not supported by the runner", op.Opcode)
}

func (e *executor) duration(op *Op) (time.Duration, error) {
	s := op.Duration
	if op.DurationParam != "" {
		v, err := e.w.param(op.DurationParam)
		if err != nil {
			return 0, err
		}
		s = fmt.Sprint(v)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return d, nil
}

// parallel runs fn for 0..n-1 on e.workers goroutines and returns the
// first error.
func (e *executor) parallel(ctx context.Context, n int, fn func(i int) error) error {
	var (
		mu    sync.Mutex
		first error
		next  int
		wg    sync.WaitGroup
	)
	for w := 0; w < min(e.workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil || ctx.Err() != nil
				mu.Unlock()
				if stop || i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// baseNode is upstream's node when an op names no template: 4 CPUs,
// 32Gi, 110 pods, Ready.
func baseNode() *v1.Node {
	capacity := v1.ResourceList{
		v1.ResourcePods:   resource.MustParse("110"),
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("32Gi"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "scheduler-perf-"},
		Status: v1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy(), Phase: v1.NodeRunning,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}},
	}
}

// countAndParams resolves an op's count (def when the op sets none and
// def > 0) and its template parameters.
func (e *executor) countAndParams(op *Op, def int) (int, map[string]any, error) {
	n := def
	if def == 0 || op.Count != nil || op.CountParam != "" {
		var err error
		if n, err = e.w.count(op); err != nil {
			return 0, nil, err
		}
	}
	params, err := e.w.templateParams(op.TemplateParams)
	if err != nil {
		return 0, nil, err
	}
	return n, params, nil
}

func (e *executor) createNodes(ctx context.Context, op *Op) error {
	n, params, err := e.countAndParams(op, 0)
	if err != nil {
		return err
	}
	return e.parallel(ctx, n, func(i int) error {
		node := baseNode()
		if op.NodeTemplatePath != nil {
			node = &v1.Node{}
			if err := Render(e.path(*op.NodeTemplatePath), params, i, n, node); err != nil {
				return err
			}
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		if s := op.LabelNodePrepareStrategy; s != nil && len(s.LabelValues) > 0 {
			node.Labels[s.LabelKey] = s.LabelValues[i%len(s.LabelValues)]
		}
		if s := op.UniqueNodeLabelStrategy; s != nil {
			node.Labels[s.LabelKey] = string(uuid.NewUUID())
		}
		// Nodes carry the usual kubernetes.io/hostname label, as
		// upstream's harness creates them: the name is chosen here.
		var (
			created *v1.Node
			err     error
		)
		for attempt := 0; ; attempt++ {
			n := node.DeepCopy()
			if n.Name == "" {
				n.Name = n.GenerateName + utilrand.String(5)
			}
			n.Labels[v1.LabelHostname] = n.Name
			created, err = e.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			if err == nil {
				break
			}
			if !apierrors.IsAlreadyExists(err) || node.Name != "" || attempt == 5 {
				return fmt.Errorf("creating node %d: %w", i, err)
			}
		}
		if len(created.Status.Conditions) == 0 && len(node.Status.Conditions) > 0 {
			created.Status = node.Status
			if _, err := e.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("setting node %s's status: %w", created.Name, err)
			}
		}
		return nil
	})
}

func (e *executor) ensureNamespace(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	if _, done := e.namespaces.Load(name); done {
		return nil
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	e.namespaces.Store(name, true)
	return nil
}

func (e *executor) createNamespaces(ctx context.Context, op *Op) error {
	n, params, err := e.countAndParams(op, 0)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		ns := &v1.Namespace{}
		if op.NamespaceTemplatePath != nil {
			if err := Render(e.path(*op.NamespaceTemplatePath), params, i, n, ns); err != nil {
				return err
			}
		}
		ns.Name = fmt.Sprintf("%s-%d", op.Prefix, i)
		if _, err := e.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
		e.namespaces.Store(ns.Name, true)
	}
	return nil
}

// podFactory renders the op's pod template.
type podFactory struct {
	path      string
	params    map[string]any
	batchSize int
}

func (f podFactory) pod(i, n int) (*v1.Pod, error) {
	pod := &v1.Pod{}
	if f.path == "" {
		pod.GenerateName = "pod-"
		pod.Spec.Containers = []v1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10.2",
			Ports: []v1.ContainerPort{{ContainerPort: 80}},
			Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("500Mi")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("500Mi")},
			}}}
	} else if err := Render(f.path, f.params, i, n, pod); err != nil {
		return nil, err
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["signature"] = fmt.Sprintf("signature-label-%d", i/f.batchSize)
	return pod, nil
}

func (e *executor) podFactory(op *Op) (podFactory, error) {
	params, err := e.w.templateParams(op.TemplateParams)
	if err != nil {
		return podFactory{}, err
	}
	f := podFactory{params: params, batchSize: max(1, op.SignatureBatchSize)}
	if op.SignatureBatchSizeParam != "" {
		b, err := e.w.intParam(op.SignatureBatchSizeParam)
		if err != nil {
			return podFactory{}, err
		}
		f.batchSize = max(1, b)
	}
	switch {
	case op.PodTemplatePath != nil:
		f.path = e.path(*op.PodTemplatePath)
	case e.tc.DefaultPodTemplatePath != "":
		f.path = e.path(e.tc.DefaultPodTemplatePath)
	}
	return f, nil
}

func (e *executor) createPods(ctx context.Context, opIndex int, op *Op, ns string) error {
	if ns == "" {
		var err error
		if ns, err = op.namespace(); err != nil {
			return err
		}
		if ns == "" {
			ns = fmt.Sprintf("namespace-%d", opIndex)
		}
	}
	if err := e.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	n, err := e.w.count(op)
	if err != nil {
		return err
	}
	f, err := e.podFactory(op)
	if err != nil {
		return err
	}
	steady := op.SteadyState
	if op.SteadyStateParam != "" {
		v, err := e.w.param(op.SteadyStateParam)
		if err != nil {
			return err
		}
		steady = v == true
	}
	var win *window
	if op.CollectMetrics {
		if win, err = e.startWindow(fmt.Sprintf("op %d", opIndex), newScope([]string{ns}, nil)); err != nil {
			return err
		}
	}
	create := func(i int) error {
		pod, err := f.pod(i, n)
		if err != nil {
			return err
		}
		if _, err := e.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating pod %d in %s: %w", i, ns, err)
		}
		return nil
	}
	if err := e.parallel(ctx, n, create); err != nil {
		return err
	}
	scope := newScope([]string{ns}, nil)
	switch {
	case steady:
		d, err := e.duration(op)
		if err != nil {
			return err
		}
		if err := e.steadyState(ctx, ns, n, d, create); err != nil {
			return err
		}
	case !op.SkipWaitToCompletion:
		if err := e.tracker.waitFor(ctx, scope, e.timeout, fmt.Sprintf("%d pods of %s scheduled", n, ns), func(sc, _, _ int) bool { return sc >= n }); err != nil {
			return err
		}
	}
	if win != nil {
		return e.stopWindow(win)
	}
	return nil
}

// object renders template i of n into an unstructured object and finds
// its resource.
func (e *executor) object(path string, params map[string]any, i, n int, ns string) (*unstructured.Unstructured, dynamic.ResourceInterface, error) {
	obj := &unstructured.Unstructured{}
	if err := Render(path, params, i, n, obj); err != nil {
		return nil, nil, err
	}
	gvk := obj.GroupVersionKind()
	mapping, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the API server does not serve %s: %w", path, gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if ns == "" {
			ns = obj.GetNamespace()
		}
		if ns == "" {
			ns = "default"
		}
		obj.SetNamespace(ns)
		return obj, e.dyn.Resource(mapping.Resource).Namespace(ns), nil
	}
	return obj, e.dyn.Resource(mapping.Resource), nil
}

func (e *executor) createAny(ctx context.Context, opIndex int, op *Op) error {
	ns, err := op.namespace()
	if err != nil {
		return err
	}
	if err := e.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	n, params, err := e.countAndParams(op, 1)
	if err != nil {
		return err
	}
	return e.parallel(ctx, n, func(i int) error {
		obj, res, err := e.object(e.path(op.TemplatePath), params, i, n, ns)
		if err != nil {
			return err
		}
		if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		return nil
	})
}
