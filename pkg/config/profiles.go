package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Extension point keys under a profile's plugins:, in the order a
// scheduling cycle runs them.
const (
	ExtensionQueueSort = "queueSort"
	ExtensionPreFilter = "preFilter"
	ExtensionFilter    = "filter"
	ExtensionPreScore  = "preScore"
	ExtensionScore     = "score"
	ExtensionReserve   = "reserve"
	ExtensionPermit    = "permit"
	// ExtensionPostFilter runs only when a cycle found no placement.
	ExtensionPostFilter = "postFilter"
	ExtensionBind       = "bind"
	// ExtensionMultiPoint is not a point of its own: its plugins are
	// enabled at every point whose interface they implement.
	ExtensionMultiPoint = "multiPoint"
)

// extensionKeys lists the keys accepted under plugins:, in cycle order.
var extensionKeys = []string{
	ExtensionQueueSort, ExtensionPreFilter, ExtensionFilter, ExtensionPreScore,
	ExtensionScore, ExtensionReserve, ExtensionPermit, ExtensionPostFilter, ExtensionBind,
}

// Profile is one entry of profiles: the plugins that schedule the pods
// whose spec.schedulerName is SchedulerName.
type Profile struct {
	// SchedulerName is required, a DNS-1123 subdomain (as a pod's
	// spec.schedulerName must be), and unique in the file.
	SchedulerName string
	// Plugins overrides the default plugins per extension point.
	Plugins Plugins
	// PluginConfig holds the settings of individual plugins, in file order.
	// Names are unique.
	PluginConfig []PluginConfig
	// Line is the entry's line in the file.
	Line int
}

// Plugins lists a profile's plugins per extension point. A nil list means
// the point is absent from the file and the default profile's plugins
// apply; a non-nil list replaces them, and an empty one ("[]") means no
// plugin runs at that point.
type Plugins struct {
	QueueSort  *PluginList
	PreFilter  *PluginList
	Filter     *PluginList
	PreScore   *PluginList
	Score      *PluginList
	Reserve    *PluginList
	Permit     *PluginList
	PostFilter *PluginList
	Bind       *PluginList
	// MultiPoint is kube-scheduler's multiPoint: always the
	// enabled/disabled form (Merge set). Its enabled plugins go to every
	// point they implement (except where the profile disabled them); its
	// disabled plugins leave every point's defaults.
	MultiPoint *PluginList
}

// Get returns the list of the extension point named by key (one of the
// Extension* constants), or nil when the point is absent or key is unknown.
func (p *Plugins) Get(key string) *PluginList {
	if ptr := p.slot(key); ptr != nil {
		return *ptr
	}
	return nil
}

// slot returns the field of the extension point named by key, or nil for
// an unknown key.
func (p *Plugins) slot(key string) **PluginList {
	switch key {
	case ExtensionQueueSort:
		return &p.QueueSort
	case ExtensionPreFilter:
		return &p.PreFilter
	case ExtensionFilter:
		return &p.Filter
	case ExtensionPreScore:
		return &p.PreScore
	case ExtensionScore:
		return &p.Score
	case ExtensionReserve:
		return &p.Reserve
	case ExtensionPermit:
		return &p.Permit
	case ExtensionPostFilter:
		return &p.PostFilter
	case ExtensionBind:
		return &p.Bind
	case ExtensionMultiPoint:
		return &p.MultiPoint
	}
	return nil
}

// PluginList is the plugins enabled at one extension point, in the order
// they run.
type PluginList struct {
	// Plugins are the point's plugins (the list form), or the plugins
	// to enable (the enabled/disabled form).
	Plugins []Plugin
	// Merge is set for the form kube-scheduler's profiles use, a mapping
	// of enabled and disabled plugins: the default plugins stay, less the
	// disabled ones ("*" disables them all), and the enabled ones are
	// added after them; an enabled plugin that is also a default one
	// takes its place (and its weight). Without it the list replaces the
	// default plugins.
	Merge bool
	// Disabled are the names of the disabled plugins (Merge only).
	Disabled []string
	// Line is the line of the extension point's key in the file.
	Line int
}

// Plugin is one entry of an extension point's list.
type Plugin struct {
	Name string
	// Weight multiplies the plugin's scores. It is only allowed under
	// score, where it is at least 1 when given; 0 means it was not given.
	Weight int64
	// Line is the entry's line in the file.
	Line int
}

// PluginConfig is one entry of a profile's pluginConfig.
type PluginConfig struct {
	Name string
	// Args is the plugin's own settings, handed to its factory; nil when
	// the entry has none.
	Args *Section
	// Line is the entry's line in the file.
	Line int
}

// profileParser decodes the profiles: node. Unlike the rest of the file,
// which is decoded into Go structs, profiles are walked node by node, so
// that every error can name the field's full path (e.g.
// "profiles[0] (gpu).plugins.score[1].weight") as well as its line.
type profileParser struct {
	path string
	data []byte
	doc  *yaml.Node
	bad  func(line int, format string, args ...any)
}

// parse decodes the value of the profiles: key. A missing or null value
// means no profiles.
func (p *profileParser) parse(n *yaml.Node) []Profile {
	n = resolveAlias(n)
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.bad(n.Line, "profiles must be a list")
		return nil
	}
	var out []Profile
	for i, item := range n.Content {
		item = resolveAlias(item)
		prof := Profile{Line: item.Line}
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
		name, _ := fields.scalar(p, "schedulerName", field)
		prof.SchedulerName = name
		if v := fields.value("plugins"); v != nil {
			prof.Plugins = p.plugins(v, field+".plugins")
		}
		if v := fields.value("pluginConfig"); v != nil {
			prof.PluginConfig = p.pluginConfig(v, field+".pluginConfig")
		}
		out = append(out, prof)
	}
	return out
}

// kubeSchedulerOnlyPoints are extension points of kube-scheduler's
// profiles that this scheduler does not have, with what to do instead.
var kubeSchedulerOnlyPoints = map[string]string{
	"preEnqueue": "scheduling gates are honoured by the default profile; PreEnqueue plugins are not supported",
	"preBind":    "volume binding runs in the bind plugins; PreBind plugins are not supported",
	"postBind":   "PostBind plugins are not supported",
}

// plugins decodes a profile's plugins: mapping.
func (p *profileParser) plugins(n *yaml.Node, field string) Plugins {
	var out Plugins
	known := slices.Concat(extensionKeys, []string{ExtensionMultiPoint}, slices.Sorted(maps.Keys(kubeSchedulerOnlyPoints)))
	fields, ok := p.mapping(n, field, true, known...)
	if !ok {
		return out
	}
	for _, key := range slices.Sorted(maps.Keys(kubeSchedulerOnlyPoints)) {
		if fields.has(key) {
			p.bad(fields.line(key), "%s.%s is an extension point of kube-scheduler that this scheduler does not have: %s", field, key, kubeSchedulerOnlyPoints[key])
		}
	}
	if v := fields.value(ExtensionMultiPoint); v != nil {
		point := field + "." + ExtensionMultiPoint
		if v.Kind == yaml.MappingNode {
			out.MultiPoint = p.enabledDisabled(v, point, fields.line(ExtensionMultiPoint))
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
			*out.slot(key) = p.enabledDisabled(v, point, keyLine)
			continue
		}
		if v.Kind != yaml.SequenceNode {
			p.bad(v.Line, "%s must be a list of {name, weight}, or a mapping of enabled and disabled plugins", point)
			continue
		}
		list := &PluginList{Plugins: p.pluginEntries(v, point), Line: keyLine}
		*out.slot(key) = list
	}
	return out
}

// enabledDisabled decodes the kube-scheduler form of an extension point,
// {enabled: [{name, weight}], disabled: [{name}]}.
func (p *profileParser) enabledDisabled(n *yaml.Node, point string, keyLine int) *PluginList {
	list := &PluginList{Plugins: []Plugin{}, Merge: true, Line: keyLine}
	fields, ok := p.mapping(n, point, false, "enabled", "disabled")
	if !ok {
		return list
	}
	if v := fields.value("enabled"); v != nil && !isNull(v) {
		if v.Kind != yaml.SequenceNode {
			p.bad(v.Line, "%s.enabled must be a list of {name, weight}", point)
		} else {
			list.Plugins = p.pluginEntries(v, point+".enabled")
		}
	}
	if v := fields.value("disabled"); v != nil && !isNull(v) {
		if v.Kind != yaml.SequenceNode {
			p.bad(v.Line, "%s.disabled must be a list of {name}", point)
		} else {
			for _, pl := range p.pluginEntries(v, point+".disabled") {
				list.Disabled = append(list.Disabled, pl.Name)
			}
		}
	}
	return list
}

// pluginEntries decodes a list of {name, weight} of an extension point.
// Which names and weights the point takes is the API validation's
// concern.
func (p *profileParser) pluginEntries(v *yaml.Node, point string) []Plugin {
	out := []Plugin{}
	for i, item := range v.Content {
		item = resolveAlias(item)
		entry := fmt.Sprintf("%s[%d]", point, i)
		ef, ok := p.mapping(item, entry, false, "name", "weight")
		if !ok {
			continue
		}
		pl := Plugin{Line: item.Line, Name: p.entryName(ef, entry)}
		if w := ef.value("weight"); w != nil && !isNull(w) {
			pl.Weight = p.weight(w, entry+".weight")
		}
		out = append(out, pl)
	}
	return out
}

// weight decodes a score weight: an integer of at least 1. It returns 0
// after reporting a problem.
func (p *profileParser) weight(n *yaml.Node, field string) int64 {
	if n.Kind != yaml.ScalarNode {
		p.bad(n.Line, "%s must be an integer", field)
		return 0
	}
	var w int64
	if n.Tag != "!!int" || n.Decode(&w) != nil {
		p.bad(n.Line, "%s must be an integer, got %s", field, strconv.Quote(n.Value))
		return 0
	}
	if w < 1 || w > math.MaxInt32 {
		p.bad(n.Line, "%s must be between 1 and %d, got %d", field, math.MaxInt32, w)
		return 0
	}
	return w
}

// pluginConfig decodes a profile's pluginConfig: list.
func (p *profileParser) pluginConfig(n *yaml.Node, field string) []PluginConfig {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.bad(n.Line, "%s must be a list of {name, args}", field)
		return nil
	}
	var out []PluginConfig
	for i, item := range n.Content {
		item = resolveAlias(item)
		entry := fmt.Sprintf("%s[%d]", field, i)
		fields, ok := p.mapping(item, entry, false, "name", "args")
		if !ok {
			continue
		}
		pc := PluginConfig{Line: item.Line, Name: p.entryName(fields, entry)}
		if args := fields.value("args"); args != nil && !isNull(args) {
			if args.Kind != yaml.MappingNode {
				p.bad(args.Line, "%s.args must be a mapping", entry)
			} else {
				pc.Args = newSection(p.path, p.data, p.doc, args)
			}
		}
		out = append(out, pc)
	}
	return out
}

// entryName returns the name: of a list entry (decoded into fields);
// whether it is given and unique is the API validation's concern.
func (p *profileParser) entryName(fields nodeFields, entry string) string {
	name, _ := fields.scalar(p, "name", entry)
	return name
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
func (f nodeFields) scalar(p *profileParser, key, field string) (string, bool) {
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
func (p *profileParser) mapping(n *yaml.Node, field string, nullOK bool, known ...string) (nodeFields, bool) {
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
