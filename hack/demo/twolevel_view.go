package main

// What the two-level demo observes after each step: the snapshot of the
// allocator, the VM manager, the scheduler and the API server, the
// invariants every step checks, and the tables it prints.

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
				return harness.Final(fmt.Errorf("%s's grant on %s moved to %s while both frameworks wait", f, node, short(g)))
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
			return fmt.Errorf("node %s: the scheduler's cap %s is not batch's grant %s yet", n.Name, short(*n.Cap), short(grant))
		}
		if !revoked && (n.CapExceeded || !n.Cap.Fits(n.OwnRequested)) {
			return harness.Final(fmt.Errorf("node %s: batch's pods request %s, over its grant %s", n.Name, short(n.OwnRequested), short(*n.Cap)))
		}
		vmGrant := resources.FromList(vmsStatus.Grants[n.Name])
		if u := vmUse[n.Name]; u.MilliCPU > vmGrant.MilliCPU || u.Memory > vmGrant.Memory {
			return harness.Final(fmt.Errorf("node %s: VMs use %s, over vms's grant %s", n.Name, short(u), short(vmGrant)))
		}
		total := n.Requested
		total.Add(n.External)
		if !n.Schedulable.Fits(total) {
			return harness.Final(fmt.Errorf("node %s: pods and VMs use %s, over %s", n.Name, short(total), short(n.Schedulable)))
		}
	}
	return nil
}

// short renders cpu and memory, e.g. "4 cpu, 8Gi".
func short(r resources.Resource) string {
	return fmt.Sprintf("%s cpu, %s", resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI), resource.NewQuantity(r.Memory, resource.BinarySI))
}

// shortList renders a resource list as short does, "-" when empty.
func shortList(l v1.ResourceList) string {
	if len(l) == 0 {
		return "-"
	}
	return short(resources.FromList(l))
}

// printTwoLevel prints the grants, the VMs, the pods, the scheduler's
// view of the nodes and its demand report.
func printTwoLevel(s *snapshot) {
	out := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fws := slices.Sorted(maps.Keys(s.alloc.Frameworks))
	fmt.Fprintf(out, "GRANTS (allocator, round %d)\tALLOCATABLE", s.alloc.Round)
	for _, f := range fws {
		fmt.Fprintf(out, "\t%s", f)
	}
	fmt.Fprintln(out)
	for _, node := range slices.Sorted(maps.Keys(s.alloc.Nodes)) {
		fmt.Fprintf(out, "%s\t%s", node, shortList(s.alloc.Nodes[node]))
		for _, f := range fws {
			st := s.alloc.Frameworks[f]
			cell := shortList(st.Grants[node])
			if msg, ok := st.Revoked[node]; ok {
				cell = "REVOKED (" + msg + ")"
			}
			fmt.Fprintf(out, "\t%s", cell)
		}
		fmt.Fprintln(out)
	}
	for _, f := range fws {
		st := s.alloc.Frameworks[f]
		hungry := "no"
		if st.Hungry {
			hungry = "yes, unmet " + shortList(st.Unmet)
		}
		fmt.Fprintf(out, "  %s\ttotal %s\tdominant share %.2f, waiting: %s\n", f, shortList(st.Granted), st.DominantShare, hungry)
	}
	out.Flush()
	fmt.Println()

	out = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(out, "VM (vm-manager)\tHOST\tCPU\tMEMORY\tPHASE\tWHY")
	if len(s.vms) == 0 {
		fmt.Fprintln(out, "(none)\t\t\t\t\t")
	}
	for _, v := range s.vms {
		host, why := v.Host, v.Message
		if host == "" {
			host = "-"
		}
		if why == "" {
			why = "-"
		}
		lines := harness.Wrap(why, 90)
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, host, v.CPU.String(), v.Memory.String(), v.Phase, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(out, "\t\t\t\t\t  %s\n", l)
		}
	}
	out.Flush()
	fmt.Println()

	if len(s.pods) > 0 {
		printPlacements(s.pods, s.dump)
		fmt.Println()
	}

	out = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(out, "NODE (/debug/cache)\tCAP (batch's grant)\tBATCH PODS REQUEST\tVMS (external)\tIDLE FOR BATCH")
	for _, n := range s.dump.Nodes {
		capCell := "uncapped"
		if n.Cap != nil {
			capCell = short(*n.Cap)
			if n.Cap.IsZero() {
				capCell = "0 (no grant)"
			}
		}
		own := short(n.OwnRequested)
		if n.CapExceeded {
			own += " OVER CAP"
		}
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\n", n.Name, capCell, own, short(n.External), short(n.Idle))
	}
	out.Flush()
	d := s.demand
	fmt.Printf("batch-scheduler /demand: %d pod(s) waiting", d.Waiting)
	if d.Waiting > 0 {
		fmt.Printf(", unmet %s, largest unit %s", shortList(d.Unmet), shortList(d.LargestUnit))
	}
	if g := d.LargestGang; g != nil {
		fmt.Printf(", largest gang %s (%d waiting, min %d, %s)", g.Name, g.Members, g.MinMember, shortList(g.Total))
	}
	fmt.Println()
}
