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
	"maps"
	"slices"
	"strings"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/registry"
)

// DefaultParallelism is how many goroutines filter and score nodes in
// parallel unless WithParallelism says otherwise.
const DefaultParallelism = 16

// Framework runs the plugins of one profile at each extension point. It is
// built once per profile by NewFramework and used by the scheduling loop;
// its Run methods are safe for concurrent use as far as the plugins are.
type Framework struct {
	schedulerName string
	handle        framework.Handle
	parallelism   int
	// metrics is nil when nothing is recorded (WithMetrics).
	metrics *Metrics
	// pointTimers cache metrics' children for this profile; nil without
	// metrics.
	pointTimers pointTimers

	// plugins are the instances by name; order lists their names in the
	// order they were first enabled (cycle order, then list order).
	plugins map[string]framework.Plugin
	order   []string
	// enabled is the profile's plugins per point, weights defaulted.
	enabled map[ExtensionPoint]PluginSet
	// events are the events each plugin implementing EnqueueExtensions
	// registered, asked once when the framework was built.
	events map[string][]framework.ClusterEventWithHint

	queueSort    framework.QueueSortPlugin
	preFilter    []framework.PreFilterPlugin
	preFilterPod []framework.PodPreFilterPlugin
	// preFilterPodExt is parallel to preFilterPod: each plugin's
	// PodPreFilterExtensions, nil where it has none.
	preFilterPodExt []framework.PodPreFilterExtensions
	placement       []framework.PlacementPlugin
	filter          []framework.FilterPlugin
	preScore        []framework.PreScorePlugin
	score           []framework.ScorePlugin
	scoreWeights    []int64 // parallel to score
	reserve         []framework.ReservePlugin
	permit          []framework.PermitPlugin
	postFilter      []framework.PostFilterPlugin
	bind            []framework.BindPlugin
}

// Option configures NewFramework.
type Option func(*frameworkOptions)

type frameworkOptions struct {
	parallelism int
	metrics     *Metrics
}

// WithParallelism sets how many goroutines FindFeasibleNodes and
// RunScorePlugins use; values below 1 are ignored.
func WithParallelism(n int) Option {
	return func(o *frameworkOptions) {
		if n >= 1 {
			o.parallelism = n
		}
	}
}

// NewFramework builds the framework of the profile spec: it looks up every
// plugin the profile enables in reg, runs each factory once (a plugin
// enabled at several points is one instance) with the plugin's args from
// spec.PluginArgs, and hands h to it.
//
// The profile is validated before any factory runs. It must have a
// scheduler name, exactly one QueueSort plugin and at least one Bind
// plugin; a plugin may appear at most once per point; weights are only
// allowed at Score, must not be negative there (0 means 1), and the
// weighted maximum scores must sum to at most MaxTotalScore; args may only
// be given for enabled plugins; and every plugin must be registered. Once
// the plugins are built, each must implement the interface of every point
// it is enabled at. All problems found at a stage are reported together,
// in one line, each naming its plugin and, where it applies, the point.
// A factory's error is wrapped, so errors.Is and errors.As see it.
func NewFramework(ctx context.Context, reg *Registry, spec ProfileSpec, h framework.Handle, opts ...Option) (*Framework, error) {
	o := frameworkOptions{parallelism: DefaultParallelism}
	for _, opt := range opts {
		opt(&o)
	}
	fail := func(errs ...error) (*Framework, error) {
		return nil, fmt.Errorf("building profile %q: %w", spec.SchedulerName, utilerrors.NewAggregate(errs))
	}
	if reg == nil {
		return fail(errors.New("no plugin registry"))
	}

	// MultiPoint plugins are built first: where they go depends on the
	// interfaces they implement.
	var built map[string]framework.Plugin
	if len(spec.MultiPoint) > 0 {
		var errs []error
		if built, errs = buildMultiPoint(ctx, reg, spec, h); len(errs) > 0 {
			return fail(errs...)
		}
		spec = expandMultiPoint(spec, built)
	}

	f := &Framework{
		schedulerName: spec.SchedulerName,
		handle:        h,
		parallelism:   o.parallelism,
		metrics:       o.metrics,
		plugins:       map[string]framework.Plugin{},
		enabled:       map[ExtensionPoint]PluginSet{},
	}
	if o.metrics != nil {
		f.pointTimers = newPointTimers()
	}
	if errs := f.validateSpec(spec); len(errs) > 0 {
		return fail(errs...)
	}

	// Look every plugin up before running any factory, so that a typo does
	// not leave half the plugins built.
	factories := make(map[string]framework.PluginFactory, len(f.order))
	var errs []error
	for _, name := range f.order {
		if built[name] != nil {
			continue
		}
		factory, err := reg.Lookup(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.pointsOf(name), err))
			continue
		}
		factories[name] = factory
	}
	if len(errs) > 0 {
		return fail(errs...)
	}

	for _, name := range f.order {
		if p := built[name]; p != nil {
			f.plugins[name] = p
			continue
		}
		p, err := runFactory(ctx, factories[name], name, spec.PluginArgs[name], h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.plugins[name] = p
	}
	if len(errs) > 0 {
		return fail(errs...)
	}

	if errs := f.bindExtensionPoints(); len(errs) > 0 {
		return fail(errs...)
	}
	f.events = make(map[string][]framework.ClusterEventWithHint, len(f.plugins))
	for name, p := range f.plugins {
		if ext, ok := p.(framework.EnqueueExtensions); ok {
			f.events[name] = slices.Clone(ext.EventsToRegister())
		}
	}
	klog.FromContext(ctx).V(2).Info("Built scheduling framework", "profile", f.schedulerName, "plugins", f.ListPlugins())
	return f, nil
}

// validateSpec checks the shape of spec and fills f.enabled and f.order.
func (f *Framework) validateSpec(spec ProfileSpec) []error {
	var errs []error
	if spec.SchedulerName == "" {
		errs = append(errs, errors.New("the scheduler name is empty"))
	}
	for _, point := range slices.Sorted(maps.Keys(spec.Plugins)) {
		if !slices.Contains(extensionPoints, point) {
			errs = append(errs, fmt.Errorf("unknown extension point %q (known: %s)", point, joinPoints(extensionPoints)))
		}
	}
	seen := map[string]bool{}
	var total int64 // the greatest possible weighted score sum so far
	for _, point := range extensionPoints {
		set := spec.Plugins[point]
		inPoint := map[string]bool{}
		out := make(PluginSet, 0, len(set))
		for i, ref := range set {
			switch {
			case ref.Name == "":
				errs = append(errs, fmt.Errorf("%s[%d]: the plugin name is empty", point, i))
				continue
			case inPoint[ref.Name]:
				errs = append(errs, fmt.Errorf("plugin %q is enabled twice at %s", ref.Name, point))
				continue
			}
			inPoint[ref.Name] = true
			if !seen[ref.Name] {
				seen[ref.Name] = true
				f.order = append(f.order, ref.Name)
			}
			if point != ScorePoint {
				if ref.Weight != 0 {
					errs = append(errs, fmt.Errorf("plugin %q at %s has weight %d, but weights are only allowed at %s", ref.Name, point, ref.Weight, ScorePoint))
				}
				out = append(out, PluginRef{Name: ref.Name})
				continue
			}
			w := ref.Weight
			switch {
			case w == 0:
				w = 1
			case w < 0:
				errs = append(errs, fmt.Errorf("plugin %q at %s has weight %d; weights must be at least 1", ref.Name, point, w))
				continue
			}
			if w > (framework.MaxTotalScore-total)/framework.MaxNodeScore {
				errs = append(errs, fmt.Errorf("plugin %q at %s has weight %d, which makes the greatest total score overflow %d", ref.Name, point, w, framework.MaxTotalScore))
				continue
			}
			total += w * framework.MaxNodeScore
			out = append(out, PluginRef{Name: ref.Name, Weight: w})
		}
		if len(out) > 0 {
			f.enabled[point] = out
		}
	}
	switch n := len(spec.Plugins[QueueSortPoint]); {
	case n == 0:
		errs = append(errs, fmt.Errorf("%s needs exactly one plugin, got none", QueueSortPoint))
	case n > 1:
		errs = append(errs, fmt.Errorf("%s needs exactly one plugin, got %d (%s)", QueueSortPoint, n, strings.Join(spec.Plugins[QueueSortPoint].Names(), ", ")))
	}
	if len(spec.Plugins[BindPoint]) == 0 {
		errs = append(errs, fmt.Errorf("%s needs at least one plugin, got none", BindPoint))
	}
	for _, name := range slices.Sorted(maps.Keys(spec.PluginArgs)) {
		if !seen[name] {
			errs = append(errs, fmt.Errorf("args are given for plugin %q, which is not enabled at any extension point", name))
		}
	}
	return errs
}

// runFactory builds the plugin name, turning a panic, a nil plugin or a
// plugin that calls itself something else into an error naming it.
func runFactory(ctx context.Context, factory framework.PluginFactory, name string, args apiruntime.Object, h framework.Handle) (p framework.Plugin, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("initializing plugin %q: factory panicked: %v", name, r)
		}
	}()
	p, err = factory(ctx, args, h)
	switch {
	case err != nil:
		return nil, fmt.Errorf("initializing plugin %q: %w", name, err)
	case registry.IsNil(p):
		return nil, fmt.Errorf("initializing plugin %q: factory returned no plugin and no error", name)
	case p.Name() != name:
		return nil, fmt.Errorf("initializing plugin %q: the factory's plugin calls itself %q; register it under that name", name, p.Name())
	}
	return p, nil
}

// bindExtensionPoints fills the per-point plugin lists from f.plugins,
// checking that each plugin implements the interface of its points.
func (f *Framework) bindExtensionPoints() []error {
	var errs []error
	for _, point := range extensionPoints {
		for _, ref := range f.enabled[point] {
			p := f.plugins[ref.Name]
			if !f.add(point, p, ref.Weight) {
				errs = append(errs, fmt.Errorf("plugin %q is enabled at %s but does not implement %s", ref.Name, point, interfaceName(point)))
			}
		}
	}
	return errs
}

// add appends p to the list of point and reports whether p implements the
// point's interface.
func (f *Framework) add(point ExtensionPoint, p framework.Plugin, weight int64) bool {
	switch point {
	case QueueSortPoint:
		qs, ok := p.(framework.QueueSortPlugin)
		f.queueSort = qs
		return ok
	case PreFilterPoint:
		// A plugin at preFilter runs per job, per pod, proposes
		// placements, or several of these.
		job := appendAs(&f.preFilter, p)
		pod := appendAs(&f.preFilterPod, p)
		if pod {
			ext, _ := p.(framework.PodPreFilterExtensions)
			f.preFilterPodExt = append(f.preFilterPodExt, ext)
		}
		place := appendAs(&f.placement, p)
		return job || pod || place
	case FilterPoint:
		return appendAs(&f.filter, p)
	case PreScorePoint:
		return appendAs(&f.preScore, p)
	case ScorePoint:
		if appendAs(&f.score, p) {
			f.scoreWeights = append(f.scoreWeights, weight)
			return true
		}
		return false
	case ReservePoint:
		return appendAs(&f.reserve, p)
	case PermitPoint:
		return appendAs(&f.permit, p)
	case PostFilterPoint:
		return appendAs(&f.postFilter, p)
	case BindPoint:
		return appendAs(&f.bind, p)
	}
	return false
}

// appendAs appends p to list if p is a T, and reports whether it is.
func appendAs[T any](list *[]T, p framework.Plugin) bool {
	t, ok := p.(T)
	if ok {
		*list = append(*list, t)
	}
	return ok
}

// interfaceName names the Go interface plugins at point implement.
func interfaceName(point ExtensionPoint) string {
	switch point {
	case QueueSortPoint:
		return "QueueSortPlugin"
	case PreFilterPoint:
		return "PreFilterPlugin, PodPreFilterPlugin or PlacementPlugin"
	case FilterPoint:
		return "FilterPlugin"
	case PreScorePoint:
		return "PreScorePlugin"
	case ScorePoint:
		return "ScorePlugin"
	case ReservePoint:
		return "ReservePlugin"
	case PermitPoint:
		return "PermitPlugin"
	case PostFilterPoint:
		return "PostFilterPlugin"
	case BindPoint:
		return "BindPlugin"
	}
	return "an unknown interface"
}

// pointsOf describes where plugin name is enabled, e.g. "filter, score".
func (f *Framework) pointsOf(name string) string {
	var points []ExtensionPoint
	for _, point := range extensionPoints {
		if slices.ContainsFunc(f.enabled[point], func(r PluginRef) bool { return r.Name == name }) {
			points = append(points, point)
		}
	}
	return "enabled at " + joinPoints(points)
}

func joinPoints(points []ExtensionPoint) string {
	s := make([]string, len(points))
	for i, p := range points {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// SchedulerName returns the spec.schedulerName of the pods the framework
// schedules.
func (f *Framework) SchedulerName() string { return f.schedulerName }

// Handle returns the handle the plugins were built with.
func (f *Framework) Handle() framework.Handle { return f.handle }

// ListPlugins returns the enabled plugins per extension point, with Score
// weights defaulted, for logs and debug dumps. Points without plugins are
// left out. The result is a fresh copy.
func (f *Framework) ListPlugins() map[ExtensionPoint]PluginSet {
	out := make(map[ExtensionPoint]PluginSet, len(f.enabled))
	for point, set := range f.enabled {
		out[point] = slices.Clone(set)
	}
	return out
}

// QueueSortFunc returns the profile's QueueSort plugin's Less, for the
// scheduling queue.
func (f *Framework) QueueSortFunc() framework.LessFunc { return f.queueSort.Less }

// wildcardEvent is what a plugin that does not implement EnqueueExtensions
// is assumed to need: every event, without a hint.
var wildcardEvent = framework.ClusterEventWithHint{Event: framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All}}

// registeredEvents returns what plugin name registers: its
// EnqueueExtensions, asked once when the framework was built, or every
// event when it does not implement them or is not enabled here.
func (f *Framework) registeredEvents(name string) []framework.ClusterEventWithHint {
	if events, ok := f.events[name]; ok {
		return events
	}
	return []framework.ClusterEventWithHint{wildcardEvent}
}

// EventsToRegister returns the events every enabled plugin registers (see
// EventsToRegisterFor).
func (f *Framework) EventsToRegister() []framework.PluginEvent {
	return f.EventsToRegisterFor(f.order...)
}

// EventsToRegisterFor returns the events the named plugins register with
// EnqueueExtensions, each with its plugin's name and queueing hint, in the
// order of names: the events after which a job they rejected may fit. A
// plugin that does not implement EnqueueExtensions, or that is not
// enabled in this framework, contributes {Resource: WildCard, ActionType:
// All} without a hint, since it may care about anything. So every plugin
// that can reject a job, and every plugin that reads a resource's
// informer, should implement EnqueueExtensions.
func (f *Framework) EventsToRegisterFor(names ...string) []framework.PluginEvent {
	var out []framework.PluginEvent
	for _, name := range names {
		for _, e := range f.registeredEvents(name) {
			out = append(out, framework.PluginEvent{Plugin: name, ClusterEventWithHint: e})
		}
	}
	return out
}

// WaitsForRoom reports whether a rejection by the plugin named name means
// that the job waits for room (see framework.RoomRejecter).
func (f *Framework) WaitsForRoom(name string) bool {
	r, ok := f.plugins[name].(framework.RoomRejecter)
	return ok && r.RejectsForRoom()
}

// ResourcesNeeded returns the distinct resources of EventsToRegister,
// sorted, for starting informers. When any event is about WildCard
// (every resource), WildCard is among them, first; the others are still
// listed, because WildCard does not start the opt-in informers
// (informerhost.IsOptIn: Dynamic Resource Allocation's), which run only
// when named.
func (f *Framework) ResourcesNeeded() []framework.EventResource {
	set := map[framework.EventResource]bool{}
	for _, e := range f.EventsToRegister() {
		set[e.Event.Resource] = true
	}
	return slices.Sorted(maps.Keys(set))
}
