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
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// namedSource is a reader that names where its bytes come from (a
// *Section names its file).
type namedSource interface {
	Source() string
}

// DecodeStrict decodes the YAML in r into out. Every field of the input must
// exist in out (an unknown or misspelled field is an error), and the input
// must hold at most one document. A nil r, or one with no content, leaves
// out untouched and is not an error, so callers set defaults first.
//
// When r is a *Section, errors name the file, and their line numbers are
// the file's own.
func DecodeStrict(r io.Reader, out any) error {
	if r == nil {
		return nil
	}
	src := ""
	if s, ok := r.(namedSource); ok {
		src = s.Source()
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return wrapSource(src, fmt.Errorf("reading: %w", err))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return wrapSource(src, flattenYAMLError(data, err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return wrapSource(src, errors.New("more than one YAML document; expected exactly one"))
	}
	return nil
}

func wrapSource(src string, err error) error {
	if src == "" {
		return err
	}
	return fmt.Errorf("%s: %w", src, err)
}

// maxProblems bounds how many problems one error lists; a file of
// thousands of unknown keys gets the first few and a count.
const maxProblems = 10

// flattenYAMLError turns yaml.v3's multi-line "unmarshal errors" into one
// line, so that it fits a log line or a one-line fatal error.
// Go type names are replaced by what they mean in the file. A syntax error
// gets the line at fault (see syntaxError); data is the YAML that failed.
func flattenYAMLError(data []byte, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		n := min(len(te.Errors), maxProblems)
		problems := make([]string, n, n+1)
		for i, p := range te.Errors[:n] {
			problems[i] = readableProblem(p)
		}
		if more := len(te.Errors) - n; more > 0 {
			problems = append(problems, fmt.Sprintf("and %d more problems", more))
		}
		return &DecodeError{Problems: problems}
	}
	return &DecodeError{Problems: []string{syntaxError(data, err)}}
}

// yamlLineRE matches yaml.v3's "line N: " prefix of a syntax error.
var yamlLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// maxLineProbes bounds the prefixes syntaxError parses, and
// maxProbeBytes the bytes it parses in all, so that a syntax error at the
// end of a big file costs a few parses, not thousands.
const (
	maxLineProbes = 200
	maxProbeBytes = 4 << 20
)

// syntaxError renders a YAML syntax error on one line with the line at
// fault. yaml.v3 names the line where the construct around the problem
// began, counted from 0 for parser errors: for "key: value" followed by
// a stray "- item" it names the line before the item. The line at fault
// is found here as the shortest prefix of the file, from that line on,
// that fails with the same problem. A tab in indentation, which yaml.v3
// calls a character that cannot start a token, is called a tab.
func syntaxError(data []byte, err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return oneLine(msg)
	}
	reported, _ := strconv.Atoi(m[1])
	problem := m[2]
	lines := bytes.SplitAfter(data, []byte("\n"))
	line := reported
	offset := 0
	for _, l := range lines[:min(max(reported, 1)-1, len(lines))] {
		offset += len(l)
	}
	parsed := 0
	for k, probes := max(reported, 1), 0; k <= len(lines) && probes < maxLineProbes && parsed < maxProbeBytes; k, probes = k+1, probes+1 {
		offset += len(lines[k-1])
		prefix := data[:offset]
		parsed += offset
		var n yaml.Node
		perr := yaml.Unmarshal(prefix, &n)
		if perr == nil {
			continue
		}
		if pm := yamlLineRE.FindStringSubmatch(strings.TrimPrefix(perr.Error(), "yaml: ")); pm != nil && pm[2] == problem {
			line = k
			break
		}
	}
	if line >= 1 && line <= len(lines) {
		text := lines[line-1]
		indent := text[:len(text)-len(bytes.TrimLeft(text, " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 || strings.Contains(problem, "tab character") {
			return fmt.Sprintf("line %d: a tab in the indentation; YAML indents with spaces only", line)
		}
	}
	return oneLine(fmt.Sprintf("line %d: %s", line, problem))
}

var (
	// yaml.v3: "line N: cannot unmarshal !!tag `value` into Type".
	unmarshalRE = regexp.MustCompile("(?s)^(line \\d+: )cannot unmarshal !!(\\w+) (?:`(.*)` )?into (.+)$")
	// yaml.v3: "line N: field x not found in type Type".
	inTypeRE = regexp.MustCompile(` in type .+$`)
)

// readableProblem rewords one of yaml.v3's type errors for someone editing
// the file: the YAML kind found and the kind expected, no Go type names,
// and a value quoted onto one line.
func readableProblem(p string) string {
	if m := unmarshalRE.FindStringSubmatch(p); m != nil {
		got := yamlKinds[m[2]]
		if got == "" {
			got = "a " + m[2]
		}
		if m[3] != "" {
			got += " " + quote(m[3])
		}
		return m[1] + "expected " + goKind(m[4]) + ", got " + got
	}
	p = inTypeRE.ReplaceAllString(p, "")
	if len(p) > 4*maxQuoted {
		// "field <name> not found" with a huge name.
		p = shorten(p)
	}
	return oneLine(p)
}

var yamlKinds = map[string]string{
	"seq": "a list", "map": "a mapping", "str": "a string", "int": "an integer",
	"float": "a number", "bool": "a boolean", "null": "null", "timestamp": "a timestamp", "binary": "binary data",
}

// goKind says what a value of the Go type named t looks like in YAML.
func goKind(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case t == "time.Duration" || strings.HasSuffix(t, ".Duration") || strings.HasSuffix(t, ".DurationString"):
		return "a duration such as 30s or 5m"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.Contains(t, ".") || strings.HasPrefix(t, "struct"):
		// A struct type.
		return "a mapping"
	default:
		return "a " + t
	}
}

// oneLine quotes line breaks so that a message stays on one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// DecodeError lists every problem found while decoding, each with its line.
type DecodeError struct {
	Problems []string
}

func (e *DecodeError) Error() string {
	return strings.Join(e.Problems, "; ")
}
