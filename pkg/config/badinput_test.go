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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseBadInput: each malformed file gets one line that names the
// file, the line at fault where there is one, and what is wrong.
func TestParseBadInput(t *testing.T) {
	const head = "apiVersion: batch-scheduler.io/v1alpha1\nkind: SchedulerConfiguration\n"
	many := func(n int, item string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, item, i)
		}
		return b.String()
	}
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"stray list item names its own line", head + "eventHandlers: []\n- x\n", []string{"c.yaml: line 4: "}},
		{"list item after mapping key", head + "customInformers:\n  - name: a\n    resource: Node\n  bogus: 1\n", []string{"line 6: "}},
		{"tab in indentation", head + "eventHandlers:\n\t- name: default\n", []string{"line 4: a tab in the indentation"}},
		{"tab after spaces", head + "eventHandlers:\n  - name: default\n  \targs: {}\n", []string{"line 5: a tab in the indentation"}},
		{"unclosed flow list", head + "eventHandlers: [\n  {name: a}\ncustomInformers: []\n", []string{"c.yaml: line"}},
		{"unterminated quote", head + "eventHandlers:\n  - name: \"default\n", []string{"line 4: "}},
		{"thousands of unknown keys", head + many(50, "bogus%d: 1\n"), []string{"field bogus0 not found", "and 40 more problems"}},
		{"too many custom informers", head + "customInformers:\n" + many(MaxListItems+1, "  - {name: c%d, resource: Node, source: {http: {}}}\n"),
			[]string{"line 4: a list of 1001 items; at most 1000 are allowed"}},
		{"too many keys", head + "eventHandlers:\n  - name: default\n    args:\n" + many(MaxMappingKeys+1, "      k%d: 1\n"),
			[]string{"line 6: a mapping of 1001 keys"}},
		{"too big", head + "# " + strings.Repeat("x", MaxFileBytes) + "\n", []string{"more than the limit of 2 MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || len(msg) > 2000 {
				t.Errorf("error is not one short line (%d bytes): %.300q", len(msg), msg)
			}
			if !strings.HasPrefix(msg, "c.yaml: ") {
				t.Errorf("error does not name the file: %.300s", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %.300q does not contain %q", msg, w)
				}
			}
		})
	}
}

// TestLoadBadFiles: paths that are not a configuration file are refused
// before they are read in full, with the path and the reason.
func TestLoadBadFiles(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", MaxFileBytes+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{"/dev/zero", "/dev/zero: is not a regular file"},
		{dir, dir + ": is a directory"},
		{big, big + ": the file has 2097153 bytes, more than the limit of 2 MiB"},
		{filepath.Join(dir, "missing.yaml"), "no such file or directory"},
	}
	for _, tt := range tests {
		_, err := Load(tt.path)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load(%q) = %v, want an error containing %q", tt.path, err, tt.want)
		}
	}
}

// TestLoadPipeIsBounded: a pipe that never ends is read up to the limit.
func TestLoadPipeIsBounded(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		defer w.Close()
		chunk := []byte(strings.Repeat("# endless\n", 1000))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}()
	path := fmt.Sprintf("/proc/self/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	_, err = Load(path)
	if err == nil || !strings.Contains(err.Error(), "larger than the limit of 2 MiB") {
		t.Fatalf("Load of an endless pipe = %v, want the size limit", err)
	}
}

// TestLoadContextCancelled: loading gives up when its context ends.
func TestLoadContextCancelled(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close() // a pipe that never delivers: the read blocks
	path := fmt.Sprintf("/proc/self/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = LoadContext(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "loading stopped") {
		t.Fatalf("LoadContext = %v, want it stopped", err)
	}
}
