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
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/scheme"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/validation"
)

// decodeAPI decodes data, a file whose structure Parse has checked,
// through the configuration API's scheme: strictly, into the internal
// version, with the defaults of the file's version. It then validates the
// result. Each problem is reported at the line of the file its field path
// points to (root is the file's parsed document).
func decodeAPI(root *yaml.Node) (*configapi.SchedulerConfiguration, []string) {
	// The codec reads JSON made from the parsed document, not the YAML
	// text: its YAML reader follows YAML 1.1, where a plugin named Y or
	// an args value "on" are booleans, while the file is read as YAML 1.2
	// everywhere else.
	data, err := documentJSON(root)
	if err != nil {
		return nil, []string{err.Error()}
	}
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		// The structural pass accepts only what the versioned types
		// hold, so this is a disagreement between the two; it still
		// names what the decoder refused.
		if strict, ok := runtime.AsStrictDecodingError(err); ok {
			var out []string
			for _, e := range strict.Errors() {
				out = append(out, fmt.Sprintf("line %d: %s", root.Line, e.Error()))
			}
			return nil, out
		}
		return nil, []string{fmt.Sprintf("line %d: %s", root.Line, err.Error())}
	}
	cfg, ok := obj.(*configapi.SchedulerConfiguration)
	if !ok {
		return nil, []string{fmt.Sprintf("line %d: the file decodes to %T, not a scheduler configuration", root.Line, obj)}
	}
	problems := typePluginArgs(cfg, root)
	problems = append(problems, typeHandlerArgs(cfg, root)...)
	problems = append(problems, typeSourceArgs(cfg, root)...)
	if len(problems) > 0 {
		return nil, problems
	}
	return cfg, fieldProblems(validation.ValidateSchedulerConfiguration(cfg), root)
}

// typePluginArgs decodes the args of every pluginConfig entry whose
// plugin the API has a type for into that type, defaulted (validation
// follows with the rest of the file). Each problem is at its line.
func typePluginArgs(cfg *configapi.SchedulerConfiguration, root *yaml.Node) []string {
	var problems []string
	for i := range cfg.Profiles {
		for j := range cfg.Profiles[i].PluginConfig {
			pc := &cfg.Profiles[i].PluginConfig[j]
			if !HasTypedArgs(pc.Name) {
				continue
			}
			node, _ := walkPath(root, fmt.Sprintf("profiles[%d].pluginConfig[%d].args", i, j))
			if node != nil && isNull(node) {
				node = nil
			}
			obj, errs := decodeTypedArgs(pc.Name, node)
			for _, e := range errs {
				if e.line <= 0 {
					e.line = lineOfPath(root, fmt.Sprintf("profiles[%d].pluginConfig[%d]", i, j))
				}
				problems = append(problems, fmt.Sprintf("line %d: %s (%s args)", e.line, e.msg, pc.Name))
			}
			pc.Args = obj
		}
	}
	return problems
}

// argsFieldRE matches the path of a field of a plugin's args.
var argsFieldRE = regexp.MustCompile(`^(profiles\[\d+\]\.pluginConfig\[\d+\])\.args\.(.+)$`)

// sourceFieldRE matches the path of a field of a custom informer source's
// typed settings: the entry's index, the source type and the field.
var sourceFieldRE = regexp.MustCompile(`^customInformers\[(\d+)\]\.source\.([^.]+)\.(.+)$`)

// fieldProblems renders validation errors for a message: each prefixed
// with the line its field is on.
func fieldProblems(errs field.ErrorList, root *yaml.Node) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		if v, ok := e.BadValue.(string); ok && len(v) > maxQuoted {
			// A message repeats a bounded part of what the file says.
			short := *e
			short.BadValue = shorten(v)
			e = &short
		}
		node, line := walkPath(root, e.Field)
		if m := argsFieldRE.FindStringSubmatch(e.Field); m != nil {
			// A plugin's typed args: worded as the plugin's own errors
			// were, after its name.
			plugin := ""
			if n := valueAtPath(root, m[1]+".name"); n != nil {
				plugin = n.Value
			}
			out = append(out, fmt.Sprintf("line %d: %s args: %s", line, plugin, argsFieldMessage(m[2], e.Detail)))
			continue
		}
		if msg, ok := handlerFieldProblem(root, e, line); ok {
			// A built-in handler's typed args, after its name.
			out = append(out, msg)
			continue
		}
		if msg, ok := sourceFieldProblem(root, e, line); ok {
			// A built-in source's typed settings: worded as the
			// source's own errors are.
			out = append(out, msg)
			continue
		}
		msg := fmt.Sprintf("line %d: %s: %s", line, e.Field, e.ErrorBody())
		if node == nil && e.Type == field.ErrorTypeInvalid {
			// A default, not something the file says: say so, since the
			// line is only that of the nearest part the file has.
			msg += " (the file leaves it out: that is its default)"
		}
		if e.Type == field.ErrorTypeDuplicate {
			if first := firstOfDuplicate(root, e.Field); first > 0 {
				msg += fmt.Sprintf(" (first on line %d)", first)
			}
		}
		out = append(out, msg)
	}
	return out
}

// lineOfPath returns the line of the field a validation path such as
// "profiles[0].plugins.score.enabled[1].weight" names in the document
// under root, or of the deepest part of it the document has.
func lineOfPath(root *yaml.Node, path string) int {
	_, line := walkPath(root, path)
	return line
}

// walkPath follows a validation path through the document under root. It
// returns the node the path names (nil when the document does not have
// it) and the line of the deepest part of the path the document has. An
// extension point written as a plain list has no "enabled" key: the
// path's enabled[i] is the list's i-th item.
func walkPath(root *yaml.Node, path string) (*yaml.Node, int) {
	n := root
	line := root.Line
	for _, seg := range strings.Split(path, ".") {
		key, indexes := splitSegment(seg)
		n = resolveAlias(n)
		if key != "" {
			switch {
			case n.Kind == yaml.MappingNode:
				v := valueOf(n, key)
				if v == nil {
					return nil, line
				}
				line = lineOf(n, key)
				n = v
			case n.Kind == yaml.SequenceNode && key == "enabled":
				// The list form: stay on the list.
			default:
				return nil, line
			}
		}
		for _, i := range indexes {
			n = resolveAlias(n)
			if n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return nil, line
			}
			n = n.Content[i]
			line = n.Line
		}
	}
	return resolveAlias(n), line
}

// splitSegment splits one segment of a field path, "enabled[1]", into
// its key and indexes.
func splitSegment(seg string) (string, []int) {
	key, rest, _ := strings.Cut(seg, "[")
	var indexes []int
	for rest != "" {
		idx, after, ok := strings.Cut(rest, "]")
		if !ok {
			break
		}
		if i, err := strconv.Atoi(idx); err == nil {
			indexes = append(indexes, i)
		}
		rest = strings.TrimPrefix(after, "[")
	}
	return key, indexes
}

// firstOfDuplicate returns the line of the earliest entry of the list
// that path's last index is in whose field (path's last key) has the same
// value, e.g. for "profiles[2].schedulerName" the first profile with that
// name; 0 when there is none.
func firstOfDuplicate(root *yaml.Node, path string) int {
	listPath, key, ok := strings.Cut(path[strings.LastIndex(path, "[")+1:], "].")
	if !ok || strings.Contains(key, ".") {
		return 0
	}
	idx, err := strconv.Atoi(listPath)
	if err != nil {
		return 0
	}
	prefix := path[:strings.LastIndex(path, "[")]
	want := valueAtPath(root, path)
	for i := 0; i < idx; i++ {
		p := fmt.Sprintf("%s[%d].%s", prefix, i, key)
		if v := valueAtPath(root, p); v != nil && want != nil && v.Value == want.Value {
			return lineOfPath(root, fmt.Sprintf("%s[%d]", prefix, i))
		}
	}
	return 0
}

// valueAtPath returns the scalar node a path names, or nil.
func valueAtPath(root *yaml.Node, path string) *yaml.Node {
	if n, _ := walkPath(root, path); n != nil && n.Kind == yaml.ScalarNode {
		return n
	}
	return nil
}
