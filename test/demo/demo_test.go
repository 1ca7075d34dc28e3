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

// Package demo runs hack/demo's scenarios as tests: make demo is the
// story a new user reads first, and each of its steps checks the outcome
// it prints (pods, Jobs, VMs, grants, Queues, /debug/cache), so a demo
// that exits 0 has had every outcome it printed confirmed. The demo runs
// on the tests' harness (test/harness), which also builds it here.
package demo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// finished is the demo's last line on success.
var finished = regexp.MustCompile(`Every outcome was as expected \(([0-9]+) steps, `)

func TestDemoScenarios(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := harness.Build(t.Context(), root, bin, "./hack/demo"); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "TMPDIR="+t.TempDir())
	// The scenarios run one after the other: each writes its logs and
	// the example programs into _output/demo, as make demo does.
	for _, tc := range []struct {
		scenario string
		// minSteps is the fewest steps the story has; fewer means it
		// stopped early without saying so.
		minSteps int
	}{
		{scenario: "hybrid", minSteps: 8},
		{scenario: "two-level", minSteps: 5},
		{scenario: "queues", minSteps: 10},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), filepath.Join(bin, "demo"), "--scenario", tc.scenario)
			cmd.Dir, cmd.Env = root, env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			logs := filepath.Join(root, "_output", "demo")
			if i := strings.Index(out.String(), "WARNING: DATA RACE"); i >= 0 {
				t.Errorf("demo --scenario %s: the race detector found a data race:\n%s", tc.scenario, head(out.String()[i:], 80))
			}
			if err != nil {
				t.Fatalf("demo --scenario %s: %v; its output ends with:\n%s\nthe scheduler's log (%s) ends with:\n%s", tc.scenario, err,
					tail(out.String(), 60), filepath.Join(logs, "batch-scheduler.log"), controlplane.Tail(filepath.Join(logs, "batch-scheduler.log"), 30))
			}
			m := finished.FindStringSubmatch(out.String())
			if m == nil {
				t.Fatalf("demo --scenario %s exited 0 without its closing line; output ends with:\n%s", tc.scenario, tail(out.String(), 30))
			}
			if steps, _ := strconv.Atoi(m[1]); steps < tc.minSteps {
				t.Errorf("demo --scenario %s ran %d steps, want at least %d", tc.scenario, steps, tc.minSteps)
			}
		})
	}
}

func head(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
