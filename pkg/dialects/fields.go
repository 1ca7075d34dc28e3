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

package dialects

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
)

// Reading the fields of group objects, the one way every policy of the
// table reads them: objects of CRDs are whatever their authors (or a
// broken client) stored, so every field a policy reads may be missing,
// of the wrong type, negative or huge. The readers below never panic;
// each problem becomes an error naming the field, which the policy
// reports with the object (see GroupPolicy.Err).

// FieldPath renders a path of map keys and list indexes for messages:
// "spec.workerGroupSpecs[1].minReplicas".
func FieldPath(path ...string) string {
	var b strings.Builder
	for i, p := range path {
		if strings.HasPrefix(p, "[") {
			b.WriteString(p)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// Index renders a list index as a path element.
func Index(i int) string { return "[" + strconv.Itoa(i) + "]" }

// TypeName says what a JSON value is, for messages.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, int32, int, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// Lookup walks path (map keys only) from obj. found is false when a key
// is missing or null; err is set when something on the way is not an
// object.
func Lookup(obj map[string]any, path ...string) (v any, found bool, err error) {
	var cur any = obj
	for i, key := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("%s is %s, not an object", FieldPath(path[:i]...), TypeName(cur))
		}
		if cur, ok = m[key]; !ok || cur == nil {
			return nil, false, nil
		}
	}
	return cur, true, nil
}

// IntField reads the integer at path: found is false when it is absent;
// err says what is wrong with a value that is not an integer in
// [0, MaxInt32]. display is how the path is named in errors (the path
// itself when empty).
func IntField(obj map[string]any, display string, path ...string) (n int64, found bool, err error) {
	if display == "" {
		display = FieldPath(path...)
	}
	v, found, err := Lookup(obj, path...)
	if err != nil || !found {
		return 0, false, err
	}
	switch x := v.(type) {
	case int64:
		n = x
	case int32:
		n = int64(x)
	case int:
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, true, fmt.Errorf("%s is %v, not an integer", display, x)
		}
		if x < 0 || x > math.MaxInt32 {
			return 0, true, outOfRange(display, fmt.Sprintf("%.0f", x), x < 0)
		}
		n = int64(x)
	default:
		return 0, true, fmt.Errorf("%s is %s, not an integer", display, TypeName(v))
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, true, outOfRange(display, strconv.FormatInt(n, 10), n < 0)
	}
	return n, true, nil
}

func outOfRange(display, value string, negative bool) error {
	if negative {
		return fmt.Errorf("%s is negative (%s)", display, value)
	}
	return fmt.Errorf("%s is too large (%s; at most %d)", display, value, math.MaxInt32)
}

// StringField reads the string at path, "" when absent.
func StringField(obj map[string]any, display string, path ...string) (string, error) {
	if display == "" {
		display = FieldPath(path...)
	}
	v, found, err := Lookup(obj, path...)
	if err != nil || !found {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is %s, not a string", display, TypeName(v))
	}
	return s, nil
}

// BoolField reads the boolean at path, false when absent.
func BoolField(obj map[string]any, display string, path ...string) (bool, error) {
	if display == "" {
		display = FieldPath(path...)
	}
	v, found, err := Lookup(obj, path...)
	if err != nil || !found {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s is %s, not true or false", display, TypeName(v))
	}
	return b, nil
}

// ListField reads the list at path, nil when absent.
func ListField(obj map[string]any, path ...string) ([]any, error) {
	v, found, err := Lookup(obj, path...)
	if err != nil || !found {
		return nil, err
	}
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not a list", FieldPath(path...), TypeName(v))
	}
	return l, nil
}

// MapField reads the object at path, nil when absent.
func MapField(obj map[string]any, path ...string) (map[string]any, error) {
	v, found, err := Lookup(obj, path...)
	if err != nil || !found {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not an object", FieldPath(path...), TypeName(v))
	}
	return m, nil
}

// quorumSum adds n to sum, failing past MaxInt32; what names the sum.
func quorumSum(sum, n int64, what string) (int64, error) {
	if sum+n > math.MaxInt32 {
		return 0, fmt.Errorf("%s is too large (more than %d pods)", what, math.MaxInt32)
	}
	return sum + n, nil
}

// Slimming objects: an informer stores every object of its resource, and
// owner objects carry whole pod templates. A slim copy keeps the identity
// of the object and only the fields its policy reads (Dialect.Fields).

// Path elements of slimPaths with a special meaning.
const (
	// EachItem stands for every item of a list.
	EachItem = "[]"
	// EachValue stands for every value of an object (a map keyed by
	// replica type, say).
	EachValue = "*"
)

// Slimmer returns an informer transform that keeps of an object of kind
// its apiVersion, kind, name, namespace, uid, resourceVersion and
// generation, and the fields at paths (with EachItem and EachValue). A
// field on a path that does not have the shape the path expects is kept
// whole, so that the policy still sees what is wrong with it.
func Slimmer(paths ...[]string) toolscache.TransformFunc {
	var transform toolscache.TransformFunc
	transform = func(obj any) (any, error) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			inner, err := transform(tomb.Obj)
			if err != nil {
				return nil, err
			}
			tomb.Obj = inner
			return tomb, nil
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		slim := &unstructured.Unstructured{Object: map[string]any{}}
		slim.SetAPIVersion(u.GetAPIVersion())
		slim.SetKind(u.GetKind())
		slim.SetNamespace(u.GetNamespace())
		slim.SetName(u.GetName())
		slim.SetUID(u.GetUID())
		slim.SetResourceVersion(u.GetResourceVersion())
		slim.SetGeneration(u.GetGeneration())
		for _, p := range paths {
			copyPath(slim.Object, u.Object, p)
		}
		return slim, nil
	}
	return transform
}

// copyPath copies the field at path from src into dst, creating the
// objects and lists on the way.
func copyPath(dst, src map[string]any, path []string) {
	if len(path) == 0 {
		return
	}
	key := path[0]
	v, ok := src[key]
	if !ok {
		return
	}
	if len(path) == 1 {
		dst[key] = copyJSON(v)
		return
	}
	switch path[1] {
	case EachItem:
		items, ok := v.([]any)
		if !ok {
			dst[key] = copyJSON(v)
			return
		}
		out, _ := dst[key].([]any)
		if len(out) != len(items) {
			out = make([]any, len(items))
		}
		for i, item := range items {
			m, ok := item.(map[string]any)
			if !ok || len(path) == 2 {
				out[i] = copyJSON(item)
				continue
			}
			o, _ := out[i].(map[string]any)
			if o == nil {
				o = map[string]any{}
			}
			copyPath(o, m, path[2:])
			out[i] = o
		}
		dst[key] = out
	case EachValue:
		m, ok := v.(map[string]any)
		if !ok {
			dst[key] = copyJSON(v)
			return
		}
		out, _ := dst[key].(map[string]any)
		if out == nil {
			out = map[string]any{}
		}
		for k, item := range m {
			im, ok := item.(map[string]any)
			if !ok || len(path) == 2 {
				out[k] = copyJSON(item)
				continue
			}
			o, _ := out[k].(map[string]any)
			if o == nil {
				o = map[string]any{}
			}
			copyPath(o, im, path[2:])
			out[k] = o
		}
		dst[key] = out
	default:
		m, ok := v.(map[string]any)
		if !ok {
			dst[key] = copyJSON(v)
			return
		}
		o, _ := dst[key].(map[string]any)
		if o == nil {
			o = map[string]any{}
		}
		copyPath(o, m, path[1:])
		dst[key] = o
	}
}

// copyJSON deep-copies the objects and lists of a JSON value; anything
// else is immutable (or not JSON at all) and returned as is, so that it
// never panics on a value a decoder would not produce.
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			out[k] = copyJSON(item)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = copyJSON(item)
		}
		return out
	default:
		return v
	}
}
