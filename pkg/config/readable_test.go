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
	"strings"
	"testing"
	"time"
)

func TestDecodeErrorsAreReadable(t *testing.T) {
	type args struct {
		Timeout time.Duration     `yaml:"timeout"`
		Names   []string          `yaml:"names"`
		Labels  map[string]string `yaml:"labels"`
		Count   int               `yaml:"count"`
		On      bool              `yaml:"on"`
		Nested  struct {
			X string `yaml:"x"`
		} `yaml:"nested"`
	}
	tests := []struct{ in, want string }{
		{"timeout: soon\n", `c.yaml: line 1: expected a duration such as 30s or 5m, got a string "soon"`},
		{"names: 3\n", `c.yaml: line 1: expected a list, got an integer "3"`},
		{"labels: [a]\n", `c.yaml: line 1: expected a mapping, got a list`},
		{"count: x\n", `c.yaml: line 1: expected an integer, got a string "x"`},
		{"on: maybe\n", `c.yaml: line 1: expected true or false, got a string "maybe"`},
		{"nested: [1]\n", `c.yaml: line 1: expected a mapping, got a list`},
		{"- a\n", `c.yaml: line 1: expected a mapping, got a list`},
		{"\nbogus: 1\n", `c.yaml: line 2: field bogus not found`},
		{"timeout: \"a\\nb\"\n", `c.yaml: line 1: expected a duration such as 30s or 5m, got a string "a\nb"`},
	}
	for _, tt := range tests {
		var a args
		err := DecodeStrict(NewSection("c.yaml", []byte(tt.in)), &a)
		if err == nil {
			t.Errorf("%q: no error, want %q", tt.in, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%q:\n got  %s\n want %s", tt.in, err, tt.want)
		}
		if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "config.") || strings.Contains(err.Error(), "args") {
			t.Errorf("%q: error %q spans lines or names a Go type", tt.in, err)
		}
	}
}
