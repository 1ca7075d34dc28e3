package config

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// APIVersion and Kind identify the configuration file format.
const (
	APIVersion = "batch-scheduler.io/v1alpha1"
	Kind       = "SchedulerConfiguration"
)

// File is a decoded, validated configuration file.
type File struct {
	// Path is where the file was read from; it prefixes every error.
	Path string
	// EventHandlers holds per-handler settings, in file order. Only the
	// entry of the handler chosen with --event-handler is used; the others
	// let one file serve several binaries.
	EventHandlers []EventHandler
	// CustomInformers declares informers whose objects come from external
	// resource managers.
	CustomInformers []CustomInformer
	// Profiles are the scheduling profiles, in file order; nil when the
	// file has none. Each names the plugins that schedule the pods of one
	// spec.schedulerName, as overrides of the default profile.
	Profiles []Profile
	// Tuning holds the scheduler-wide settings (parallelism, backoffs),
	// defaulted.
	Tuning Tuning
	// API is the file as the configuration API's internal version
	// (pkg/apis/config): decoded strictly, defaulted and validated. The
	// fields above are read from it, with the file's line numbers and
	// each plugin's and handler's args as a Section.
	API *configapi.SchedulerConfiguration
}

// EventHandler is one entry of eventHandlers.
type EventHandler struct {
	Name string
	// Args is the handler's own settings, nil when the entry has none.
	Args *Section
	// Line is the entry's line in the file.
	Line int
}

// CustomInformer is one entry of customInformers.
type CustomInformer struct {
	// Name identifies the informer in logs, metrics and /readyz. It is a
	// DNS-1123 label and unique in the file.
	Name string
	// Resource says what the informer's objects are and which handler
	// methods receive them, e.g. "Node".
	Resource string
	// SourceType names the source kind (the single key under source:), and
	// SourceArgs holds its settings.
	SourceType string
	SourceArgs *Section
	// ResyncPeriod, when non-zero, re-delivers every object as an update at
	// that interval.
	ResyncPeriod time.Duration
	// Line is the entry's line in the file.
	Line int
}

// HandlerArgs returns the settings of the named event handler, or nil when
// the file (or f itself) has none.
func (f *File) HandlerArgs(name string) io.Reader {
	if f == nil {
		return nil
	}
	for _, h := range f.EventHandlers {
		if h.Name == name && h.Args != nil {
			// A fresh reader each time: a Section is read once.
			return h.Args.Clone()
		}
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

type rawFile struct {
	APIVersion      string              `yaml:"apiVersion"`
	Kind            string              `yaml:"kind"`
	EventHandlers   []rawEventHandler   `yaml:"eventHandlers"`
	CustomInformers []rawCustomInformer `yaml:"customInformers"`
	// Profiles is decoded node by node (see profileParser), so that errors
	// name each field's path.
	Profiles  yaml.Node `yaml:"profiles"`
	rawTuning `yaml:",inline"`
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
	var raw rawFile
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

	f := &File{Path: path}
	for i, h := range raw.EventHandlers {
		line := entryLine(root, "eventHandlers", i)
		field := fmt.Sprintf("eventHandlers[%d]", i)
		eh := EventHandler{Name: h.Name, Line: line}
		if h.Args.Kind != 0 && !isNull(&h.Args) {
			if h.Args.Kind != yaml.MappingNode {
				bad(h.Args.Line, "%s.args must be a mapping", field)
			} else {
				eh.Args = newSection(path, data, &doc, &h.Args)
			}
		}
		f.EventHandlers = append(f.EventHandlers, eh)
	}

	for i, ci := range raw.CustomInformers {
		line := entryLine(root, "customInformers", i)
		field := fmt.Sprintf("customInformers[%d]", i)
		if ci.Name != "" {
			field = fmt.Sprintf("customInformers[%d] (%s)", i, shorten(ci.Name))
		}
		out := CustomInformer{Name: ci.Name, Resource: ci.Resource, ResyncPeriod: ci.ResyncPeriod, Line: line}
		switch {
		case ci.Source.Kind == 0 || isNull(&ci.Source):
			bad(line, "%s.source is required: a mapping with exactly one key, the source type", field)
		case ci.Source.Kind != yaml.MappingNode || len(ci.Source.Content) != 2:
			bad(ci.Source.Line, "%s.source must have exactly one key, the source type (e.g. http:), got %d", field, len(ci.Source.Content)/2)
		default:
			out.SourceType = ci.Source.Content[0].Value
			if args := ci.Source.Content[1]; !isNull(args) {
				if args.Kind != yaml.MappingNode {
					bad(args.Line, "%s.source.%s must be a mapping", field, out.SourceType)
				} else {
					out.SourceArgs = newSection(path, data, &doc, args)
				}
			}
		}
		f.CustomInformers = append(f.CustomInformers, out)
	}
	if n := valueOf(root, "profiles"); n != nil {
		pp := &profileParser{path: path, data: data, doc: &doc, bad: bad}
		f.Profiles = pp.parse(n)
	}
	if len(problems) == 0 {
		// The file's structure is right: decode it through the API's
		// scheme (defaults, conversion to the internal version) and
		// validate what it says.
		f.API, problems = decodeAPI(root)
	}
	if len(problems) > maxProblems {
		more := len(problems) - maxProblems
		problems = append(problems[:maxProblems], fmt.Sprintf("and %d more problems", more))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(problems, "; "))
	}
	f.Tuning = tuningOf(f.API)
	return f, nil
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
