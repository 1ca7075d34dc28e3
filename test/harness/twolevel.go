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

package harness

import (
	"fmt"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// TwoLevelConsistent is the consistency check of two-level scheduling: what
// it guarantees at every moment, read from the scheduler (d), the
// allocator (a) and the VM manager (vms), for the frameworks
// batchFramework (batch-scheduler) and vmFramework (the VM manager):
//   - on every node the scheduler caps, its pods request no more than the
//     cap, except on a node whose grant was revoked under them;
//   - the scheduler's cap on a node is its framework's live grant there;
//   - the VMs on a host use no more than vmFramework's grant there;
//   - pods and VMs together fit in the node.
//
// A cap that is not the grant yet may be an event in flight; the others
// are Final.
func TwoLevelConsistent(d *cache.Dump, a *Allocation, vms []VM, batchFramework, vmFramework string) error {
	batch, vmsStatus := a.Frameworks[batchFramework], a.Frameworks[vmFramework]
	vmUse := map[string]resources.Resource{}
	for _, v := range vms {
		if v.Phase == "Running" {
			u := vmUse[v.Host]
			u.MilliCPU += v.CPU.MilliValue()
			u.Memory += v.Memory.Value()
			vmUse[v.Host] = u
		}
	}
	for _, n := range d.Nodes {
		_, revoked := batch.Revoked[n.Name]
		if n.Cap == nil {
			return fmt.Errorf("/debug/cache: node %s has no cap", n.Name)
		}
		grant := resources.FromList(batch.Grants[n.Name])
		if revoked {
			grant = resources.Resource{}
		}
		if n.Cap.MilliCPU != grant.MilliCPU || n.Cap.Memory != grant.Memory {
			return fmt.Errorf("node %s: the scheduler's cap %s is not %s's grant %s yet", n.Name, Short(*n.Cap), batchFramework, Short(grant))
		}
		if !revoked && (n.CapExceeded || !n.Cap.Fits(n.OwnRequested)) {
			return Final(fmt.Errorf("node %s: %s's pods request %s, over its grant %s", n.Name, batchFramework, Short(n.OwnRequested), Short(*n.Cap)))
		}
		vmGrant := resources.FromList(vmsStatus.Grants[n.Name])
		if u := vmUse[n.Name]; u.MilliCPU > vmGrant.MilliCPU || u.Memory > vmGrant.Memory {
			return Final(fmt.Errorf("node %s: VMs use %s, over %s's grant %s", n.Name, Short(u), vmFramework, Short(vmGrant)))
		}
		total := n.Requested
		total.Add(n.External)
		if !n.Schedulable.Fits(total) {
			return Final(fmt.Errorf("node %s: pods and VMs use %s, over %s", n.Name, Short(total), Short(n.Schedulable)))
		}
	}
	return nil
}
