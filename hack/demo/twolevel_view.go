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

package main

// What the two-level demo observes after each step: the snapshot of the
// allocator, the VM manager, the scheduler and the API server, the
// invariants every step checks, and the tables it prints.

import (
	"fmt"
	"maps"
	"os"
	"text/tabwriter"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

// vmsAre checks the VMs: name → host, "" for pending.
func vmsAre(s *snapshot, want map[string]string) error {
	got := map[string]string{}
	for _, v := range s.vms {
		got[v.Name] = v.Host
		if v.Phase != "Running" {
			got[v.Name] = ""
		}
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("the VMs are %v; expected %v (name: host, empty for pending)", got, want)
	}
	return nil
}

// grantsUnchanged checks that every grant is still half a node.
func grantsUnchanged(s *snapshot) error {
	for _, node := range twoLevelNodes {
		for _, f := range []string{frameworkBatch, frameworkVMs} {
			g := resources.FromList(s.alloc.Frameworks[f].Grants[node])
			if g.MilliCPU != 4000 {
				return harness.Final(fmt.Errorf("%s's grant on %s moved to %s while both frameworks wait", f, node, harness.Short(g)))
			}
		}
	}
	return nil
}

// invariants are what two-level scheduling guarantees at every moment
// (harness.TwoLevelConsistent).
func invariants(s *snapshot) error {
	return harness.TwoLevelConsistent(s.dump, s.alloc, s.vms, frameworkBatch, frameworkVMs)
}

// printTwoLevel prints the grants, the VMs, the pods, the scheduler's
// view of the nodes and its demand report.
func printTwoLevel(s *snapshot) {
	s.alloc.Write(os.Stdout)
	fmt.Println()

	harness.WriteVMs(os.Stdout, s.vms)
	fmt.Println()

	if len(s.pods) > 0 {
		harness.WritePods(os.Stdout, s.pods, s.dump, ourScheduler)
		fmt.Println()
	}

	out := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(out, "NODE (/debug/cache)\tCAP (batch's grant)\tBATCH PODS REQUEST\tVMS (external)\tIDLE FOR BATCH")
	for _, n := range s.dump.Nodes {
		capCell := "uncapped"
		if n.Cap != nil {
			capCell = harness.Short(*n.Cap)
			if n.Cap.IsZero() {
				capCell = "0 (no grant)"
			}
		}
		own := harness.Short(n.OwnRequested)
		if n.CapExceeded {
			own += " OVER CAP"
		}
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\n", n.Name, capCell, own, harness.Short(n.External), harness.Short(n.Idle))
	}
	out.Flush()
	d := s.demand
	fmt.Printf("batch-scheduler /demand: %d pod(s) waiting", d.Waiting)
	if d.Waiting > 0 {
		fmt.Printf(", unmet %s, largest unit %s", harness.ShortList(d.Unmet), harness.ShortList(d.LargestUnit))
	}
	if g := d.LargestGang; g != nil {
		fmt.Printf(", largest gang %s (%d waiting, min %d, %s)", g.Name, g.Members, g.MinMember, harness.ShortList(g.Total))
	}
	fmt.Println()
}
