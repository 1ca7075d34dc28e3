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
	"fmt"
	"maps"
	"slices"
	"strings"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// ExtensionPoint names a point of the scheduling cycle where plugins run.
// The names are the keys of a profile's plugins: in the configuration
// file.
type ExtensionPoint string

// The extension points, in the order a scheduling cycle runs them.
const (
	QueueSortPoint ExtensionPoint = config.ExtensionQueueSort
	PreFilterPoint ExtensionPoint = config.ExtensionPreFilter
	FilterPoint    ExtensionPoint = config.ExtensionFilter
	PreScorePoint  ExtensionPoint = config.ExtensionPreScore
	ScorePoint     ExtensionPoint = config.ExtensionScore
	ReservePoint   ExtensionPoint = config.ExtensionReserve
	PermitPoint    ExtensionPoint = config.ExtensionPermit
	// PostFilterPoint runs only after a cycle found no placement.
	PostFilterPoint ExtensionPoint = config.ExtensionPostFilter
	BindPoint       ExtensionPoint = config.ExtensionBind
)

var extensionPoints = []ExtensionPoint{
	QueueSortPoint, PreFilterPoint, FilterPoint, PreScorePoint,
	ScorePoint, ReservePoint, PermitPoint, PostFilterPoint, BindPoint,
}

// PluginRef enables a plugin at an extension point.
type PluginRef struct {
	Name string
	// Weight multiplies the plugin's scores; only meaningful at ScorePoint,
	// and must be 0 elsewhere. 0 at ScorePoint means the default, 1.
	Weight int64
}

// PluginSet is the plugins enabled at one extension point, in the order
// they run.
type PluginSet []PluginRef

// Names returns the plugins' names in order.
func (s PluginSet) Names() []string {
	names := make([]string, len(s))
	for i, p := range s {
		names[i] = p.Name
	}
	return names
}

// ProfileSpec is a resolved profile: everything NewFramework needs to build
// the framework that schedules the pods of one scheduler name.
type ProfileSpec struct {
	// SchedulerName is the spec.schedulerName of the pods the profile
	// schedules.
	SchedulerName string
	// Plugins are the plugins per extension point. A point that is absent,
	// or has an empty set, runs no plugin.
	Plugins map[ExtensionPoint]PluginSet
	// PluginArgs holds each plugin's args by plugin name (typed args of
	// pkg/apis/config, or *config.RawArgs), handed to its factory. A
	// plugin without an entry gets nil.
	PluginArgs map[string]apiruntime.Object
	// MultiPoint are plugins enabled at every extension point whose
	// interface they implement (kube-scheduler's multiPoint), placed by
	// NewFramework once they are built; see expandMultiPoint.
	MultiPoint PluginSet
	// MultiPointSkip names, per extension point, the plugins the profile
	// disabled there (AllPlugins: every one), which MultiPoint does not
	// add there.
	MultiPointSkip map[ExtensionPoint][]string
	// MultiPointExplicit names, per extension point, the plugins the
	// profile enabled there itself (not defaults), whose entries win over
	// MultiPoint's.
	MultiPointExplicit map[ExtensionPoint][]string
}

// Clone returns a copy of s that shares nothing mutable with it but the
// args, which factories only read.
func (s ProfileSpec) Clone() ProfileSpec {
	out := ProfileSpec{SchedulerName: s.SchedulerName}
	if s.Plugins != nil {
		out.Plugins = make(map[ExtensionPoint]PluginSet, len(s.Plugins))
		for p, set := range s.Plugins {
			out.Plugins[p] = slices.Clone(set)
		}
	}
	if s.PluginArgs != nil {
		out.PluginArgs = maps.Clone(s.PluginArgs)
	}
	out.MultiPoint = slices.Clone(s.MultiPoint)
	out.MultiPointSkip = cloneNames(s.MultiPointSkip)
	out.MultiPointExplicit = cloneNames(s.MultiPointExplicit)
	return out
}

// enabledNames returns the set of plugin names enabled at any point.
func (s ProfileSpec) enabledNames() map[string]bool {
	enabled := map[string]bool{}
	for _, p := range s.MultiPoint {
		enabled[p.Name] = true
	}
	for _, set := range s.Plugins {
		for _, p := range set {
			enabled[p.Name] = true
		}
	}
	return enabled
}

func cloneNames(m map[ExtensionPoint][]string) map[ExtensionPoint][]string {
	if m == nil {
		return nil
	}
	out := make(map[ExtensionPoint][]string, len(m))
	for p, names := range m {
		out[p] = slices.Clone(names)
	}
	return out
}

// LineFunc returns the line in the configuration file of a field of a
// profile, named by its path in the profile (e.g. "pluginConfig[1]"; ""
// is the profile itself), or 0 when it is unknown (a profile built in
// code).
type LineFunc func(field string) int

// ResolveProfile merges the configuration file's profile cfg over the
// defaults the caller passes in (the in-tree default profile) and returns
// the result, which shares no slices or maps with either. line, which may
// be nil, places errors in the file.
//
//   - The scheduler name is cfg's.
//   - An extension point cfg sets changes the default plugins of that
//     point: its disabled plugins are removed ("*" removes them all) and
//     its enabled ones added (a plain list in the file is "*" disabled
//     and the list enabled, which replaces the defaults; an empty one
//     means no plugin). A point cfg does not set keeps the default.
//   - Args come from cfg's pluginConfig, overriding defaults' args of the
//     same plugin; an entry without args means the plugin gets none. The
//     defaults' args of plugins that cfg disabled are dropped, but a
//     pluginConfig entry for a plugin that is not enabled at any point is
//     an error: it is almost always a typo or a forgotten plugins: entry.
//
// A nil cfg returns a copy of defaults. The result is not validated beyond
// that; NewFramework does it.
func ResolveProfile(defaults ProfileSpec, cfg *config.Profile, line LineFunc) (ProfileSpec, error) {
	if cfg == nil {
		return defaults.Clone(), nil
	}
	if line == nil {
		line = func(string) int { return 0 }
	}
	at := func(field string) string {
		if l := line(field); l > 0 {
			return fmt.Sprintf("line %d: ", l)
		}
		return ""
	}
	out := ProfileSpec{
		SchedulerName: cfg.SchedulerName,
		Plugins:       map[ExtensionPoint]PluginSet{},
		PluginArgs:    map[string]apiruntime.Object{},
	}
	plugins := cfg.Plugins
	if plugins == nil {
		plugins = &config.Plugins{}
	}
	// multiPoint: its enabled plugins are placed by NewFramework; its
	// disabled ones leave the defaults of every point.
	var disabledEverywhere []string
	if mp := plugins.MultiPoint; mp != nil {
		for _, p := range mp.Enabled {
			out.MultiPoint = append(out.MultiPoint, PluginRef{Name: p.Name, Weight: int64(p.Weight)})
		}
		disabledEverywhere = disabledNames(mp)
	}
	for _, point := range extensionPoints {
		base := defaults.Plugins[point]
		if len(disabledEverywhere) > 0 {
			base = mergePlugins(base, nil, disabledEverywhere)
		}
		list := plugins.Get(string(point))
		if list == nil {
			if len(base) > 0 {
				out.Plugins[point] = slices.Clone(base)
			}
			continue
		}
		set := make(PluginSet, 0, len(list.Enabled))
		for _, p := range list.Enabled {
			set = append(set, PluginRef{Name: p.Name, Weight: int64(p.Weight)})
		}
		skip := disabledNames(list)
		set = mergePlugins(base, set, skip)
		if len(out.MultiPoint) > 0 {
			if len(skip) > 0 {
				if out.MultiPointSkip == nil {
					out.MultiPointSkip = map[ExtensionPoint][]string{}
				}
				out.MultiPointSkip[point] = skip
			}
			if len(list.Enabled) > 0 {
				if out.MultiPointExplicit == nil {
					out.MultiPointExplicit = map[ExtensionPoint][]string{}
				}
				for _, p := range list.Enabled {
					out.MultiPointExplicit[point] = append(out.MultiPointExplicit[point], p.Name)
				}
			}
		}
		if len(set) > 0 {
			out.Plugins[point] = set
		}
	}
	enabled := out.enabledNames()
	for name, args := range defaults.PluginArgs {
		if enabled[name] {
			out.PluginArgs[name] = args
		}
	}
	var errs []error
	for i, pc := range cfg.PluginConfig {
		if !enabled[pc.Name] {
			errs = append(errs, fmt.Errorf("%spluginConfig[%d] gives args for plugin %q, which is not enabled at any extension point (enabled: %s)",
				at(fmt.Sprintf("pluginConfig[%d]", i)), i, pc.Name, orNone(slices.Sorted(maps.Keys(enabled)))))
			continue
		}
		if pc.Args == nil {
			delete(out.PluginArgs, pc.Name)
		} else {
			out.PluginArgs[pc.Name] = pc.Args
		}
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		where := ""
		if l := line(""); l > 0 {
			where = fmt.Sprintf(" (line %d)", l)
		}
		return ProfileSpec{}, fmt.Errorf("profile %q%s: %w", cfg.SchedulerName, where, err)
	}
	return out, nil
}

// disabledNames returns the names of a point's disabled plugins.
func disabledNames(set *config.PluginSet) []string {
	var names []string
	for _, p := range set.Disabled {
		names = append(names, p.Name)
	}
	return names
}

// mergePlugins applies an extension point's enabled and disabled plugins
// to its default ones, as kube-scheduler merges a profile's plugins: the
// defaults stay in their order, less those disabled ("*" disables them
// all); an enabled plugin that is also a default one (still there) takes
// its place, with its weight; the other enabled plugins follow, in their
// order.
func mergePlugins(defaults, enabled PluginSet, disabled []string) PluginSet {
	all := slices.Contains(disabled, "*")
	byName := make(map[string]PluginRef, len(enabled))
	for _, p := range enabled {
		byName[p.Name] = p
	}
	out := make(PluginSet, 0, len(defaults)+len(enabled))
	placed := map[string]bool{}
	if !all {
		for _, d := range defaults {
			if slices.Contains(disabled, d.Name) {
				continue
			}
			if e, ok := byName[d.Name]; ok {
				d = e
			}
			out = append(out, d)
			placed[d.Name] = true
		}
	}
	for _, e := range enabled {
		if !placed[e.Name] {
			out = append(out, e)
		}
	}
	return out
}

// orNone joins names with ", ", or returns "none" for an empty list.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
