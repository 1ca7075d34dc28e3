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

package custominformer

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// yamlError is a YAML error on one line.
type yamlError struct{ err error }

func (e yamlError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(e.err, &te) {
		msg = strings.Join(te.Errors, "; ")
	}
	return msg
}

func (e yamlError) Unwrap() error { return e.err }

var (
	// strictFieldRE matches a strict decoding error; group 2 is the path.
	strictFieldRE = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)
	// typeErrorRE matches a JSON type error; group 1 is the path.
	typeErrorRE = regexp.MustCompile(`Go struct field [A-Za-z0-9_]+\.(\S+) of type`)
)

// fieldError is a decoding error told with the lines of the fields it is
// about.
type fieldError struct {
	msg string
	err error
}

func (e *fieldError) Error() string { return e.msg }
func (e *fieldError) Unwrap() error { return e.err }

// locateFieldErrors adds to a decoding error of the document n the lines
// of the fields it names, where it names them in a way we know.
func locateFieldErrors(n *yaml.Node, err error) error {
	if se, ok := runtime.AsStrictDecodingError(err); ok {
		type located struct {
			line int
			msg  string
		}
		var all []located
		for _, e := range se.Errors() {
			l := located{msg: e.Error()}
			if m := strictFieldRE.FindStringSubmatch(l.msg); m != nil {
				if l.line = fieldLine(n, m[2]); l.line > 0 {
					l.msg = fmt.Sprintf("line %d: %s", l.line, l.msg)
				}
			}
			all = append(all, l)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].line < all[j].line })
		msgs := make([]string, len(all))
		for i, l := range all {
			msgs[i] = l.msg
		}
		return &fieldError{msg: strings.Join(msgs, "; "), err: err}
	}
	if m := typeErrorRE.FindStringSubmatch(err.Error()); m != nil {
		if line := fieldLine(n, m[1]); line > 0 {
			return &fieldError{msg: fmt.Sprintf("line %d: %s", line, err), err: err}
		}
	}
	return err
}

// decode turns one document into an object of the inventory's type, with
// its resourceVersion and apiVersion/kind cleared, and checks it.
func (inv *inventory) decode(n *yaml.Node) (runtime.Object, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a mapping: want a %s object", inv.gvk.Kind)
	}
	retagTimestamps(n)
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, yamlError{err}
	}
	v, err := jsonable(v)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a mapping: want a %s object", inv.gvk.Kind)
	}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion != inv.gvk.GroupVersion().String() || kind != inv.gvk.Kind {
		return nil, fmt.Errorf("apiVersion %q and kind %q: want apiVersion %q and kind %q",
			apiVersion, kind, inv.gvk.GroupVersion().String(), inv.gvk.Kind)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("converting to JSON: %w", err)
	}
	obj := inv.example.DeepCopyObject()
	if _, _, err := inv.decoder.Decode(data, nil, obj); err != nil {
		return nil, locateFieldErrors(n, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	om := mustMeta(obj)
	om.SetResourceVersion("")
	if err := inv.checkMeta(om); err != nil {
		return nil, err
	}
	if err := validateInventoryObject(obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkMeta checks the name and namespace, defaulting the namespace of a
// namespaced type.
func (inv *inventory) checkMeta(m metav1.Object) error {
	if m.GetName() == "" {
		return errors.New("metadata.name: required")
	}
	if msgs := validation.IsDNS1123Subdomain(m.GetName()); len(msgs) > 0 {
		return fmt.Errorf("metadata.name %q: %s", m.GetName(), strings.Join(msgs, "; "))
	}
	ns := m.GetNamespace()
	switch {
	case inv.scopeSet && !inv.scoped && ns != "":
		return fmt.Errorf("metadata.namespace %q: must not be set, %s is cluster-scoped", ns, inv.gvk.Kind)
	case inv.scopeSet && inv.scoped && ns == "":
		m.SetNamespace(metav1.NamespaceDefault)
	case ns != "":
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return fmt.Errorf("metadata.namespace %q: %s", ns, strings.Join(msgs, "; "))
		}
	}
	return nil
}

// validateInventoryObject runs the API's own validation, for the types
// that have one here.
func validateInventoryObject(obj runtime.Object) error {
	switch o := obj.(type) {
	case *v1alpha1.Grant:
		return v1alpha1.ValidateGrant(o).ToAggregate()
	case *v1alpha1.ExternalWorkload:
		return v1alpha1.ValidateExternalWorkload(o).ToAggregate()
	}
	return nil
}

// retagTimestamps makes plain scalars that YAML would read as timestamps
// strings: API types hold dates as strings, and decoding them into
// time.Time would rewrite them.
func retagTimestamps(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!timestamp" {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		retagTimestamps(c)
	}
}

// jsonable converts what yaml.v3 decodes into something encoding/json
// encodes: mappings with non-string keys get string keys.
func jsonable(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			t[k] = c
		}
		return t, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			var ks string
			switch kt := k.(type) {
			case string:
				ks = kt
			case bool, int, int64, uint64, float64:
				ks = fmt.Sprint(kt)
			default:
				return nil, fmt.Errorf("mapping key %v: must be a string", k)
			}
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			out[ks] = c
		}
		return out, nil
	case []any:
		for i, e := range t {
			c, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			t[i] = c
		}
		return t, nil
	}
	return v, nil
}

// fieldLine returns the line of the field at path ("spec.taints[0].efect",
// as in strict decoding errors) in mapping n, or 0 if it is not found.
func fieldLine(n *yaml.Node, path string) int {
	line := 0
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return 0
		}
		var found *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				line, found = n.Content[i].Line, n.Content[i+1]
			}
		}
		if found == nil {
			return 0
		}
		n = found
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if n.Kind == yaml.AliasNode && n.Alias != nil {
				n = n.Alias
			}
			if !ok || err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return 0
			}
			n, line = n.Content[i], n.Content[i].Line
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return line
}
