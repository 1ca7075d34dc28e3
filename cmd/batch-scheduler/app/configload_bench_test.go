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

package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
)

// BenchmarkConfigLoad reads a configuration file with two profiles, typed
// plugin args, handler args and a custom informer, and builds the
// frameworks it describes: what start-up spends on the file.
func BenchmarkConfigLoad(b *testing.B) {
	path := filepath.Join("testdata", "config-load-bench.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	names := []string{"batch-scheduler", "batch-scheduler-spread"}
	reg := plugins.NewInTreeRegistry()
	b.ReportAllocs()
	for b.Loop() {
		f, err := config.Parse(path, data)
		if err != nil {
			b.Fatal(err)
		}
		profiles, _, err := buildProfiles(b.Context(), names, f, reg, testHandle())
		if err != nil {
			b.Fatal(err)
		}
		if len(profiles) != len(names) {
			b.Fatalf("built %d profiles, want %d", len(profiles), len(names))
		}
	}
}
