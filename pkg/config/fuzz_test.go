package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// fuzzPath is the file name Parse is given; every error must name it.
const fuzzPath = "fuzz/sched.yaml"

// maxFuzzMessage bounds the length of any error of Parse.
const maxFuzzMessage = 16 << 10

// FuzzParse feeds arbitrary bytes to Parse, the parser behind Load (Load
// only reads the file first). Parse must not panic; an error must be one
// non-empty line naming the file; a File it returns must satisfy what
// Parse promises to its callers.
//
// The seeds live in testdata/fuzz/FuzzParse and run with plain go test.
// To fuzz: go test -run XXX -fuzz FuzzParse -fuzztime 60s ./pkg/config
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(fuzzPath, data)
		if err != nil {
			if file != nil {
				t.Errorf("Parse returned both a File and an error: %v", err)
			}
			msg := err.Error()
			if strings.TrimSpace(msg) == "" {
				t.Fatal("Parse returned an error with an empty message")
			}
			if !strings.HasPrefix(msg, fuzzPath+": ") {
				t.Errorf("error does not start with the file path %q: %q", fuzzPath, msg)
			}
			// Bounded whatever the input: at most maxProblems problems,
			// each quoting values bounded.
			if len(msg) > maxFuzzMessage {
				t.Errorf("error of %d bytes for %d bytes of input; want at most %d: %.300q", len(msg), len(data), maxFuzzMessage, msg)
			}
			return
		}
		if file == nil {
			t.Fatal("Parse returned neither a File nor an error")
		}
		checkFile(t, file, data)
	})
}

// checkFile checks the invariants of a File that Parse accepted.
func checkFile(t *testing.T, file *File, data []byte) {
	t.Helper()
	if file.Path != fuzzPath {
		t.Errorf("File.Path = %q, want %q", file.Path, fuzzPath)
	}
	// A line break is "\n", "\r" or "\r\n"; counting each character
	// over-counts "\r\n", which only makes the check looser. yaml.v3
	// also breaks lines at NEL, LS and PS.
	lines := 1
	for _, br := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		lines += strings.Count(string(data), br)
	}
	checkLine := func(what string, line int) {
		t.Helper()
		if line < 1 || line > lines {
			t.Errorf("%s: line %d is outside the file's %d lines", what, line, lines)
		}
	}
	checkSection := func(what string, s *Section) {
		t.Helper()
		if s == nil {
			return
		}
		if s.Source() != fuzzPath {
			t.Errorf("%s: section source = %q, want %q", what, s.Source(), fuzzPath)
		}
		// Decoding a section may fail (its owner decides what it
		// accepts), but must not panic, and an error must name the file.
		var anything any
		if err := DecodeStrict(s.Clone(), &anything); err != nil && !strings.HasPrefix(err.Error(), fuzzPath+": ") {
			t.Errorf("%s: section error does not name the file: %v", what, err)
		}
	}

	handlers := map[string]bool{}
	for i, h := range file.EventHandlers {
		what := "eventHandlers[" + h.Name + "]"
		if h.Name == "" {
			t.Errorf("eventHandlers entry %d has no name", i)
		}
		if handlers[h.Name] {
			t.Errorf("%s: duplicate name accepted", what)
		}
		handlers[h.Name] = true
		checkLine(what, h.Line)
		checkSection(what, h.Args)
		// HandlerArgs hands out a fresh reader every time.
		if h.Args != nil {
			if r := file.HandlerArgs(h.Name); r == nil {
				t.Errorf("%s: HandlerArgs returned nil for an entry with args", what)
			}
		}
	}

	informers := map[string]bool{}
	for i, ci := range file.CustomInformers {
		what := "customInformers[" + ci.Name + "]"
		if ci.Name == "" {
			t.Errorf("customInformers entry %d has no name", i)
		}
		if errs := validation.IsDNS1123Label(ci.Name); len(errs) > 0 {
			t.Errorf("%s: name is not a DNS-1123 label: %v", what, errs)
		}
		if informers[ci.Name] {
			t.Errorf("%s: duplicate name accepted", what)
		}
		informers[ci.Name] = true
		if ci.Resource == "" {
			t.Errorf("%s: empty resource accepted", what)
		}
		if ci.ResyncPeriod < 0 {
			t.Errorf("%s: negative resyncPeriod %s accepted", what, ci.ResyncPeriod)
		}
		checkLine(what, ci.Line)
		checkSection(what+".source."+ci.SourceType, ci.SourceArgs)
	}

	checkAPI(t, file)

	profiles := map[string]bool{}
	for i, p := range file.Profiles {
		what := "profiles[" + p.SchedulerName + "]"
		if p.SchedulerName == "" {
			t.Errorf("profiles entry %d has no schedulerName", i)
		}
		if errs := validation.IsDNS1123Subdomain(p.SchedulerName); len(errs) > 0 {
			t.Errorf("%s: schedulerName is not a DNS-1123 subdomain: %v", what, errs)
		}
		if profiles[p.SchedulerName] {
			t.Errorf("%s: duplicate schedulerName accepted", what)
		}
		profiles[p.SchedulerName] = true
		checkLine(what, p.Line)
		for _, key := range extensionKeys {
			list := p.Plugins.Get(key)
			if list == nil {
				continue
			}
			checkLine(what+".plugins."+key, list.Line)
			names := map[string]bool{}
			for _, pl := range list.Plugins {
				if pl.Name == "" {
					t.Errorf("%s.plugins.%s: plugin without a name accepted", what, key)
				}
				if names[pl.Name] {
					t.Errorf("%s.plugins.%s: duplicate plugin %q accepted", what, key, pl.Name)
				}
				names[pl.Name] = true
				checkLine(what+".plugins."+key+"."+pl.Name, pl.Line)
				if pl.Weight < 0 || (pl.Weight != 0 && key != ExtensionScore) {
					t.Errorf("%s.plugins.%s: plugin %q has weight %d", what, key, pl.Name, pl.Weight)
				}
			}
		}
		configs := map[string]bool{}
		for _, pc := range p.PluginConfig {
			if pc.Name == "" {
				t.Errorf("%s.pluginConfig: entry without a name accepted", what)
			}
			if configs[pc.Name] {
				t.Errorf("%s.pluginConfig: duplicate %q accepted", what, pc.Name)
			}
			configs[pc.Name] = true
			checkLine(what+".pluginConfig."+pc.Name, pc.Line)
			checkSection(what+".pluginConfig."+pc.Name, pc.Args)
		}
	}
}

// checkAPI checks that the file's API object, decoded through the scheme,
// says what the structural pass read: the same entries, names and
// plugins.
func checkAPI(t *testing.T, file *File) {
	t.Helper()
	api := file.API
	if api == nil {
		t.Fatal("File.API is nil for an accepted file")
	}
	if len(api.EventHandlers) != len(file.EventHandlers) || len(api.CustomInformers) != len(file.CustomInformers) || len(api.Profiles) != len(file.Profiles) {
		t.Fatalf("API has %d handlers, %d informers, %d profiles; the file %d, %d, %d", len(api.EventHandlers), len(api.CustomInformers),
			len(api.Profiles), len(file.EventHandlers), len(file.CustomInformers), len(file.Profiles))
	}
	for i, h := range file.EventHandlers {
		if api.EventHandlers[i].Name != h.Name {
			t.Errorf("eventHandlers[%d]: API name %q, file %q", i, api.EventHandlers[i].Name, h.Name)
		}
	}
	for i, ci := range file.CustomInformers {
		a := api.CustomInformers[i]
		if a.Name != ci.Name || a.Resource != ci.Resource || a.ResyncPeriod.Duration != ci.ResyncPeriod {
			t.Errorf("customInformers[%d]: API %s/%s/%s, file %s/%s/%s", i, a.Name, a.Resource, a.ResyncPeriod.Duration, ci.Name, ci.Resource, ci.ResyncPeriod)
		}
		if _, ok := a.Source[ci.SourceType]; !ok || len(a.Source) != 1 {
			t.Errorf("customInformers[%d]: API source %v, file %q", i, a.Source, ci.SourceType)
		}
	}
	for i, p := range file.Profiles {
		a := api.Profiles[i]
		if a.SchedulerName != p.SchedulerName {
			t.Errorf("profiles[%d]: API schedulerName %q, file %q", i, a.SchedulerName, p.SchedulerName)
		}
		for _, key := range extensionKeys {
			list, set := p.Plugins.Get(key), apiPluginSet(a.Plugins, key)
			if (list == nil) != (set == nil) {
				t.Errorf("profiles[%d].plugins.%s: in the file %v, in the API %v", i, key, list != nil, set != nil)
				continue
			}
			if list == nil {
				continue
			}
			var want, got []string
			for _, pl := range list.Plugins {
				want = append(want, fmt.Sprintf("%s/%d", pl.Name, pl.Weight))
			}
			for _, pl := range set.Enabled {
				got = append(got, fmt.Sprintf("%s/%d", pl.Name, pl.Weight))
			}
			disabled := list.Disabled
			if !list.Merge {
				disabled = []string{"*"} // the list form replaces the defaults
			}
			var gotDisabled []string
			for _, pl := range set.Disabled {
				gotDisabled = append(gotDisabled, pl.Name)
			}
			if !slices.Equal(want, got) || !slices.Equal(disabled, gotDisabled) {
				t.Errorf("profiles[%d].plugins.%s: file enables %v and disables %v, the API %v and %v", i, key, want, disabled, got, gotDisabled)
			}
		}
		if len(a.PluginConfig) != len(p.PluginConfig) {
			t.Errorf("profiles[%d]: API has %d pluginConfig entries, the file %d", i, len(a.PluginConfig), len(p.PluginConfig))
		}
	}
}

func apiPluginSet(p *configapi.Plugins, key string) *configapi.PluginSet {
	if p == nil {
		return nil
	}
	return map[string]*configapi.PluginSet{
		ExtensionQueueSort: p.QueueSort, ExtensionPreFilter: p.PreFilter, ExtensionFilter: p.Filter, ExtensionPreScore: p.PreScore,
		ExtensionScore: p.Score, ExtensionReserve: p.Reserve, ExtensionPermit: p.Permit, ExtensionPostFilter: p.PostFilter, ExtensionBind: p.Bind,
	}[key]
}
