package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/validation"
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

// Load reads and validates the file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	return Parse(path, data)
}

type rawFile struct {
	APIVersion      string              `yaml:"apiVersion"`
	Kind            string              `yaml:"kind"`
	EventHandlers   []rawEventHandler   `yaml:"eventHandlers"`
	CustomInformers []rawCustomInformer `yaml:"customInformers"`
	// Profiles is decoded node by node (see profileParser), so that errors
	// name each field's path.
	Profiles yaml.Node `yaml:"profiles"`
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
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, flattenYAMLError(err))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: the file is empty; want a document with apiVersion %s and kind %s", path, APIVersion, Kind)
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

	if raw.APIVersion != APIVersion {
		bad(lineOf(root, "apiVersion"), "apiVersion is %q, want %q", raw.APIVersion, APIVersion)
	}
	if raw.Kind != Kind {
		bad(lineOf(root, "kind"), "kind is %q, want %q", raw.Kind, Kind)
	}

	f := &File{Path: path}
	seen := map[string]int{}
	for i, h := range raw.EventHandlers {
		line := entryLine(root, "eventHandlers", i)
		field := fmt.Sprintf("eventHandlers[%d]", i)
		switch {
		case h.Name == "":
			bad(line, "%s.name is required", field)
		case seen[h.Name] != 0:
			bad(line, "%s.name %q is a duplicate of the entry on line %d", field, h.Name, seen[h.Name])
		default:
			seen[h.Name] = line
		}
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

	informerLines := map[string]int{}
	for i, ci := range raw.CustomInformers {
		line := entryLine(root, "customInformers", i)
		field := fmt.Sprintf("customInformers[%d]", i)
		if ci.Name != "" {
			field = fmt.Sprintf("customInformers[%d] (%s)", i, ci.Name)
		}
		switch {
		case ci.Name == "":
			bad(line, "%s.name is required", field)
		case len(validation.IsDNS1123Label(ci.Name)) > 0:
			bad(line, "%s.name %q must be a DNS-1123 label: %s", field, ci.Name, strings.Join(validation.IsDNS1123Label(ci.Name), "; "))
		case informerLines[ci.Name] != 0:
			bad(line, "%s.name %q is a duplicate of the entry on line %d", field, ci.Name, informerLines[ci.Name])
		default:
			informerLines[ci.Name] = line
		}
		if ci.Resource == "" {
			bad(line, "%s.resource is required", field)
		}
		if ci.ResyncPeriod < 0 {
			bad(line, "%s.resyncPeriod must not be negative, got %s", field, ci.ResyncPeriod)
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
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(problems, "; "))
	}
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
