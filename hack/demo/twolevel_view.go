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

// invariants are what two-level scheduling guarantees at every moment,
// read from the scheduler, the allocator and the VM manager:
//   - on every node the scheduler caps, pods of batch request no more than
//     the cap, except on a node whose grant was revoked under them;
//   - the scheduler's cap on a node is batch's live grant there;
//   - the VMs on a host use no more than vms's grant there;
//   - pods and VMs together fit in the node.
func invariants(s *snapshot) error {
	batch, vmsStatus := s.alloc.Frameworks[frameworkBatch], s.alloc.Frameworks[frameworkVMs]
	vmUse := map[string]resources.Resource{}
	for _, v := range s.vms {
		if v.Phase == "Running" {
			u := vmUse[v.Host]
			u.MilliCPU += v.CPU.MilliValue()
			u.Memory += v.Memory.Value()
			vmUse[v.Host] = u
		}
	}
	for _, n := range s.dump.Nodes {
		_, revoked := batch.Revoked[n.Name]
		if n.Cap == nil {
			return fmt.Errorf("/debug/cache: node %s has no cap", n.Name)
		}
		grant := resources.FromList(batch.Grants[n.Name])
		if revoked {
			grant = resources.Resource{}
		}
		if n.Cap.MilliCPU != grant.MilliCPU || n.Cap.Memory != grant.Memory {
			return fmt.Errorf("node %s: the scheduler's cap %s is not batch's grant %s yet", n.Name, harness.Short(*n.Cap), harness.Short(grant))
		}
		if !revoked && (n.CapExceeded || !n.Cap.Fits(n.OwnRequested)) {
			return harness.Final(fmt.Errorf("node %s: batch's pods request %s, over its grant %s", n.Name, harness.Short(n.OwnRequested), harness.Short(*n.Cap)))
		}
		vmGrant := resources.FromList(vmsStatus.Grants[n.Name])
		if u := vmUse[n.Name]; u.MilliCPU > vmGrant.MilliCPU || u.Memory > vmGrant.Memory {
			return harness.Final(fmt.Errorf("node %s: VMs use %s, over vms's grant %s", n.Name, harness.Short(u), harness.Short(vmGrant)))
		}
		total := n.Requested
		total.Add(n.External)
		if !n.Schedulable.Fits(total) {
			return harness.Final(fmt.Errorf("node %s: pods and VMs use %s, over %s", n.Name, harness.Short(total), harness.Short(n.Schedulable)))
		}
	}
	return nil
}

// printTwoLevel prints the grants, the VMs, the pods, the scheduler's
// view of the nodes and its demand report.
func printTwoLevel(s *snapshot) {
	s.alloc.Write(os.Stdout)
	fmt.Println()

	harness.WriteVMs(os.Stdout, s.vms)
	fmt.Println()

	if len(s.pods) > 0 {
		printPlacements(s.pods, s.dump)
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
