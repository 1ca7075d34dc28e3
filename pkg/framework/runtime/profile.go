package runtime

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
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
	// PluginArgs holds each plugin's settings by plugin name, handed to its
	// factory. A plugin without an entry gets nil.
	PluginArgs map[string]*config.Section
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
// args sections, which are only ever read through clones.
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

// ResolveProfile merges the configuration file's profile cfg over the
// defaults the caller passes in (the in-tree default profile) and returns
// the result, which shares no slices or maps with either.
//
//   - The scheduler name is cfg's.
//   - An extension point cfg lists replaces the default list of that point
//     entirely; an empty list means no plugin. A point cfg does not list
//     keeps the default.
//   - Args come from cfg's pluginConfig, overriding defaults' args of the
//     same plugin; an entry without args means the plugin gets none. The
//     defaults' args of plugins that cfg disabled are dropped, but a
//     pluginConfig entry for a plugin that is not enabled at any point is
//     an error: it is almost always a typo or a forgotten plugins: entry.
//
// A nil cfg returns a copy of defaults. The result is not validated beyond
// that; NewFramework does it.
func ResolveProfile(defaults ProfileSpec, cfg *config.Profile) (ProfileSpec, error) {
	if cfg == nil {
		return defaults.Clone(), nil
	}
	out := ProfileSpec{
		SchedulerName: cfg.SchedulerName,
		Plugins:       map[ExtensionPoint]PluginSet{},
		PluginArgs:    map[string]*config.Section{},
	}
	// multiPoint: its enabled plugins are placed by NewFramework; its
	// disabled ones leave the defaults of every point.
	var disabledEverywhere []string
	if mp := cfg.Plugins.MultiPoint; mp != nil {
		for _, p := range mp.Plugins {
			out.MultiPoint = append(out.MultiPoint, PluginRef{Name: p.Name, Weight: p.Weight})
		}
		disabledEverywhere = mp.Disabled
	}
	for _, point := range extensionPoints {
		base := defaults.Plugins[point]
		if len(disabledEverywhere) > 0 {
			base = mergePlugins(base, nil, disabledEverywhere)
		}
		list := cfg.Plugins.Get(string(point))
		if list == nil {
			if len(base) > 0 {
				out.Plugins[point] = slices.Clone(base)
			}
			continue
		}
		set := make(PluginSet, 0, len(list.Plugins))
		for _, p := range list.Plugins {
			set = append(set, PluginRef{Name: p.Name, Weight: p.Weight})
		}
		skip := []string{AllPlugins} // a plain list replaces the point
		if list.Merge {
			set = mergePlugins(base, set, list.Disabled)
			skip = slices.Clone(list.Disabled)
		}
		if len(out.MultiPoint) > 0 {
			if len(skip) > 0 {
				if out.MultiPointSkip == nil {
					out.MultiPointSkip = map[ExtensionPoint][]string{}
				}
				out.MultiPointSkip[point] = skip
			}
			if len(list.Plugins) > 0 {
				if out.MultiPointExplicit == nil {
					out.MultiPointExplicit = map[ExtensionPoint][]string{}
				}
				for _, p := range list.Plugins {
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
			errs = append(errs, fmt.Errorf("line %d: pluginConfig[%d] gives args for plugin %q, which is not enabled at any extension point (enabled: %s)",
				pc.Line, i, pc.Name, orNone(slices.Sorted(maps.Keys(enabled)))))
			continue
		}
		if pc.Args == nil {
			delete(out.PluginArgs, pc.Name)
		} else {
			out.PluginArgs[pc.Name] = pc.Args
		}
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return ProfileSpec{}, fmt.Errorf("profile %q (line %d): %w", cfg.SchedulerName, cfg.Line, err)
	}
	return out, nil
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
