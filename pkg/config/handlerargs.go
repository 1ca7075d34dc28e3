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
	"io"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/scheme"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/validation"
)

// handlerKinds maps the built-in event handlers whose args the
// configuration API types to their kind (pkg/apis/config,
// types_handlerargs.go). The names are those the handlers register under
// (defaulthandler.Name, twolevel.Name), which their tests check against
// this table.
var handlerKinds = map[string]string{
	"default":   "DefaultHandlerArgs",
	"two-level": "TwoLevelHandlerArgs",
}

// HasTypedHandlerArgs reports whether the configuration API has a type
// for the args of the named event handler, which an eventHandlers entry
// for it then decodes into.
func HasTypedHandlerArgs(handler string) bool {
	_, ok := handlerKinds[handler]
	return ok
}

// nodeChecks check the node of a kind's args before it is decoded, for
// what the decoding's own errors would word in Go's terms or without the
// line: the owner kinds of ownerGangs, each at its line.
var nodeChecks = map[string]func(*yaml.Node) []argsProblem{
	"DefaultHandlerArgs":  checkOwnerGangs,
	"TwoLevelHandlerArgs": checkOwnerGangs,
}

// lineProblemRE splits a problem that names its line.
var lineProblemRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// checkOwnerGangs checks the ownerGangs mapping of the args under node as
// configapi.OwnerGangs reads YAML: known kinds, each once, true or false.
func checkOwnerGangs(node *yaml.Node) []argsProblem {
	v := valueOf(node, "ownerGangs")
	if v == nil {
		return nil
	}
	var g configapi.OwnerGangs
	err := g.UnmarshalYAML(resolveAlias(v))
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return nil
	}
	out := make([]argsProblem, 0, len(te.Errors))
	for _, e := range te.Errors {
		if m := lineProblemRE.FindStringSubmatch(e); m != nil {
			l, _ := strconv.Atoi(m[1])
			out = append(out, argsProblem{l, m[2]})
			continue
		}
		out = append(out, argsProblem{v.Line, e})
	}
	return out
}

// typeHandlerArgs decodes the args of every eventHandlers entry whose
// handler the API has a type for into that type, defaulted (validation
// follows with the rest of the file). An entry without args stays nil:
// the handler's factory defaults it. Each problem is at its line.
func typeHandlerArgs(cfg *configapi.SchedulerConfiguration, root *yaml.Node) []string {
	var problems []string
	for i := range cfg.EventHandlers {
		h := &cfg.EventHandlers[i]
		kind, ok := handlerKinds[h.Name]
		if !ok || h.Args == nil {
			continue
		}
		path := fmt.Sprintf("eventHandlers[%d].args", i)
		node, _ := walkPath(root, path)
		if node == nil || isNull(node) {
			h.Args = nil
			continue
		}
		obj, errs := decodeTypedKind(kind, node)
		for _, e := range errs {
			if e.line <= 0 {
				e.line = lineOfPath(root, path)
			}
			problems = append(problems, fmt.Sprintf("line %d: %s handler args: %s", e.line, h.Name, e.msg))
		}
		h.Args = obj
	}
	return problems
}

// handlerFieldRE matches the path of a field of an event handler's typed
// args: the entry's index and the field.
var handlerFieldRE = regexp.MustCompile(`^eventHandlers\[(\d+)\]\.args\.(.+)$`)

// handlerFieldProblem renders a validation error of a handler's typed
// args; ok is false for any other path.
func handlerFieldProblem(root *yaml.Node, e *field.Error, line int) (string, bool) {
	m := handlerFieldRE.FindStringSubmatch(e.Field)
	if m == nil {
		return "", false
	}
	name := ""
	if n := valueAtPath(root, fmt.Sprintf("eventHandlers[%s].name", m[1])); n != nil {
		name = n.Value
	}
	return fmt.Sprintf("line %d: %s handler args: %s", line, shorten(name), argsFieldMessage(m[2], e.Detail)), true
}

// typedArgs is the reader File.HandlerArgs returns for a handler whose
// args are typed: the args as the file writes them, for a decoder that
// reads YAML, and typed.
type typedArgs interface {
	io.Reader
	Args() runtime.Object
}

// argsReader reads a handler's args as written and holds them typed.
type argsReader struct {
	*bytes.Reader
	source string
	args   runtime.Object
}

// Source names the file the args come from.
func (r *argsReader) Source() string { return r.source }

// Args returns the args, typed.
func (r *argsReader) Args() runtime.Object { return r.args }

// NewHandlerArgsReader returns a reader for the factory of a built-in
// event handler (eventhandlers.Factory) that hands it args built in code
// (a *configapi.DefaultHandlerArgs, say), as File.HandlerArgs does those
// of a file; a YAML decoder reads them as JSON. A *configapi.RawArgs
// gives its own reader.
func NewHandlerArgsReader(args runtime.Object) (io.Reader, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case *configapi.RawArgs:
		return a.Reader(), nil
	}
	versioned, err := scheme.Scheme.ConvertToVersion(args.DeepCopyObject(), v1alpha1.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("handler args: %w", err)
	}
	data, err := json.Marshal(versioned)
	if err != nil {
		return nil, fmt.Errorf("handler args: %w", err)
	}
	return &argsReader{Reader: bytes.NewReader(data), args: args}, nil
}

// DecodeHandlerArgs reads the args of a built-in event handler from the
// reader its factory is given: the typed args File.HandlerArgs or
// NewHandlerArgsReader put there, or YAML (a *Section, RawArgs' reader,
// any reader), decoded strictly into the type as the file's are. Either
// way they are defaulted and validated; a nil r gives the defaults. Errors
// are a *DecodeError whose problems name the line of r's file (and the
// file, wrapped, when r names it), as "line 2: ownerGangs: unknown kind
// ...". For a handler the API has no type for, it returns r's text as
// RawArgs (nil for a nil r).
func DecodeHandlerArgs(handler string, r io.Reader) (runtime.Object, error) {
	kind, ok := handlerKinds[handler]
	if t, typed := r.(typedArgs); typed && ok {
		return completeArgs(kind, t.Args(), validation.ValidateHandlerArgs)
	}
	if r == nil {
		if !ok {
			return nil, nil
		}
		return completeArgs(kind, nil, validation.ValidateHandlerArgs)
	}
	src := ""
	if s, named := r.(namedSource); named {
		src = s.Source()
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, wrapSource(src, fmt.Errorf("reading: %w", err))
	}
	if !ok {
		return configapi.NewRawArgs(src, data), nil
	}
	return decodeArgsYAML(kind, src, data, validation.ValidateHandlerArgs)
}

// completeArgs defaults and validates typed args of kind given in code
// (nil: none) with validate, as the file's are.
func completeArgs(kind string, args runtime.Object, validate func(*field.Path, runtime.Object) field.ErrorList) (runtime.Object, error) {
	if args == nil {
		return decodeArgsYAML(kind, "", nil, validate)
	}
	if got := args.GetObjectKind().GroupVersionKind().Kind; got != "" && got != kind {
		return nil, fmt.Errorf("args of kind %s, want %s", got, kind)
	}
	versioned, err := scheme.Scheme.ConvertToVersion(args.DeepCopyObject(), v1alpha1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	scheme.Scheme.Default(versioned)
	internal, err := scheme.Scheme.ConvertToVersion(versioned, configapi.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	if errs := validate(nil, internal); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = argsFieldMessage(e.Field, e.Detail)
		}
		return nil, &DecodeError{Problems: msgs}
	}
	return internal, nil
}

// decodeArgsYAML decodes YAML args of kind, read from src (for messages),
// defaults and validates them with validate. Problems name their line.
func decodeArgsYAML(kind, src string, data []byte, validate func(*field.Path, runtime.Object) field.ErrorList) (runtime.Object, error) {
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
			return nil, wrapSource(src, flattenYAMLError(data, err))
		}
		var extra yaml.Node
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			return nil, wrapSource(src, errors.New("more than one YAML document; expected exactly one"))
		}
	}
	var node *yaml.Node
	if len(doc.Content) > 0 && !isNull(doc.Content[0]) {
		node = doc.Content[0]
	}
	obj, problems := decodeTypedKind(kind, node)
	if len(problems) > 0 {
		return nil, wrapSource(src, &DecodeError{Problems: problemMessages(problems)})
	}
	if errs := validate(nil, obj); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msg := argsFieldMessage(e.Field, e.Detail)
			if node != nil {
				if _, l := walkPath(node, e.Field); l > 0 {
					msg = fmt.Sprintf("line %d: %s", l, msg)
				}
			}
			msgs[i] = msg
		}
		return nil, wrapSource(src, &DecodeError{Problems: msgs})
	}
	return obj, nil
}
