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

package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var (
	// cp is the control plane every test shares; the tests run one at a
	// time (fault 1 restarts its kube-apiserver, fault 3 compacts its etcd).
	cp *controlplane.ControlPlane
	// schedulerBinary is the chaosscheduler command, built by TestMain.
	schedulerBinary string
	// full is CHAOS_FULL=1: longer faults, more rounds (make test-chaos).
	full = os.Getenv("CHAOS_FULL") == "1"
)

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger.
	ctrllog.SetLogger(klog.NewKlogr())
	dir, err := os.MkdirTemp("", "chaos-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	schedulerBinary = filepath.Join(dir, "chaosscheduler")
	if err := controlplane.GoBuild(".", dir, "./chaosscheduler"); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	controlplane.RunTests("chaos", &cp, func() int {
		code := m.Run()
		printSummary()
		_ = os.RemoveAll(dir)
		return code
	})
}

// row is one line of the summary: one fault, as observed.
type row struct {
	fault      string
	rounds     int
	recovery   []time.Duration
	recovered  bool
	noChecker  bool
	diffs      int
	inFlight   int
	violations int
	created    int
	binds      int
	note       string
}

var (
	rowsMu sync.Mutex
	rows   []row
)

func record(r row) {
	rowsMu.Lock()
	defer rowsMu.Unlock()
	rows = append(rows, r)
}

// printSummary prints the rows as a Markdown table, to stdout and to
// $CHAOS_REPORT if set.
func printSummary() {
	rowsMu.Lock()
	defer rowsMu.Unlock()
	if len(rows) == 0 {
		return
	}
	mode := "short"
	if full {
		mode = "full"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nChaos suite (%s), %s, race detector %v, checker bound %s\n\n", mode, time.Now().UTC().Format("2006-01-02 15:04 MST"), controlplane.RaceEnabled, recoveryBound)
	b.WriteString("| fault | rounds | recovery (fault end → 0 differences), worst | differences seen | candidates in flight | violations | pods created | binds seen | notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		rec := "n/a (no /debug/cache/verify)"
		if !r.noChecker {
			var worst time.Duration
			for _, d := range r.recovery {
				worst = max(worst, d)
			}
			rec = fmt.Sprintf("%.1f s", worst.Seconds())
			if !r.recovered {
				rec = fmt.Sprintf("not within %s", recoveryBound)
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %d | %d | %d | %d | %s |\n", r.fault, r.rounds, rec, r.diffs, r.inFlight, r.violations, r.created, r.binds, r.note)
	}
	b.WriteString("\nRecovery: from the fault's end to the first /debug/cache/verify answer with no difference (one checker run included), " +
		"under load; the worst round. Differences seen: distinct differences the checker reported (after its re-checks) before that, " +
		"and at rest after the load. Candidates in flight: differences its re-checks found to be events in flight (not reported). " +
		"Violations: pods bound twice, nodes over-committed, gangs below quorum for more than 15 s, pods the watcher may have missed.\n")
	fmt.Print(b.String())
	if path := os.Getenv("CHAOS_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "chaos: writing the report %s: %v\n", path, err)
		}
	}
}
