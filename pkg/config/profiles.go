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

package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// extensionKeys lists the keys accepted under plugins:, in cycle order.
var extensionKeys = configapi.ExtensionPoints

// profileChecker checks the shape of the profiles: node before the
// file is decoded through the API's scheme. It builds nothing: the
// profiles are the API's (pkg/apis/config). It walks them node by node so
// that every error can name the field's full path (e.g.
// "profiles[0] (gpu).plugins.score[1].weight") as well as its line, in
// words for someone editing the file.
type profileChecker struct {
	bad func(line int, format string, args ...any)
}

// check checks the value of the profiles: key. A missing or null value
// means no profiles.
func (p *profileChecker) check(n *yaml.Node) {
	n = resolveAlias(n)
	if n == nil || isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.bad(n.Line, "profiles must be a list")
		return
	}
	for i, item := range n.Content {
		item = resolveAlias(item)
		field := fmt.Sprintf("profiles[%d]", i)
		// Name the profile in every message about it, once it has a name.
		if v := resolveAlias(valueOf(item, "schedulerName")); v != nil && v.Kind == yaml.ScalarNode && !isNull(v) {
			field = fmt.Sprintf("profiles[%d] (%s)", i, v.Value)
		}
		// percentageOfNodesToScore is kube-scheduler's per-profile
		// setting, judged by the API's validation.
		fields, ok := p.mapping(item, field, false, "schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore")
		if !ok {
			continue
		}
		fields.scalar(p, "schedulerName", field)
		if v := fields.value("plugins"); v != nil {
			p.plugins(v, field+".plugins")
		}
		if v := fields.value("pluginConfig"); v != nil {
			p.pluginConfig(v, field+".pluginConfig")
		}
	}
}

// kubeSchedulerOnlyPoints are extension points of kube-scheduler's
// profiles that this scheduler does not have, with what to do instead.
var kubeSchedulerOnlyPoints = map[string]string{
	"preEnqueue": "scheduling gates are honoured by the default profile; PreEnqueue plugins are not supported",
	"preBind":    "volume binding runs in the bind plugins; PreBind plugins are not supported",
	"postBind":   "PostBind plugins are not supported",
}

// plugins checks a profile's plugins: mapping.
func (p *profileChecker) plugins(n *yaml.Node, field string) {
	known := slices.Concat(extensionKeys, []string{configapi.ExtensionMultiPoint}, slices.Sorted(maps.Keys(kubeSchedulerOnlyPoints)))
	fields, ok := p.mapping(n, field, true, known...)
	if !ok {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(kubeSchedulerOnlyPoints)) {
		if fields.has(key) {
			p.bad(fields.line(key), "%s.%s is an extension point of kube-scheduler that this scheduler does not have: %s", field, key, kubeSchedulerOnlyPoints[key])
		}
	}
	if v := fields.value(configapi.ExtensionMultiPoint); v != nil {
		point := field + "." + configapi.ExtensionMultiPoint
		if v.Kind == yaml.MappingNode {
			p.enabledDisabled(v, point)
		} else {
			p.bad(v.Line, "%s must be a mapping of enabled and disabled plugins, as in kube-scheduler", point)
		}
	}
	for _, key := range extensionKeys {
		v := fields.value(key)
		if v == nil {
			continue
		}
		keyLine := fields.line(key)
		point := field + "." + key
		if isNull(v) {
			p.bad(keyLine, "%s must be a list (write [] for no plugins, or leave %s out for the default ones)", point, key)
			continue
		}
		if v.Kind == yaml.MappingNode {
			p.enabledDisabled(v, point)
			continue
		}
		if v.Kind != yaml.SequenceNode {
			p.bad(v.Line, "%s must be a list of {name, weight}, or a mapping of enabled and disabled plugins", point)
			continue
		}
		p.pluginEntries(v, point)
	}
}

// enabledDisabled checks the kube-scheduler form of an extension point,
// {enabled: [{name, weight}], disabled: [{name}]}.
func (p *profileChecker) enabledDisabled(n *yaml.Node, point string) {
	fields, ok := p.mapping(n, point, false, "enabled", "disabled")
	if !ok {
		return
	}
	if v := fields.value("enabled"); v != nil && !isNull(v) {
		if v.Kind != yaml.SequenceNode {
			p.bad(v.Line, "%s.enabled must be a list of {name, weight}", point)
		} else {
			p.pluginEntries(v, point+".enabled")
		}
	}
	if v := fields.value("disabled"); v != nil && !isNull(v) {
		if v.Kind != yaml.SequenceNode {
			p.bad(v.Line, "%s.disabled must be a list of {name}", point)
		} else {
			p.pluginEntries(v, point+".disabled")
		}
	}
}

// pluginEntries checks a list of {name, weight} of an extension point.
// Which names and weights the point takes is the API validation's
// concern.
func (p *profileChecker) pluginEntries(v *yaml.Node, point string) {
	for i, item := range v.Content {
		item = resolveAlias(item)
		entry := fmt.Sprintf("%s[%d]", point, i)
		ef, ok := p.mapping(item, entry, false, "name", "weight")
		if !ok {
			continue
		}
		ef.scalar(p, "name", entry)
		if w := ef.value("weight"); w != nil && !isNull(w) {
			p.weight(w, entry+".weight")
		}
	}
}

// weight checks a score weight: an integer of at least 1.
func (p *profileChecker) weight(n *yaml.Node, field string) {
	if n.Kind != yaml.ScalarNode {
		p.bad(n.Line, "%s must be an integer", field)
		return
	}
	var w int64
	if n.Tag != "!!int" || n.Decode(&w) != nil {
		p.bad(n.Line, "%s must be an integer, got %s", field, strconv.Quote(n.Value))
		return
	}
	if w < 1 || w > math.MaxInt32 {
		p.bad(n.Line, "%s must be between 1 and %d, got %d", field, math.MaxInt32, w)
	}
}

// pluginConfig checks a profile's pluginConfig: list.
func (p *profileChecker) pluginConfig(n *yaml.Node, field string) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.bad(n.Line, "%s must be a list of {name, args}", field)
		return
	}
	for i, item := range n.Content {
		item = resolveAlias(item)
		entry := fmt.Sprintf("%s[%d]", field, i)
		fields, ok := p.mapping(item, entry, false, "name", "args")
		if !ok {
			continue
		}
		fields.scalar(p, "name", entry)
		if args := fields.value("args"); args != nil && !isNull(args) && args.Kind != yaml.MappingNode {
			p.bad(args.Line, "%s.args must be a mapping", entry)
		}
	}
}

// nodeFields is a decoded mapping: each known key's key and value nodes.
type nodeFields map[string][2]*yaml.Node

func (f nodeFields) has(key string) bool { _, ok := f[key]; return ok }

// value returns the (alias-resolved) value of key, or nil when absent.
func (f nodeFields) value(key string) *yaml.Node {
	if kv, ok := f[key]; ok {
		return resolveAlias(kv[1])
	}
	return nil
}

// line returns the line of key, or 0 when absent.
func (f nodeFields) line(key string) int {
	if kv, ok := f[key]; ok {
		return kv[0].Line
	}
	return 0
}

// scalar returns the value of key as a string. ok is false when the key is
// absent, null or not a scalar; the latter two are reported.
func (f nodeFields) scalar(p *profileChecker, key, field string) (string, bool) {
	v := f.value(key)
	switch {
	case v == nil:
		return "", false
	case isNull(v):
		p.bad(f.line(key), "%s.%s is required", field, key)
		return "", false
	case v.Kind != yaml.ScalarNode:
		p.bad(v.Line, "%s.%s must be a string", field, key)
		return "", false
	}
	return v.Value, true
}

// mapping checks that n is a mapping whose keys are all in known and
// appear once, reporting every unknown or repeated key, and returns its
// fields. ok is false when n is not a mapping; a null n is accepted as an
// empty mapping when nullOK is set.
func (p *profileChecker) mapping(n *yaml.Node, field string, nullOK bool, known ...string) (nodeFields, bool) {
	if nullOK && isNull(n) {
		return nodeFields{}, true
	}
	if n.Kind != yaml.MappingNode {
		p.bad(n.Line, "%s must be a mapping", field)
		return nil, false
	}
	out := nodeFields{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(known, k.Value):
			p.bad(k.Line, "%s: unknown field %s (known: %s)", field, quote(k.Value), strings.Join(known, ", "))
		case out.has(k.Value):
			p.bad(k.Line, "%s.%s is given twice, first on line %d", field, k.Value, out.line(k.Value))
		default:
			out[k.Value] = [2]*yaml.Node{k, v}
		}
	}
	return out, true
}

// resolveAlias follows a YAML alias (*name) to the node it refers to.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// valueOf returns the value node of key in mapping m, or nil.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	if m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
	}
	return nil
}
