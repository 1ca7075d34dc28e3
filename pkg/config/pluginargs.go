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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/scheme"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/validation"
)

// HasTypedArgs reports whether the configuration API has a type for the
// args of the named plugin (kind <plugin>Args), which a profile's
// pluginConfig entry for it then decodes into.
func HasTypedArgs(plugin string) bool {
	return scheme.Scheme.Recognizes(v1alpha1.SchemeGroupVersion.WithKind(plugin + "Args"))
}

// DecodePluginArgs reads a plugin's args as the configuration file does.
// When the API has a type for them (HasTypedArgs), raw is decoded into it
// through the scheme, strictly, defaulted, converted to the internal
// version and validated; nil raw gives the defaults. Errors name the
// plugin, and the file and line of the field at fault. The args of any
// other plugin are returned as they are, for the plugin to decode.
//
// Callers that build a configuration in code use it, as do plugins given
// RawArgs for typed args (pkg/plugins/pluginutil.TypedArgs).
func DecodePluginArgs(plugin string, raw *configapi.RawArgs) (runtime.Object, error) {
	if !HasTypedArgs(plugin) {
		if raw == nil {
			return nil, nil
		}
		return raw, nil
	}
	var data []byte
	src := ""
	if raw != nil {
		data, src = raw.YAML, raw.Source
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s args: %w", plugin, wrapSource(src, flattenYAMLError(data, err)))
		}
	}
	var node *yaml.Node
	if len(doc.Content) > 0 && !isNull(doc.Content[0]) {
		node = doc.Content[0]
	}
	obj, problems := decodeTypedArgs(plugin, node)
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s args: %s", plugin, wrapSource(src, errors.New(strings.Join(problemMessages(problems), "; "))))
	}
	if err := ValidatePluginArgs(plugin, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// argsProblem is a problem of a plugin's args at a line of the file (0:
// unknown).
type argsProblem struct {
	line int
	msg  string
}

func (p argsProblem) String() string {
	if p.line <= 0 {
		return p.msg
	}
	return fmt.Sprintf("line %d: %s", p.line, p.msg)
}

// decodeTypedArgs decodes the args under node (nil: none) of a plugin the
// API has a type for into its internal type, defaulted. Problems are
// placed at the line of their field under node.
// problemMessages words each of problems.
func problemMessages(problems []argsProblem) []string {
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = p.String()
	}
	return msgs
}

func decodeTypedArgs(plugin string, node *yaml.Node) (runtime.Object, []argsProblem) {
	return decodeTypedKind(plugin+"Args", node)
}

// decodeTypedKind decodes the mapping under node (nil: none) into the
// API's kind, defaulted, as decodeTypedArgs does.
func decodeTypedKind(kind string, node *yaml.Node) (runtime.Object, []argsProblem) {
	gvk := v1alpha1.SchemeGroupVersion.WithKind(kind)
	data := []byte("{}")
	line := func(path string) int {
		if node == nil {
			return 0
		}
		return keyLine(node, path)
	}
	if node != nil {
		node = resolveAlias(node)
		if node.Kind != yaml.MappingNode {
			return nil, []argsProblem{{node.Line, "must be a mapping"}}
		}
		// apiVersion and kind may be given: this API's or
		// kube-scheduler's, and the plugin's kind.
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			switch k.Value {
			case "apiVersion":
				if v.Value != APIVersion && v.Value != KubeSchedulerAPIVersion {
					return nil, []argsProblem{{k.Line, fmt.Sprintf("apiVersion is %s, want %q or %q (or leave it out)", quote(v.Value), KubeSchedulerAPIVersion, APIVersion)}}
				}
			case "kind":
				if v.Value != kind {
					return nil, []argsProblem{{k.Line, fmt.Sprintf("kind is %s, want %q (or leave it out)", quote(v.Value), kind)}}
				}
			}
		}
		if check := nodeChecks[kind]; check != nil {
			if problems := check(node); len(problems) > 0 {
				return nil, problems
			}
		}
		budget := maxJSONNodes
		v, err := nodeValue(node, &budget)
		if err != nil {
			return nil, []argsProblem{{0, err.Error()}}
		}
		m, _ := v.(map[string]any)
		delete(m, "apiVersion")
		delete(m, "kind")
		if data, err = json.Marshal(m); err != nil {
			return nil, []argsProblem{{node.Line, err.Error()}}
		}
	}
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(data, &gvk, nil)
	if err != nil {
		if strict, ok := runtime.AsStrictDecodingError(err); ok {
			var out []argsProblem
			for _, e := range strict.Errors() {
				out = append(out, strictProblem(e.Error(), line))
			}
			return nil, out
		}
		var fe *field.Error
		if errors.As(err, &fe) {
			// The line of the value refused, where it starts.
			l := line(fe.Field)
			if node != nil {
				if v, _ := walkPath(node, fe.Field); v != nil {
					l = v.Line
				}
			}
			return nil, []argsProblem{{l, fe.Field + " " + fe.Detail}}
		}
		p := decodeProblem(err.Error(), line)
		if m := invalidDurationRE.FindStringSubmatch(err.Error()); m != nil && p.line == 0 && node != nil {
			// A duration's own reader does not name its field: find the
			// value in the mapping.
			if key := keyOfValue(node, m[1]); key != nil {
				p = argsProblem{key.Line, fmt.Sprintf("%s: %q is not a duration, such as 30s", key.Value, m[1])}
			}
		}
		return nil, []argsProblem{p}
	}
	return obj, nil
}

// invalidDurationRE matches time.ParseDuration's error.
var invalidDurationRE = regexp.MustCompile(`time: invalid duration "(.*)"`)

// keyOfValue returns the key, in the mappings under node, whose value is
// the scalar value; nil when there is none.
func keyOfValue(node *yaml.Node, value string) *yaml.Node {
	node = resolveAlias(node)
	if node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			if v := resolveAlias(node.Content[i+1]); v.Kind == yaml.ScalarNode && v.Value == value {
				return node.Content[i]
			}
		}
	}
	for _, c := range node.Content {
		if c.Kind == yaml.MappingNode || c.Kind == yaml.SequenceNode {
			if k := keyOfValue(c, value); k != nil {
				return k
			}
		}
	}
	return nil
}

var (
	// unknownFieldRE matches a strict decoding error of the scheme.
	unknownFieldRE = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)
	// jsonTypeRE matches encoding/json's type error.
	jsonTypeRE = regexp.MustCompile(`cannot unmarshal (\w+) into Go (?:struct field|value of type) (?:\w+\.)?(\S*?)(?: of type (\S+))?$`)
	// fieldNotFoundRE matches the error of a field's own strict reader.
	fieldNotFoundRE = regexp.MustCompile(`(\w+): field (\S+) not found`)
)

// strictProblem words a strict decoding error as the file's other
// unknown fields are: "field x not found", at the field's line.
func strictProblem(msg string, line func(string) int) argsProblem {
	m := unknownFieldRE.FindStringSubmatch(msg)
	if m == nil {
		return argsProblem{0, oneLine(msg)}
	}
	path := m[2]
	name := path[strings.LastIndex(path, ".")+1:]
	if m[1] == "duplicate" {
		return argsProblem{line(path), fmt.Sprintf("field %s is given twice", shorten(name))}
	}
	return argsProblem{line(path), fmt.Sprintf("field %s not found", shorten(name))}
}

// decodeProblem words any other decoding error without Go type names.
func decodeProblem(msg string, line func(string) int) argsProblem {
	if m := fieldNotFoundRE.FindStringSubmatch(msg); m != nil {
		return argsProblem{line(m[1] + "." + m[2]), fmt.Sprintf("field %s not found", m[2])}
	}
	if m := jsonTypeRE.FindStringSubmatch(msg); m != nil {
		got := yamlKinds[map[string]string{"string": "str", "number": "float", "object": "map", "array": "seq", "bool": "bool"}[m[1]]]
		if got == "" {
			got = "a " + m[1]
		}
		return argsProblem{line(m[2]), fmt.Sprintf("%s: expected %s, got %s", m[2], goKind(m[3]), got)}
	}
	if i := strings.LastIndex(msg, "json: "); i >= 0 {
		msg = msg[i+len("json: "):]
	}
	return argsProblem{0, oneLine(msg)}
}

// keyLine returns the line of the field a path names under node (the
// key's own line for a key of a mapping), or of the deepest part of the
// path node has.
func keyLine(node *yaml.Node, path string) int {
	parent, last := "", path
	if i := strings.LastIndex(path, "."); i >= 0 {
		parent, last = path[:i], path[i+1:]
	}
	if strings.Contains(last, "[") {
		_, l := walkPath(node, path)
		return l
	}
	n := node
	l := node.Line
	if parent != "" {
		n, l = walkPath(node, parent)
	}
	if n != nil && n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == last {
				return n.Content[i].Line
			}
		}
	}
	return l
}

// CompletePluginArgs defaults and validates typed args built in code (the
// internal version, as a plugin's factory gets them): fields left zero
// take the defaults of the file's version, as if the file had left them
// out. It returns a defaulted copy; args is not modified.
func CompletePluginArgs(plugin string, args runtime.Object) (runtime.Object, error) {
	versioned, err := scheme.Scheme.ConvertToVersion(args.DeepCopyObject(), v1alpha1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", plugin, err)
	}
	scheme.Scheme.Default(versioned)
	internal, err := scheme.Scheme.ConvertToVersion(versioned, configapi.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("%s args: %w", plugin, err)
	}
	if err := ValidatePluginArgs(plugin, internal); err != nil {
		return nil, err
	}
	return internal, nil
}

// ValidatePluginArgs checks typed args, naming the plugin and each bad
// field, as "NodeResourcesFit args: resources[0].weight: must be
// between 1 and 100, got 101".
func ValidatePluginArgs(plugin string, args runtime.Object) error {
	errs := validation.ValidatePluginArgs(nil, args)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = argsFieldMessage(e.Field, e.Detail)
	}
	return fmt.Errorf("%s args: %s", plugin, strings.Join(msgs, "; "))
}

// argsFieldMessage renders a problem of a plugin's args after its field:
// "field: detail", or "field detail" for a detail that starts with a
// space (see pkg/apis/config/validation).
func argsFieldMessage(field, detail string) string {
	if strings.HasPrefix(detail, " ") {
		return field + detail
	}
	return field + ": " + detail
}
