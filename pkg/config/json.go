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
	"encoding/json"
	"fmt"
	"math"

	"gopkg.in/yaml.v3"
)

// maxJSONNodes bounds the nodes documentJSON visits, aliases expanded: a
// few aliases of aliases would otherwise expand to billions of values.
const maxJSONNodes = 1 << 20

// documentJSON renders a parsed YAML document (its root mapping) as JSON,
// with YAML 1.2's types as yaml.v3 resolves them: a plain scalar is a
// string unless it is a number, true/false or null.
func documentJSON(root *yaml.Node) ([]byte, error) {
	budget := maxJSONNodes
	v, err := nodeValue(root, &budget)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("line %d: %w", root.Line, err)
	}
	return out, nil
}

func nodeValue(n *yaml.Node, budget *int) (any, error) {
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("line %d: the document expands to more than %d values (aliases)", n.Line, maxJSONNodes)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0], budget)
	case yaml.AliasNode:
		return nodeValue(n.Alias, budget)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c, budget)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := resolveAlias(n.Content[i]), n.Content[i+1]
			val, err := nodeValue(v, budget)
			if err != nil {
				return nil, err
			}
			if k.Tag == "!!merge" {
				// <<: *base — the merged mapping's keys, unless given here.
				if m, ok := val.(map[string]any); ok {
					for mk, mv := range m {
						if _, set := out[mk]; !set {
							out[mk] = mv
						}
					}
				}
				continue
			}
			out[k.Value] = val
		}
		return out, nil
	}
	return scalarValue(n)
}

func scalarValue(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, nil
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			return u, nil
		}
		return nil, fmt.Errorf("line %d: %s is out of the range of a 64-bit integer", n.Line, quote(n.Value))
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("line %d: %s is not a finite number", n.Line, quote(n.Value))
		}
		return f, nil
	}
	return n.Value, nil
}

// JSON renders the section as JSON, reading it as the rest of the file is
// read (YAML 1.2: "on" and "Y" are strings).
func (s *Section) JSON() ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(s.data, &doc); err != nil {
		return nil, wrapSource(s.source, flattenYAMLError(s.data, err))
	}
	if len(doc.Content) == 0 {
		return []byte("null"), nil
	}
	out, err := documentJSON(&doc)
	if err != nil {
		return nil, wrapSource(s.source, err)
	}
	return out, nil
}
