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

package perfsuite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// templateFuncs are the functions the suite's templates call, by the
// names upstream gives them. Arithmetic takes numbers of any Go numeric
// type or numeric strings, as the YAML parameters arrive as float64.
var templateFuncs = template.FuncMap{
	"AddInt":        func(xs ...any) (int, error) { f, err := fold(xs, 0, add); return int(f), err },
	"AddFloat":      func(xs ...any) (float64, error) { return fold(xs, 0, add) },
	"MultiplyInt":   func(xs ...any) (int, error) { f, err := fold(xs, 1, mul); return int(f), err },
	"MultiplyFloat": func(xs ...any) (float64, error) { return fold(xs, 1, mul) },
	"SubtractInt":   func(a, b any) (int, error) { f, err := binary(a, b, sub); return int(f), err },
	"SubtractFloat": func(a, b any) (float64, error) { return binary(a, b, sub) },
	"DivideInt":     func(a, b any) (int, error) { f, err := binary(a, b, div); return int(f), err },
	"DivideFloat":   func(a, b any) (float64, error) { return binary(a, b, div) },
	"Mod": func(a, b any) (int, error) {
		x, y, err := twoInts(a, b)
		if err != nil {
			return 0, err
		}
		if y == 0 {
			return 0, fmt.Errorf("Mod %d by zero", x)
		}
		return x % y, nil
	},
	"Int": func(v any) (int, error) { f, err := number(v); return int(f), err },
	"JSON": func(v any) (string, error) {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", fmt.Errorf("JSON of %v: %w", v, err)
		}
		return strings.TrimSpace(b.String()), nil
	},
}

func add(a, b float64) float64 { return a + b }
func mul(a, b float64) float64 { return a * b }
func sub(a, b float64) float64 { return a - b }
func div(a, b float64) float64 { return a / b }

func fold(xs []any, start float64, f func(a, b float64) float64) (float64, error) {
	acc := start
	for _, x := range xs {
		n, err := number(x)
		if err != nil {
			return 0, err
		}
		acc = f(acc, n)
	}
	return acc, nil
}

func binary(a, b any, f func(a, b float64) float64) (float64, error) {
	x, err := number(a)
	if err != nil {
		return 0, err
	}
	y, err := number(b)
	if err != nil {
		return 0, err
	}
	r := f(x, y)
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, fmt.Errorf("%v and %v give %v", a, b, r)
	}
	return r, nil
}

func twoInts(a, b any) (int, int, error) {
	x, err := number(a)
	if err != nil {
		return 0, 0, err
	}
	y, err := number(b)
	if err != nil {
		return 0, 0, err
	}
	return int(x), int(y), nil
}

// number converts a template value to float64.
func number(v any) (float64, error) {
	switch n := v.(type) {
	case float64:
		return n, nil
	case float32:
		return float64(n), nil
	case int:
		return float64(n), nil
	case int64:
		return float64(n), nil
	case int32:
		return float64(n), nil
	case uint:
		return float64(n), nil
	case uint64:
		return float64(n), nil
	case uint32:
		return float64(n), nil
	case string:
		f, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number: %w", n, err)
		}
		return f, nil
	}
	return 0, fmt.Errorf("%v (%T) is not a number", v, v)
}

// templates caches parsed template files by path; a workload renders the
// same file once per object.
var templates sync.Map // path → *template.Template

func parseTemplate(path string) (*template.Template, error) {
	if t, ok := templates.Load(path); ok {
		return t.(*template.Template), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading template: %w", err)
	}
	t, err := template.New(path).Funcs(templateFuncs).Option("missingkey=default").Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("parsing template %s: %w", path, err)
	}
	templates.Store(path, t)
	return t, nil
}

// Render executes the template file at path with params plus Index and
// Count, and decodes the YAML it gives into out (a typed object or an
// *unstructured.Unstructured), strictly for typed objects.
func Render(path string, params map[string]any, index, count int, out any) error {
	t, err := parseTemplate(path)
	if err != nil {
		return err
	}
	env := make(map[string]any, len(params)+2)
	for k, v := range params {
		env[k] = v
	}
	env["Index"], env["Count"] = index, count
	var buf bytes.Buffer
	if err := t.Execute(&buf, env); err != nil {
		return fmt.Errorf("rendering %s (index %d): %w", path, index, err)
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		js, err := yaml.YAMLToJSON(buf.Bytes())
		if err != nil {
			return fmt.Errorf("%s (index %d): %w", path, index, err)
		}
		if err := u.UnmarshalJSON(js); err != nil {
			return fmt.Errorf("%s (index %d): %w", path, index, err)
		}
		return nil
	}
	if err := yaml.UnmarshalStrict(buf.Bytes(), out); err != nil {
		return fmt.Errorf("%s (index %d): %w", path, index, err)
	}
	return nil
}
