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
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// KubeSchedulerAPIVersion is the API version of kube-scheduler's
// configuration, whose plugin args may carry it with their kind (e.g.
// NodeResourcesFitArgs).
const KubeSchedulerAPIVersion = "kubescheduler.config.k8s.io/v1"

// WithoutTypeMeta returns args without the apiVersion and kind that a
// kube-scheduler configuration may give plugin args, so that strict
// decoding into the plugin's own type accepts them. They must be
// kube-scheduler's API version and kind, which names the plugin's args
// type; anything else is an error. The lines they were on are blanked,
// not removed, so that later errors keep the file's line numbers; they
// must therefore be alone on their lines (block style). Args without them
// are returned unchanged.
func WithoutTypeMeta(args io.Reader, kind string) (io.Reader, error) {
	if args == nil {
		return nil, nil
	}
	src := ""
	if s, ok := args.(namedSource); ok {
		src = s.Source()
	}
	data, err := io.ReadAll(args)
	if err != nil {
		return nil, wrapSource(src, fmt.Errorf("reading: %w", err))
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		// Not a mapping: the strict decoder says what is wrong.
		return NewSection(src, data), nil
	}
	m := doc.Content[0]
	lines := strings.Split(string(data), "\n")
	changed := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		var want string
		switch k.Value {
		case "apiVersion":
			want = KubeSchedulerAPIVersion
		case "kind":
			want = kind
		default:
			continue
		}
		if v.Value != want {
			return nil, wrapSource(src, fmt.Errorf("line %d: %s is %q, want %q (or leave it out)", k.Line, k.Value, v.Value, want))
		}
		if m.Style&yaml.FlowStyle != 0 || v.Line != k.Line || k.Line < 1 || k.Line > len(lines) || sharesLine(m, i) {
			return nil, wrapSource(src, fmt.Errorf("line %d: write %s on a line of its own, or leave it out", k.Line, k.Value))
		}
		lines[k.Line-1] = ""
		changed = true
	}
	if !changed {
		return NewSection(src, data), nil
	}
	out := []byte(strings.Join(lines, "\n"))
	if len(bytes.TrimSpace(out)) == 0 {
		out = []byte("{}")
	}
	return NewSection(src, out), nil
}

// sharesLine reports whether the key at index i of mapping m shares its
// line with another key of m.
func sharesLine(m *yaml.Node, i int) bool {
	for j := 0; j+1 < len(m.Content); j += 2 {
		if j != i && m.Content[j].Line == m.Content[i].Line {
			return true
		}
	}
	return false
}

// SourceOf names the file r comes from when r is a Section (or another
// reader that knows its source), and returns "" otherwise.
func SourceOf(r io.Reader) string {
	if s, ok := r.(namedSource); ok {
		return s.Source()
	}
	return ""
}
