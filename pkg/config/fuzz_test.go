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
	checkSection := func(what string, s *configapi.RawArgs) {
		t.Helper()
		if s == nil {
			return
		}
		if s.Source != fuzzPath {
			t.Errorf("%s: section source = %q, want %q", what, s.Source, fuzzPath)
		}
		// Decoding a section may fail (its owner decides what it
		// accepts), but must not panic, and an error must name the file.
		var anything any
		if err := DecodeStrict(s.Reader(), &anything); err != nil && !strings.HasPrefix(err.Error(), fuzzPath+": ") {
			t.Errorf("%s: section error does not name the file: %v", what, err)
		}
	}

	api := file.API
	if api == nil {
		t.Fatal("File.API is nil for an accepted file")
	}
	handlers := map[string]bool{}
	for i, h := range api.EventHandlers {
		what := "eventHandlers[" + h.Name + "]"
		if h.Name == "" {
			t.Errorf("eventHandlers entry %d has no name", i)
		}
		if handlers[h.Name] {
			t.Errorf("%s: duplicate name accepted", what)
		}
		handlers[h.Name] = true
		checkLine(what, file.Line(fmt.Sprintf("eventHandlers[%d]", i)))
		if raw, ok := h.Args.(*configapi.RawArgs); ok {
			checkSection(what, raw)
		} else if h.Args != nil && !HasTypedHandlerArgs(h.Name) {
			t.Errorf("%s: args of type %T for a handler without typed args", what, h.Args)
		}
		// HandlerArgs hands out a fresh reader every time.
		if h.Args != nil {
			if r := file.HandlerArgs(h.Name); r == nil {
				t.Errorf("%s: HandlerArgs returned nil for an entry with args", what)
			}
		}
	}

	informers := map[string]bool{}
	for i, ci := range api.CustomInformers {
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
		if ci.SourceType == "" {
			t.Errorf("%s: empty source type accepted", what)
		}
		if ci.ResyncPeriod.Duration < 0 {
			t.Errorf("%s: negative resyncPeriod %s accepted", what, ci.ResyncPeriod.Duration)
		}
		checkLine(what, file.Line(fmt.Sprintf("customInformers[%d]", i)))
		switch a := ci.SourceArgs.(type) {
		case *configapi.RawArgs:
			checkSection(what+".source."+ci.SourceType, a)
		case nil:
		default:
			if !HasTypedSourceArgs(ci.SourceType) {
				t.Errorf("%s: settings of type %T for an untyped source", what, a)
			}
		}
	}

	profiles := map[string]bool{}
	for i, p := range api.Profiles {
		what := "profiles[" + p.SchedulerName + "]"
		path := fmt.Sprintf("profiles[%d]", i)
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
		checkLine(what, file.Line(path))
		for _, key := range slices.Concat(extensionKeys, []string{configapi.ExtensionMultiPoint}) {
			set := p.Plugins.Get(key)
			if set == nil {
				continue
			}
			checkLine(what+".plugins."+key, file.Line(path+".plugins."+key))
			names := map[string]bool{}
			for j, pl := range set.Enabled {
				if pl.Name == "" || pl.Name == "*" {
					t.Errorf("%s.plugins.%s: plugin named %q enabled", what, key, pl.Name)
				}
				if names[pl.Name] {
					t.Errorf("%s.plugins.%s: duplicate plugin %q accepted", what, key, pl.Name)
				}
				names[pl.Name] = true
				checkLine(what+".plugins."+key+"."+pl.Name, file.Line(fmt.Sprintf("%s.plugins.%s.enabled[%d]", path, key, j)))
				if pl.Weight < 0 || (pl.Weight != 0 && key != configapi.ExtensionScore && key != configapi.ExtensionMultiPoint) {
					t.Errorf("%s.plugins.%s: plugin %q has weight %d", what, key, pl.Name, pl.Weight)
				}
			}
			for _, pl := range set.Disabled {
				if pl.Name == "" || pl.Weight != 0 {
					t.Errorf("%s.plugins.%s: disabled plugin %+v accepted", what, key, pl)
				}
			}
		}
		configs := map[string]bool{}
		for j, pc := range p.PluginConfig {
			if pc.Name == "" {
				t.Errorf("%s.pluginConfig: entry without a name accepted", what)
			}
			if configs[pc.Name] {
				t.Errorf("%s.pluginConfig: duplicate %q accepted", what, pc.Name)
			}
			configs[pc.Name] = true
			checkLine(what+".pluginConfig."+pc.Name, file.Line(fmt.Sprintf("%s.pluginConfig[%d]", path, j)))
			if raw, ok := pc.Args.(*configapi.RawArgs); ok {
				checkSection(what+".pluginConfig."+pc.Name, raw)
			}
		}
	}
}
