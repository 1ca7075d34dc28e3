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
	"errors"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Section is one part of the configuration file, handed to the code that
// owns it (an event handler factory, a custom informer source) as an
// io.Reader of YAML.
//
// The YAML keeps the line and column numbers of the file: the section's
// lines are cut from the file and preceded by empty lines, so a decoder's
// "line 12" is line 12 of the file. Source names the file, and DecodeStrict
// prefixes its errors with it.
type Section struct {
	source string
	data   []byte
	r      *bytes.Reader
}

// NewSection returns a Section over data, for tests and for callers that
// build configuration in code. source names where data came from.
func NewSection(source string, data []byte) *Section {
	return &Section{source: source, data: data, r: bytes.NewReader(data)}
}

// Read implements io.Reader.
func (s *Section) Read(p []byte) (int, error) { return s.r.Read(p) }

// Source names the file the section came from.
func (s *Section) Source() string { return s.source }

// Bytes returns the section's YAML. The caller must not modify it.
func (s *Section) Bytes() []byte { return s.data }

// Clone returns an unread copy of s.
func (s *Section) Clone() *Section { return NewSection(s.source, s.data) }

// newSection cuts the YAML of node out of the file so that it still parses
// at the same lines and columns. Block-style nodes are cut verbatim; a node
// that shares its last line with something outside it (flow style, such as
// "args: {a: 1}, b: 2") is re-encoded instead, keeping at least its first
// line.
func newSection(source string, file []byte, doc, node *yaml.Node) *Section {
	first, last := node.Line, lastLine(node)
	next := nextLineAfter(doc, node, last)
	lines := strings.Split(string(file), "\n")
	if next > last && first >= 1 && last <= len(lines) {
		end := next - 1
		if end > len(lines) {
			end = len(lines)
		}
		cut := append([]string(nil), lines[first-1:end]...)
		// Blank out what precedes the node on its first line ("  args: ").
		if col := node.Column - 1; col > 0 && col <= len(cut[0]) {
			cut[0] = strings.Repeat(" ", col) + cut[0][col:]
		}
		text := strings.Repeat("\n", first-1) + strings.Join(cut, "\n") + "\n"
		if oneDocumentOf(text, node.Kind) {
			return NewSection(source, []byte(text))
		}
	}
	out, err := yaml.Marshal(node)
	if err != nil {
		// A node that came out of the decoder always encodes; keep the
		// section empty rather than wrong if it ever does not.
		out = nil
	}
	return NewSection(source, append([]byte(strings.Repeat("\n", max(first-1, 0))), out...))
}

// lastLine returns the greatest line of any node in the subtree.
func lastLine(n *yaml.Node) int {
	l := n.Line
	for _, c := range n.Content {
		if cl := lastLine(c); cl > l {
			l = cl
		}
	}
	return l
}

// nextLineAfter returns the smallest line > after of a node outside the
// subtree of skip, or a huge number when there is none.
func nextLineAfter(root, skip *yaml.Node, after int) int {
	best := int(^uint(0) >> 1)
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == skip {
			return
		}
		if n.Line > after && n.Line < best {
			best = n.Line
		}
		if n.Line == after && n.Kind != yaml.DocumentNode && !within(skip, n) &&
			(after > skip.Line || n.Column > skip.Column) {
			// Something else follows the node on its last line: not
			// cuttable.
			best = after
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	return best
}

// within reports whether n is an ancestor of (or is) target.
func within(target, n *yaml.Node) bool {
	if n == target {
		return true
	}
	for _, c := range n.Content {
		if within(target, c) {
			return true
		}
	}
	return false
}

// oneDocumentOf reports whether text is exactly one YAML document whose
// root is of kind. A cut of a flow mapping written on its key's line
// ("source: {http: {url: x}}") keeps the outer mapping's closing brace,
// which a decoder reads as the start of a second document: such a cut is
// not the node's text.
func oneDocumentOf(text string, kind yaml.Kind) bool {
	dec := yaml.NewDecoder(strings.NewReader(text))
	var probe yaml.Node
	if dec.Decode(&probe) != nil || len(probe.Content) != 1 || probe.Content[0].Kind != kind {
		return false
	}
	var rest yaml.Node
	return errors.Is(dec.Decode(&rest), io.EOF)
}
