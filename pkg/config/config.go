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
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// APIVersion and Kind identify the configuration file format.
const (
	APIVersion = "batch-scheduler.io/v1alpha1"
	Kind       = "SchedulerConfiguration"
)

// File is a read, decoded and validated configuration file.
type File struct {
	// Path is where the file was read from; it prefixes every error.
	Path string
	// API is the file as the configuration API's internal version
	// (pkg/apis/config), the only configuration types: decoded strictly,
	// defaulted and validated. The args the API has no type for (event
	// handlers', custom informer sources other than http and file,
	// out-of-tree plugins') are *configapi.RawArgs that keep the file's
	// line numbers.
	API *configapi.SchedulerConfiguration
	// Tuning holds the scheduler-wide settings (parallelism, backoffs),
	// defaulted, read from API.
	Tuning Tuning
	// root is the parsed document, for Line.
	root *yaml.Node
	// handlerText holds, by eventHandlers index, the text of the typed
	// args of the built-in handlers, for HandlerArgs.
	handlerText map[int]*configapi.RawArgs
}

// Line returns the line in the file of a field named by its path in the
// API (e.g. "profiles[1].pluginConfig[0]"), or of the deepest part of the
// path the file has; 0 for a File not read from a file.
func (f *File) Line(path string) int {
	if f == nil || f.root == nil {
		return 0
	}
	return lineOfPath(f.root, path)
}

// Profiles returns the file's profiles (nil for none or a nil f).
func (f *File) Profiles() []configapi.Profile {
	if f == nil || f.API == nil || len(f.API.Profiles) == 0 {
		return nil
	}
	return f.API.Profiles
}

// CustomInformers returns the file's custom informers (nil for none or
// a nil f).
func (f *File) CustomInformers() []configapi.CustomInformer {
	if f == nil || f.API == nil {
		return nil
	}
	return f.API.CustomInformers
}

// HandlerArgs returns the args of the named event handler, for its
// factory, or nil when the file (or f itself) has none. The reader reads
// them as the file writes them, at the file's lines (a vendor's handler
// decodes them with DecodeStrict); for a built-in handler with typed args
// it also holds them typed, which DecodeHandlerArgs returns.
func (f *File) HandlerArgs(name string) io.Reader {
	if f == nil || f.API == nil {
		return nil
	}
	for i, h := range f.API.EventHandlers {
		if h.Name != name || h.Args == nil {
			continue
		}
		// A fresh reader each time.
		if raw, ok := h.Args.(*configapi.RawArgs); ok {
			return raw.Reader()
		}
		text := f.handlerText[i]
		if text == nil {
			text = &configapi.RawArgs{}
		}
		return &argsReader{Reader: bytes.NewReader(text.YAML), source: text.Source, args: h.Args}
	}
	return nil
}

// Limits on what one configuration file may hold. A scheduler
// configuration is a few KiB; these bounds keep a wrong path (a device, a
// log file) or a generated file gone wrong from exhausting memory or
// starting thousands of informers.
const (
	// MaxFileBytes bounds the size of the file.
	MaxFileBytes = 2 << 20
	// MaxListItems bounds the items of any one list in the file (custom
	// informers, profiles, plugins, dynamic resources, ...).
	MaxListItems = 1000
	// MaxMappingKeys bounds the keys of any one mapping in the file.
	MaxMappingKeys = 1000
)

// Load reads and validates the file at path.
func Load(path string) (*File, error) {
	return LoadContext(context.Background(), path)
}

// LoadContext reads and validates the file at path, giving up when ctx
// ends (a SIGTERM while a slow file is read). The file must be a regular
// file or a pipe of at most MaxFileBytes.
func LoadContext(ctx context.Context, path string) (*File, error) {
	type result struct {
		f   *File
		err error
	}
	done := make(chan result, 1)
	go func() {
		data, err := readBounded(path)
		if err != nil {
			done <- result{err: err}
			return
		}
		f, err := Parse(path, data)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: loading stopped: %w", path, context.Cause(ctx))
	}
}

// readBounded reads at most MaxFileBytes of the file at path. Devices,
// directories and sockets are refused before any read: /dev/zero or
// /dev/urandom never end.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	mode := st.Mode()
	switch {
	case mode.IsDir():
		return nil, fmt.Errorf("%s: is a directory, not a configuration file", path)
	case mode.IsRegular():
		if st.Size() > MaxFileBytes {
			return nil, fmt.Errorf("%s: the file has %d bytes, more than the limit of %s", path, st.Size(), humanBytes(MaxFileBytes))
		}
	case mode&os.ModeNamedPipe != 0:
		// A pipe (e.g. <(generate-config)): read, within the limit.
	default:
		return nil, fmt.Errorf("%s: is not a regular file (mode %s); give the path of a YAML file", path, mode.Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: the file is larger than the limit of %s", path, humanBytes(MaxFileBytes))
	}
	return data, nil
}

// maxQuoted bounds how much of a value from the file a message repeats.
const maxQuoted = 80

// shorten cuts s to maxQuoted bytes (at a rune boundary), saying how long
// it was, so that a huge value does not make a huge message.
func shorten(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
}

// quote quotes a value from the file for a message, bounded (shorten).
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// humanBytes renders a power-of-two byte count, e.g. "4 MiB".
func humanBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkSizes reports the first list or mapping of the document with more
// than MaxListItems items or MaxMappingKeys keys, naming its line.
func checkSizes(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		if len(n.Content) > MaxListItems {
			return fmt.Errorf("line %d: a list of %d items; at most %d are allowed", n.Line, len(n.Content), MaxListItems)
		}
	case yaml.MappingNode:
		if keys := len(n.Content) / 2; keys > MaxMappingKeys {
			return fmt.Errorf("line %d: a mapping of %d keys; at most %d are allowed", n.Line, keys, MaxMappingKeys)
		}
	}
	for _, c := range n.Content {
		if err := checkSizes(c); err != nil {
			return err
		}
	}
	return nil
}

// rawHeader is the part of the file the structural pass reads into Go
// types: its header. The rest is checked node by node and then decoded
// through the API's scheme.
type rawHeader struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
}

// rawShape is the file's top level as written, decoded strictly only to
// report unknown keys and wrong kinds in yaml.v3's words, at their lines.
type rawShape struct {
	rawHeader       `yaml:",inline"`
	EventHandlers   []rawEventHandler   `yaml:"eventHandlers"`
	CustomInformers []rawCustomInformer `yaml:"customInformers"`
	Profiles        yaml.Node           `yaml:"profiles"`
	rawTuning       `yaml:",inline"`
}

type rawEventHandler struct {
	Name string    `yaml:"name"`
	Args yaml.Node `yaml:"args"`
}

type rawCustomInformer struct {
	Name         string        `yaml:"name"`
	Resource     string        `yaml:"resource"`
	Source       yaml.Node     `yaml:"source"`
	ResyncPeriod time.Duration `yaml:"resyncPeriod"`
}

// Parse decodes and validates data read from path. path is used only in
// error messages.
func Parse(path string, data []byte) (*File, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: the file has %d bytes, more than the limit of %s", path, len(data), humanBytes(MaxFileBytes))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, flattenYAMLError(data, err))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: the file is empty; want a document with apiVersion %s and kind %s", path, APIVersion, Kind)
	}
	if err := checkSizes(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := kubeSchedulerOnlyFields(doc.Content[0]); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var raw rawShape
	if err := DecodeStrict(bytes.NewReader(data), &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	root := doc.Content[0]
	var problems []string
	bad := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %s", line, fmt.Sprintf(format, args...)))
	}

	// kube-scheduler's own header is accepted with the same contents: its
	// top-level settings and profiles read the same here.
	kube := raw.APIVersion == KubeSchedulerAPIVersion
	if raw.APIVersion != APIVersion && !kube {
		bad(lineOf(root, "apiVersion"), "apiVersion is %s, want %q (or kube-scheduler's %q)", quote(raw.APIVersion), APIVersion, KubeSchedulerAPIVersion)
	}
	if want := map[bool]string{false: Kind, true: KubeSchedulerKind}[kube]; raw.Kind != want {
		bad(lineOf(root, "kind"), "kind is %s, want %q", quote(raw.Kind), want)
	}

	for i, h := range raw.EventHandlers {
		if h.Args.Kind != 0 && !isNull(&h.Args) && h.Args.Kind != yaml.MappingNode {
			bad(h.Args.Line, "eventHandlers[%d].args must be a mapping", i)
		}
	}
	for i, ci := range raw.CustomInformers {
		line := entryLine(root, "customInformers", i)
		field := fmt.Sprintf("customInformers[%d]", i)
		if ci.Name != "" {
			field = fmt.Sprintf("customInformers[%d] (%s)", i, shorten(ci.Name))
		}
		switch {
		case ci.Source.Kind == 0 || isNull(&ci.Source):
			bad(line, "%s.source is required: a mapping with exactly one key, the source type", field)
		case ci.Source.Kind != yaml.MappingNode || len(ci.Source.Content) != 2:
			bad(ci.Source.Line, "%s.source must have exactly one key, the source type (e.g. http:), got %d", field, len(ci.Source.Content)/2)
		default:
			if args := ci.Source.Content[1]; !isNull(args) && args.Kind != yaml.MappingNode {
				bad(args.Line, "%s.source.%s must be a mapping", field, ci.Source.Content[0].Value)
			}
		}
	}
	if n := valueOf(root, "profiles"); n != nil {
		(&profileChecker{bad: bad}).check(n)
	}
	var api *configapi.SchedulerConfiguration
	if len(problems) == 0 {
		// The file's structure is right: decode it through the API's
		// scheme (defaults, conversion to the internal version) and
		// validate what it says.
		api, problems = decodeAPI(root)
	}
	if len(problems) > maxProblems {
		more := len(problems) - maxProblems
		problems = append(problems[:maxProblems], fmt.Sprintf("and %d more problems", more))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(problems, "; "))
	}
	handlerText := attachRawArgs(path, data, &doc, api)
	return &File{Path: path, API: api, Tuning: tuningOf(api), root: root, handlerText: handlerText}, nil
}

// attachRawArgs replaces the raw args of api, which the scheme read as
// JSON, with their text in the file, cut at the file's own lines, so that
// the code that decodes them reports positions a user can find. It
// returns the text of the built-in handlers' typed args, by index.
func attachRawArgs(path string, data []byte, doc *yaml.Node, api *configapi.SchedulerConfiguration) map[int]*configapi.RawArgs {
	root := doc.Content[0]
	section := func(field string) *configapi.RawArgs {
		n, _ := walkPath(root, field)
		if n == nil || isNull(n) {
			return nil
		}
		return configapi.NewRawArgs(path, newSection(path, data, doc, n).Bytes())
	}
	handlerText := map[int]*configapi.RawArgs{}
	for i := range api.EventHandlers {
		h := &api.EventHandlers[i]
		switch h.Args.(type) {
		case nil:
		case *configapi.RawArgs:
			// Not one of the API's typed args: the handler decodes
			// them.
			if raw := section(fmt.Sprintf("eventHandlers[%d].args", i)); raw != nil {
				h.Args = raw
			} else {
				h.Args = nil
			}
		default:
			handlerText[i] = section(fmt.Sprintf("eventHandlers[%d].args", i))
		}
	}
	for i := range api.CustomInformers {
		ci := &api.CustomInformers[i]
		if _, ok := ci.SourceArgs.(*configapi.RawArgs); ok {
			// Not one of the API's typed settings: the source decodes
			// them.
			if raw := section(fmt.Sprintf("customInformers[%d].source.%s", i, ci.SourceType)); raw != nil {
				ci.SourceArgs = raw
			} else {
				ci.SourceArgs = nil
			}
		}
	}
	for i := range api.Profiles {
		for j := range api.Profiles[i].PluginConfig {
			pc := &api.Profiles[i].PluginConfig[j]
			switch pc.Args.(type) {
			case *runtime.Unknown, *configapi.RawArgs:
				// Not one of the API's typed args: the plugin decodes
				// them.
				if raw := section(fmt.Sprintf("profiles[%d].pluginConfig[%d].args", i, j)); raw != nil {
					pc.Args = raw
				} else {
					pc.Args = nil
				}
			}
		}
	}
	return handlerText
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// lineOf returns the line of key in mapping m, or m's line.
func lineOf(m *yaml.Node, key string) int {
	if m.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i].Line
			}
		}
	}
	return m.Line
}

// entryLine returns the line of the i-th item of the sequence under key.
func entryLine(root *yaml.Node, key string, i int) int {
	if root.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(root.Content); j += 2 {
			if root.Content[j].Value == key {
				if seq := root.Content[j+1]; seq.Kind == yaml.SequenceNode && i < len(seq.Content) {
					return seq.Content[i].Line
				}
				return root.Content[j].Line
			}
		}
	}
	return root.Line
}

// WrittenJSON returns, as JSON, what the file says at a field named by its
// path in the API (e.g. "profiles[0].pluginConfig[1].args"), as written:
// before defaults, read as YAML 1.2 as the rest of the file. ok is false
// when the file does not have the field, or is null there.
func (f *File) WrittenJSON(path string) (data []byte, ok bool, err error) {
	if f == nil || f.root == nil {
		return nil, false, nil
	}
	n, _ := walkPath(f.root, path)
	if n == nil || isNull(n) {
		return nil, false, nil
	}
	budget := maxJSONNodes
	v, err := nodeValue(n, &budget)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %s: %w", f.Path, path, err)
	}
	data, err = json.Marshal(v)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %s: %w", f.Path, path, err)
	}
	return data, true, nil
}
