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
	"fmt"
	"slices"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// AllPlugins, disabled, stands for every plugin of an extension point.
const AllPlugins = "*"

// expandMultiPoint enables each of spec's MultiPoint plugins at every
// extension point whose interface it implements, with kube-scheduler's
// rules for its multiPoint:
//
//   - at a point where the profile disabled the plugin, or every plugin
//     ("*", which includes a point given as a plain list), it is not
//     added;
//   - at a point where the profile enabled it explicitly, that entry
//     wins and moves to the front, with the other such plugins in the
//     point's order;
//   - at a point where it is a default plugin, it keeps its place (as a
//     default of kube-scheduler's multiPoint would), taking MultiPoint's
//     weight at score when one is given;
//   - the rest follow in MultiPoint's order, then the point's other
//     plugins. A weight applies at score only.
//
// built holds the MultiPoint plugins, built by the caller; the returned
// spec shares nothing mutable with spec.
func expandMultiPoint(spec ProfileSpec, built map[string]framework.Plugin) ProfileSpec {
	out := spec.Clone()
	if len(spec.MultiPoint) == 0 {
		return out
	}
	if out.Plugins == nil {
		out.Plugins = map[ExtensionPoint]PluginSet{}
	}
	for _, point := range extensionPoints {
		skip := spec.MultiPointSkip[point]
		if slices.Contains(skip, AllPlugins) {
			continue
		}
		list := spec.Plugins[point]
		listed := map[string]bool{}
		for _, r := range list {
			listed[r.Name] = true
		}
		overrides := map[string]bool{}
		reweighted := map[string]int64{}
		var added PluginSet
		for _, m := range spec.MultiPoint {
			p, ok := built[m.Name]
			if !ok || !implements(point, p) || slices.Contains(skip, m.Name) {
				continue
			}
			if listed[m.Name] {
				if slices.Contains(spec.MultiPointExplicit[point], m.Name) {
					overrides[m.Name] = true
				} else if point == ScorePoint && m.Weight != 0 {
					reweighted[m.Name] = m.Weight
				}
				continue
			}
			ref := PluginRef{Name: m.Name}
			if point == ScorePoint {
				ref.Weight = m.Weight
			}
			added = append(added, ref)
		}
		if len(overrides) == 0 && len(added) == 0 && len(reweighted) == 0 {
			continue
		}
		merged := make(PluginSet, 0, len(list)+len(added))
		for _, r := range list {
			if overrides[r.Name] {
				merged = append(merged, r)
			}
		}
		merged = append(merged, added...)
		for _, r := range list {
			if !overrides[r.Name] {
				if w, ok := reweighted[r.Name]; ok {
					r.Weight = w
				}
				merged = append(merged, r)
			}
		}
		out.Plugins[point] = merged
	}
	return out
}

// implements reports whether p implements the interface of point.
func implements(point ExtensionPoint, p framework.Plugin) bool {
	var scratch Framework
	return scratch.add(point, p, 1)
}

// buildMultiPoint builds spec's MultiPoint plugins (whose extension
// points are known only once they exist), so that expandMultiPoint can
// place them; NewFramework reuses them.
func buildMultiPoint(ctx context.Context, reg *Registry, spec ProfileSpec, h framework.Handle) (map[string]framework.Plugin, []error) {
	built := make(map[string]framework.Plugin, len(spec.MultiPoint))
	var errs []error
	for i, m := range spec.MultiPoint {
		switch {
		case m.Name == "":
			errs = append(errs, fmt.Errorf("multiPoint[%d]: the plugin name is empty", i))
			continue
		case built[m.Name] != nil:
			errs = append(errs, fmt.Errorf("plugin %q is enabled twice at multiPoint", m.Name))
			continue
		}
		factory, err := reg.Lookup(m.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("enabled at multiPoint: %w", err))
			continue
		}
		p, err := runFactory(ctx, factory, m.Name, spec.PluginArgs[m.Name], h)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		built[m.Name] = p
	}
	if len(errs) == 0 {
		for _, m := range spec.MultiPoint {
			if !implementsAny(built[m.Name]) {
				errs = append(errs, fmt.Errorf("plugin %q is enabled at multiPoint but implements no extension point's interface", m.Name))
			}
		}
	}
	return built, errs
}

func implementsAny(p framework.Plugin) bool {
	return slices.ContainsFunc(extensionPoints, func(point ExtensionPoint) bool { return implements(point, p) })
}
