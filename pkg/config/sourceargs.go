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
	"sort"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/validation"
)

// sourceKinds maps the built-in custom informer sources whose settings
// the configuration API types to their kind (pkg/apis/config,
// types_sourceargs.go). The names are pkg/custominformer's HTTPSource and
// FileSource, which its tests check against this table.
var sourceKinds = map[string]string{
	"http": "HTTPSourceArgs",
	"file": "FileSourceArgs",
}

// HasTypedSourceArgs reports whether the configuration API has a type for
// the settings of the named custom informer source, which a
// customInformers entry's source.<type> then decodes into.
func HasTypedSourceArgs(sourceType string) bool {
	_, ok := sourceKinds[sourceType]
	return ok
}

// TypedSources returns the source types whose settings are typed, sorted.
func TypedSources() []string {
	out := make([]string, 0, len(sourceKinds))
	for t := range sourceKinds {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// DecodeSourceArgs reads a custom informer source's settings as the
// configuration file does: for a source with typed settings
// (HasTypedSourceArgs), raw is decoded strictly into the type, defaulted
// and validated, and nil raw gives the defaults (which validation may
// refuse: the http source needs a url); errors are a *DecodeError whose
// problems name the line of raw's file (and the file, wrapped, when raw
// names it), as "line 4: field bogus not found" or "line 1: url:
// required". The settings of other sources are returned as they are.
//
// The built-in sources' factories use it for settings built in code as
// RawArgs; pkg/config.Parse has already typed those of a file.
func DecodeSourceArgs(sourceType string, raw *configapi.RawArgs) (runtime.Object, error) {
	kind, ok := sourceKinds[sourceType]
	if !ok {
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
	return decodeArgsYAML(kind, src, data, validation.ValidateSourceArgs)
}

// CompleteSourceArgs defaults and validates a built-in source's typed
// settings built in code (fields left zero take the defaults of the
// file's version), as the file's are; it returns a defaulted copy. RawArgs
// and nil are decoded as DecodeSourceArgs does.
func CompleteSourceArgs(sourceType string, args runtime.Object) (runtime.Object, error) {
	kind, ok := sourceKinds[sourceType]
	raw, isRaw := args.(*configapi.RawArgs)
	if !ok || isRaw || args == nil {
		return DecodeSourceArgs(sourceType, raw)
	}
	return completeArgs(kind, args, validation.ValidateSourceArgs)
}

// typeSourceArgs decodes the settings of every customInformers entry
// whose source the API has a type for into that type, defaulted
// (validation follows with the rest of the file). Each problem is at its
// line.
func typeSourceArgs(cfg *configapi.SchedulerConfiguration, root *yaml.Node) []string {
	var problems []string
	for i := range cfg.CustomInformers {
		ci := &cfg.CustomInformers[i]
		kind, ok := sourceKinds[ci.SourceType]
		if !ok {
			continue
		}
		path := fmt.Sprintf("customInformers[%d].source.%s", i, ci.SourceType)
		node, _ := walkPath(root, path)
		if node != nil && isNull(node) {
			node = nil
		}
		obj, errs := decodeTypedKind(kind, node)
		for _, e := range errs {
			if e.line <= 0 {
				e.line = lineOfPath(root, path)
			}
			problems = append(problems, fmt.Sprintf("line %d: %s: %s", e.line, sourceWhere(root, i, ci.SourceType), e.msg))
		}
		ci.SourceArgs = obj
	}
	return problems
}

// sourceWhere names a custom informer's source in a message, as
// pkg/custominformer.Build does: `custom informer "grants": source http`.
func sourceWhere(root *yaml.Node, i int, sourceType string) string {
	name := ""
	if n := valueAtPath(root, fmt.Sprintf("customInformers[%d].name", i)); n != nil {
		name = n.Value
	}
	return fmt.Sprintf("custom informer %q: source %s", shorten(name), sourceType)
}

// sourceFieldProblem renders a validation error of a source's typed
// settings, whose path is customInformers[i].source.<type>.<field>; ok is
// false for any other path.
func sourceFieldProblem(root *yaml.Node, e *field.Error, line int) (string, bool) {
	m := sourceFieldRE.FindStringSubmatch(e.Field)
	if m == nil {
		return "", false
	}
	var i int
	if _, err := fmt.Sscanf(m[1], "%d", &i); err != nil {
		return "", false
	}
	return fmt.Sprintf("line %d: %s: %s", line, sourceWhere(root, i, m[2]), argsFieldMessage(m[3], e.Detail)), true
}
