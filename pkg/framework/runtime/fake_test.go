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

package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// recorder is a call log shared by the fake plugins of one test.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) add(format string, args ...any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// count returns how many recorded calls equal call.
func (r *recorder) count(call string) int {
	n := 0
	for _, c := range r.get() {
		if c == call {
			n++
		}
	}
	return n
}

// fakeArgs is what the fake plugins accept in pluginConfig.
type fakeArgs struct {
	Value string `yaml:"value"`
}

// fakePlugin implements every extension point interface and
// EnqueueExtensions. Each result is configurable; the defaults pass.
type fakePlugin struct {
	name string
	rec  *recorder
	// args are the decoded args the factory received; gotArgs says whether
	// it received a non-nil reader.
	args    fakeArgs
	gotArgs bool

	less      func(a, b *framework.QueuedJob) bool
	preFilter *framework.Status
	// filter is the Filter result per node name.
	filter   map[string]*framework.Status
	preScore *framework.Status
	// score is the Score per node name; scoreErr is returned by every
	// Score call when set.
	score    map[string]int64
	scoreErr *framework.Status
	// normalize, when set, makes ScoreExtensions non-nil.
	normalize func(scores []framework.NodeScore) *framework.Status
	reserve   *framework.Status
	permit    *framework.Status
	bind      *framework.Status
	// postFilter is the PostFilter status; postFilterMsg its result's
	// message (no result when empty).
	postFilter    *framework.Status
	postFilterMsg string
	events        []framework.ClusterEvent
}

func (f *fakePlugin) Name() string { return f.name }

func (f *fakePlugin) Less(a, b *framework.QueuedJob) bool {
	if f.less != nil {
		return f.less(a, b)
	}
	return framework.DefaultLess(a, b)
}

func (f *fakePlugin) PreFilter(_ context.Context, _ *framework.CycleState, job *framework.Job) *framework.Status {
	f.rec.add("%s.PreFilter(%s)", f.name, job.ID.Name)
	return f.preFilter
}

func (f *fakePlugin) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	f.rec.add("%s.Filter(%s)", f.name, node.Name())
	return f.filter[node.Name()]
}

func (f *fakePlugin) PreScore(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	f.rec.add("%s.PreScore(%d)", f.name, len(nodes))
	return f.preScore
}

func (f *fakePlugin) Score(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	f.rec.add("%s.Score(%s)", f.name, node.Name())
	if f.scoreErr != nil {
		return 0, f.scoreErr
	}
	return f.score[node.Name()], nil
}

func (f *fakePlugin) ScoreExtensions() framework.ScoreExtensions {
	if f.normalize == nil {
		return nil
	}
	return f
}

func (f *fakePlugin) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores []framework.NodeScore) *framework.Status {
	f.rec.add("%s.NormalizeScore", f.name)
	return f.normalize(scores)
}

func (f *fakePlugin) Reserve(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node string) *framework.Status {
	f.rec.add("%s.Reserve(%s)", f.name, node)
	return f.reserve
}

func (f *fakePlugin) Unreserve(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node string) {
	f.rec.add("%s.Unreserve(%s)", f.name, node)
}

func (f *fakePlugin) Permit(_ context.Context, _ *framework.CycleState, job *framework.Job, placements map[string]string) *framework.Status {
	f.rec.add("%s.Permit(%d)", f.name, len(placements))
	return f.permit
}

func (f *fakePlugin) PostFilter(_ context.Context, _ *framework.CycleState, job *framework.Job, _ framework.RoomMaker) (*framework.PostFilterResult, *framework.Status) {
	f.rec.add("%s.PostFilter(%s)", f.name, job.ID.Name)
	if f.postFilterMsg == "" {
		return nil, f.postFilter
	}
	return &framework.PostFilterResult{Message: f.postFilterMsg}, f.postFilter
}

func (f *fakePlugin) Bind(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node string) *framework.Status {
	f.rec.add("%s.Bind(%s)", f.name, node)
	return f.bind
}

func (f *fakePlugin) EventsToRegister() []framework.ClusterEventWithHint {
	var out []framework.ClusterEventWithHint
	for _, e := range f.events {
		out = append(out, framework.ClusterEventWithHint{Event: e})
	}
	return out
}

// eventNames renders registered events as "<plugin>:<event>", for
// comparisons.
func eventNames(events []framework.PluginEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Plugin+":"+e.Event.String())
	}
	return out
}

// plainFilter is a Filter plugin and nothing else: it does not implement
// EnqueueExtensions or any other extension point.
type plainFilter struct{ name string }

func (p *plainFilter) Name() string { return p.name }
func (p *plainFilter) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return nil
}

// fakeHandle is a Handle with nothing behind it.
type fakeHandle struct{}

func (fakeHandle) ClientSet() kubernetes.Interface     { return nil }
func (fakeHandle) EventRecorder() events.EventRecorder { return nil }
func (fakeHandle) SharedInformerFactory() informers.SharedInformerFactory {
	return nil
}

// testRegistry registers plugins and counts how often each factory ran.
type testRegistry struct {
	*Registry
	mu     sync.Mutex
	builds map[string]int
}

func newTestRegistry(t *testing.T, plugins ...framework.Plugin) *testRegistry {
	t.Helper()
	r := &testRegistry{Registry: NewRegistry(), builds: map[string]int{}}
	for _, p := range plugins {
		r.add(t, p.Name(), func(_ context.Context, args apiruntime.Object, h framework.Handle) (framework.Plugin, error) {
			if fp, ok := p.(*fakePlugin); ok {
				fp.gotArgs = args != nil
				raw, _ := args.(*configapi.RawArgs)
				if err := config.DecodeStrict(raw.Reader(), &fp.args); err != nil {
					return nil, err
				}
			}
			return p, nil
		})
	}
	return r
}

// add registers factory under name, counting its runs.
func (r *testRegistry) add(t *testing.T, name string, factory framework.PluginFactory) {
	t.Helper()
	err := r.Register(name, func(ctx context.Context, args apiruntime.Object, h framework.Handle) (framework.Plugin, error) {
		r.mu.Lock()
		r.builds[name]++
		r.mu.Unlock()
		return factory(ctx, args, h)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (r *testRegistry) buildCount(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.builds[name]
}

// baseSpec is a valid profile: queue sort "sort" and binder "binder".
// extra adds (or replaces) extension points.
func baseSpec(extra map[ExtensionPoint]PluginSet) ProfileSpec {
	s := ProfileSpec{
		SchedulerName: "test-scheduler",
		Plugins: map[ExtensionPoint]PluginSet{
			QueueSortPoint: {{Name: "sort"}},
			BindPoint:      {{Name: "binder"}},
		},
	}
	for p, set := range extra {
		s.Plugins[p] = set
	}
	return s
}

// baseRegistry registers the base plugins and plugins.
func baseRegistry(t *testing.T, rec *recorder, plugins ...framework.Plugin) *testRegistry {
	t.Helper()
	all := append([]framework.Plugin{
		&fakePlugin{name: "sort", rec: rec},
		&fakePlugin{name: "binder", rec: rec},
	}, plugins...)
	return newTestRegistry(t, all...)
}

// mustFramework builds a framework of spec over reg or fails the test.
func mustFramework(t *testing.T, reg *testRegistry, spec ProfileSpec, opts ...Option) *Framework {
	t.Helper()
	f, err := NewFramework(context.Background(), reg.Registry, spec, fakeHandle{}, opts...)
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	return f
}

// makeNodes returns NodeInfos of the named nodes, built the way the
// scheduler gets them: from the cache.
func makeNodes(t testing.TB, names ...string) []*framework.NodeInfo {
	t.Helper()
	c, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*framework.NodeInfo, 0, len(names))
	for _, n := range names {
		if err := c.AddOrUpdateNode(st.MakeNode().Name(n).Obj()); err != nil {
			t.Fatal(err)
		}
		ni, ok := c.NodeInfo(n)
		if !ok {
			t.Fatalf("node %s not in cache", n)
		}
		out = append(out, ni)
	}
	return out
}

func testPod() *v1.Pod { return st.MakePod().Namespace("ns").Name("p").Obj() }

func testJob() *framework.Job {
	return &framework.Job{ID: framework.JobID{Namespace: "ns", Name: "job", Gang: true}, MinAvailable: 1}
}

var errBoom = errors.New("boom")
