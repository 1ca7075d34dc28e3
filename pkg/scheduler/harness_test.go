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

package scheduler

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	k8smetrics "k8s.io/component-base/metrics"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics/metricstest"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// testSchedulerName is the scheduler name of the pods the builders make.
const testSchedulerName = "batch-scheduler"

// res shortens resource maps in the builders.
type res = map[v1.ResourceName]string

// testHandle is the framework.Handle the app builds, in small.
type testHandle struct {
	client   kubernetes.Interface
	recorder events.EventRecorder
	// informers is the factory the harness's cache runs.
	informers informers.SharedInformerFactory
}

func (h *testHandle) ClientSet() kubernetes.Interface     { return h.client }
func (h *testHandle) EventRecorder() events.EventRecorder { return h.recorder }
func (h *testHandle) SharedInformerFactory() informers.SharedInformerFactory {
	return h.informers
}

// harness is a Scheduler over a real cache, the in-tree plugins (plus,
// optionally, a hook plugin), a fake clientset and a fake event recorder.
// Nothing runs in the background: tests drive cycles with cycle().
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	recorder *events.FakeRecorder
	cache    *cache.SchedulerCache
	sched    *Scheduler
	metrics  *Metrics
	hook     *hookPlugin
}

type harnessConfig struct {
	// hook, when set, is enabled at PreFilter, Filter, Reserve and Permit
	// after the default plugins, and at Bind before them.
	hook *hookPlugin
	// opts changes the scheduler's options before New.
	opts func(*Options)
	// postFilter, when not nil, replaces the profile's PostFilter
	// plugins: names of in-tree plugins and of the plugins in extra,
	// which are registered.
	postFilter []string
	extra      []framework.Plugin
	// registry, when not nil, replaces the in-tree registry.
	registry *frameworkruntime.Registry
	// score, when not nil, replaces the profile's PreScore and Score
	// plugins (names of in-tree plugins and of the plugins in extra).
	score frameworkruntime.PluginSet
	// queue, when not nil, replaces the queue's options (a backoff of
	// 1ns by default).
	queue *schedulingqueue.Options
}

func newHarness(t *testing.T) *harness { return newHarnessWith(t, harnessConfig{}) }

func newHarnessWith(t *testing.T, cfg harnessConfig) *harness {
	t.Helper()
	client := fake.NewClientset()
	recorder := events.NewFakeRecorder(1000)
	// A backoff of 1ns: a job that a move request requeues goes straight
	// to the active queue. (Nothing flushes the backoff queue, as the cache
	// does not Run.)
	factory := informerhost.NewInformerFactory(client, 0)
	queue := schedulingqueue.Options{InitialBackoff: time.Nanosecond, MaxBackoff: time.Nanosecond}
	if cfg.queue != nil {
		queue = *cfg.queue
	}
	c, err := cache.New(cache.Options{Client: client, InformerFactory: factory, Queue: queue})
	if err != nil {
		t.Fatalf("cache.New: %v", err)
	}
	h := &testHandle{client: client, recorder: recorder, informers: factory}
	reg := plugins.NewInTreeRegistry()
	if cfg.registry != nil {
		reg = cfg.registry
	}
	spec := plugins.DefaultProfile(testSchedulerName)
	if cfg.hook != nil {
		if err := reg.Register(hookName, func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
			return cfg.hook, nil
		}); err != nil {
			t.Fatalf("registering the hook plugin: %v", err)
		}
		for _, point := range []frameworkruntime.ExtensionPoint{frameworkruntime.PreFilterPoint, frameworkruntime.FilterPoint, frameworkruntime.ReservePoint, frameworkruntime.PermitPoint} {
			spec.Plugins[point] = append(spec.Plugins[point], frameworkruntime.PluginRef{Name: hookName})
		}
		spec.Plugins[frameworkruntime.BindPoint] = append(frameworkruntime.PluginSet{{Name: hookName}}, spec.Plugins[frameworkruntime.BindPoint]...)
	}
	for _, p := range cfg.extra {
		if err := reg.Register(p.Name(), func(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
			return p, nil
		}); err != nil {
			t.Fatalf("registering plugin %s: %v", p.Name(), err)
		}
	}
	if cfg.score != nil {
		spec.Plugins[frameworkruntime.PreScorePoint] = nil
		spec.Plugins[frameworkruntime.ScorePoint] = cfg.score
	}
	if cfg.postFilter != nil {
		set := frameworkruntime.PluginSet{}
		for _, name := range cfg.postFilter {
			set = append(set, frameworkruntime.PluginRef{Name: name})
		}
		spec.Plugins[frameworkruntime.PostFilterPoint] = set
	}
	fwk, err := frameworkruntime.NewFramework(t.Context(), reg, spec, h)
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	m, err := NewMetrics(k8smetrics.NewKubeRegistry())
	if err != nil {
		t.Fatalf("NewMetrics: %v", err)
	}
	opts := Options{
		Cache:       c,
		Queue:       c.Queue(),
		Client:      client,
		Profiles:    map[string]*frameworkruntime.Framework{testSchedulerName: fwk},
		Recorder:    recorder,
		Metrics:     m,
		BindBackoff: time.Millisecond,
	}
	if cfg.opts != nil {
		cfg.opts(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// Binds and status patches left running by a failed test must not
	// outlive it.
	t.Cleanup(s.bindWG.Wait)
	// Every condition is written at once; the tests of the rewrite
	// interval set it themselves.
	s.conditions.minRewrite = 0
	s.events.repeat = 0
	return &harness{t: t, client: client, recorder: recorder, cache: c, sched: s, metrics: m, hook: cfg.hook}
}

// addNode adds a node with cpu and room for 110 pods to the cache.
func (h *harness) addNode(name, cpu string) {
	h.t.Helper()
	h.addNodeObj(st.MakeNode().Name(name).Capacity(res{v1.ResourceCPU: cpu, v1.ResourcePods: "110"}).Obj())
}

func (h *harness) addNodeObj(node *v1.Node) {
	h.t.Helper()
	if err := h.cache.AddOrUpdateNode(node); err != nil {
		h.t.Fatalf("AddOrUpdateNode(%s): %v", node.Name, err)
	}
}

// addPod creates pod in the fake API server (without recording an action)
// and hands it to the cache as the informer would: pending, or bound when
// it has a node.
func (h *harness) addPod(pod *v1.Pod) {
	h.t.Helper()
	// The API server first: the informer only reports pods that exist.
	if err := h.client.Tracker().Add(pod); err != nil {
		h.t.Fatalf("adding pod %s to the fake clientset: %v", pod.Name, err)
	}
	h.addPodToCacheOnly(pod)
}

// addPodToCacheOnly hands pod to the cache but not to the API server, as
// if it were deleted while the scheduler still had it.
func (h *harness) addPodToCacheOnly(pod *v1.Pod) {
	h.t.Helper()
	var err error
	if pod.Spec.NodeName != "" {
		err = h.cache.AddPod(pod)
	} else {
		err = h.cache.AddPendingPod(pod)
	}
	if err != nil {
		h.t.Fatalf("adding pod %s to the cache: %v", pod.Name, err)
	}
}

// cycle runs one scheduling cycle and waits for the binds and status
// updates it started. It fails the test if no job is active, as Pop would
// block.
func (h *harness) cycle() {
	h.t.Helper()
	if n := h.cache.Queue().Lengths().Active; n == 0 {
		h.t.Fatalf("no active job to schedule; queue: %+v", h.cache.Queue().Lengths())
	}
	ctx, cancel := context.WithTimeout(h.t.Context(), 30*time.Second)
	defer cancel()
	h.sched.scheduleOne(ctx)
	h.sched.bindWG.Wait()
}

// requeueAll moves every parked job as a cluster event that may help any
// would.
func (h *harness) requeueAll() {
	h.cache.MoveAllToActiveOrBackoffQueue(framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All, Label: "Test"}, nil, nil)
}

// bindings returns the pods/binding creations the fake clientset saw, in
// order.
func (h *harness) bindings() []*v1.Binding {
	var out []*v1.Binding
	for _, a := range h.client.Actions() {
		if a.GetVerb() != "create" || a.GetResource().Resource != "pods" || a.GetSubresource() != "binding" {
			continue
		}
		out = append(out, a.(clienttesting.CreateAction).GetObject().(*v1.Binding))
	}
	return out
}

// boundTo maps pod name to the node of its binding.
func (h *harness) boundTo() map[string]string {
	out := map[string]string{}
	for _, b := range h.bindings() {
		out[b.Name] = b.Target.Name
	}
	return out
}

// statusPatches returns the patches of pods/status, in order.
func (h *harness) statusPatches() []clienttesting.PatchAction {
	var out []clienttesting.PatchAction
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
			out = append(out, a.(clienttesting.PatchAction))
		}
	}
	return out
}

// events drains the events recorded so far.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// eventsWith returns the events that start with prefix.
func eventsWith(evts []string, prefix string) []string {
	var out []string
	for _, e := range evts {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// task returns the cache's task of pod.
func (h *harness) task(pod *v1.Pod) *framework.TaskInfo {
	h.t.Helper()
	job, ok := h.cache.Job(dialects.Resolver().JobID(pod))
	if !ok {
		h.t.Fatalf("job of pod %s is not in the cache", pod.Name)
	}
	t, ok := job.Tasks[pod.UID]
	if !ok {
		h.t.Fatalf("pod %s is not a task of its job in the cache", pod.Name)
	}
	return t
}

// taskDump returns the dump of pod's task.
func (h *harness) taskDump(pod *v1.Pod) cache.TaskDump {
	h.t.Helper()
	for _, j := range h.cache.Dump().Jobs {
		for _, td := range j.Tasks {
			if td.UID == pod.UID {
				return td
			}
		}
	}
	h.t.Fatalf("pod %s is not in the cache dump", pod.Name)
	return cache.TaskDump{}
}

// requestedCPU returns the milli-CPU the cache accounts on node.
func (h *harness) requestedCPU(node string) int64 {
	h.t.Helper()
	ni, ok := h.cache.NodeInfo(node)
	if !ok {
		h.t.Fatalf("node %s is not in the cache", node)
	}
	return ni.Requested.MilliCPU
}

// apiPod returns the pod as the fake API server has it.
func (h *harness) apiPod(pod *v1.Pod) *v1.Pod {
	h.t.Helper()
	got, err := h.client.CoreV1().Pods(pod.Namespace).Get(h.t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("getting pod %s: %v", pod.Name, err)
	}
	return got
}

// attempts returns the Attempts counter of result for the test profile.
func (h *harness) attempts(result string) float64 {
	return metricstest.CounterValue(h.t, h.metrics.Attempts.WithLabelValues(result, testSchedulerName))
}

// hookName is the registry name of hookPlugin.
const hookName = "TestHook"

// hookPlugin runs test code at PreFilter, Filter, Reserve, Permit and
// Bind, and counts Unreserve calls. A nil func passes (at Bind: skips, so
// that DefaultBinder binds).
type hookPlugin struct {
	preFilter    func(job *framework.Job) *framework.Status
	preFilterPod func(pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status
	filter       func(pod *v1.Pod, node *framework.NodeInfo) *framework.Status
	reserve      func(pod *v1.Pod, node string) *framework.Status
	permit       func(job *framework.Job, placements map[string]string) *framework.Status
	bind         func(pod *v1.Pod, node string) *framework.Status
	// specJudge is the plugin's framework.SpecJudge answer for every pod.
	specJudge bool

	mu         sync.Mutex
	unreserved map[types.UID]int
}

var (
	_ framework.PreFilterPlugin    = &hookPlugin{}
	_ framework.PodPreFilterPlugin = &hookPlugin{}
	_ framework.FilterPlugin       = &hookPlugin{}
	_ framework.ReservePlugin      = &hookPlugin{}
	_ framework.PermitPlugin       = &hookPlugin{}
	_ framework.BindPlugin         = &hookPlugin{}
	_ framework.EnqueueExtensions  = &hookPlugin{}
)

func (*hookPlugin) Name() string { return hookName }

func (*hookPlugin) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{{Event: framework.EventNodeLabelChange}}
}

func (p *hookPlugin) PreFilter(_ context.Context, _ *framework.CycleState, job *framework.Job) *framework.Status {
	if p.preFilter == nil {
		return nil
	}
	return p.preFilter(job)
}

func (p *hookPlugin) PreFilterPod(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	if p.preFilterPod == nil {
		return nil
	}
	return p.preFilterPod(pod, nodes)
}

func (p *hookPlugin) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if p.filter == nil {
		return nil
	}
	return p.filter(pod, node)
}

func (p *hookPlugin) Reserve(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node string) *framework.Status {
	if p.reserve == nil {
		return nil
	}
	return p.reserve(pod, node)
}

func (p *hookPlugin) Unreserve(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unreserved == nil {
		p.unreserved = map[types.UID]int{}
	}
	p.unreserved[pod.UID]++
}

func (p *hookPlugin) Permit(_ context.Context, _ *framework.CycleState, job *framework.Job, placements map[string]string) *framework.Status {
	if p.permit == nil {
		return nil
	}
	return p.permit(job, placements)
}

func (p *hookPlugin) Bind(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node string) *framework.Status {
	if p.bind == nil {
		return framework.NewStatus(framework.Skip)
	}
	return p.bind(pod, node)
}

// JudgesBySpec implements framework.SpecJudge.
func (p *hookPlugin) JudgesBySpec(*v1.Pod) bool { return p.specJudge }

// unreserveCount returns how often pod was unreserved.
func (p *hookPlugin) unreserveCount(pod *v1.Pod) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unreserved[pod.UID]
}
