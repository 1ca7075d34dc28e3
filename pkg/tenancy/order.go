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

package tenancy

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/batch-scheduler/batch-scheduler/pkg/fairshare"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// OrderPolicy is the extension point that orders jobs across tenant
// queues: it ranks the tenant queues, and the scheduling queue pops the
// jobs of a lower rank first; within one rank (one tenant queue, or tenant
// queues of equal rank) the QueueSort plugin orders the jobs. Tenants calls
// Rank each time it divides the capacity anew (a tenant queue changed,
// one started asking, what they ask for moved, or every Options.Refresh),
// with the tenant queues as a cycle would see them, usage included.
//
// Rank runs under Tenants' lock: it must be fast, must not keep s (it is
// shared and immutable), and must not call Tenants or the cache. It
// returns a rank per tenant queue name of s.Queues; only the order of the
// ranks counts, not their values. A tenant queue it leaves out ranks
// before every one it names, as do jobs of tenant queues that do not
// exist (they only wait, and fail fast). nil ranks every tenant queue
// equal: the QueueSort plugin alone orders the jobs.
//
// A policy is chosen by name in the configuration (tenantQueueOrder);
// register one with OrderPolicies.Register (for the command:
// app.WithTenantQueueOrder). See docs/architecture.md for an example.
type OrderPolicy interface {
	Rank(s *framework.QueueSnapshot) map[string]int
}

// OrderPolicyFunc is an OrderPolicy of one function.
type OrderPolicyFunc func(s *framework.QueueSnapshot) map[string]int

// Rank implements OrderPolicy.
func (f OrderPolicyFunc) Rank(s *framework.QueueSnapshot) map[string]int { return f(s) }

// Names of the in-tree order policies.
const (
	// FairShareOrder serves first the tenant queue furthest below its fair
	// share (see FairShare).
	FairShareOrder = "FairShare"
	// UnrankedOrder ranks every tenant queue equal: the QueueSort plugin
	// alone orders the jobs across tenant queues, whose shares still bound
	// what each may use.
	UnrankedOrder = "Unranked"
	// DefaultOrderPolicy is the policy of a configuration that names none.
	DefaultOrderPolicy = FairShareOrder
)

// OrderPolicies is a registry of order policies by name.
type OrderPolicies map[string]OrderPolicy

// InTreeOrderPolicies returns a new registry of the in-tree policies.
func InTreeOrderPolicies() OrderPolicies {
	return OrderPolicies{
		FairShareOrder: OrderPolicyFunc(FairShare),
		UnrankedOrder:  OrderPolicyFunc(func(*framework.QueueSnapshot) map[string]int { return nil }),
	}
}

// Register adds p under name; a name already registered is an error.
func (r OrderPolicies) Register(name string, p OrderPolicy) error {
	if name == "" || p == nil {
		return fmt.Errorf("registering tenant queue order policy %q: a name and a policy are required", name)
	}
	if _, ok := r[name]; ok {
		return fmt.Errorf("registering tenant queue order policy %q: already registered", name)
	}
	r[name] = p
	return nil
}

// Lookup returns the policy registered under name, or an error naming the
// registered ones.
func (r OrderPolicies) Lookup(name string) (OrderPolicy, error) {
	if p, ok := r[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown tenant queue order policy %q (registered: %s)", name, strings.Join(r.Names(), ", "))
}

// Names returns the registered names, sorted.
func (r OrderPolicies) Names() []string {
	names := make([]string, 0, len(r))
	for name := range r {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// DominantUse is the largest share of fair the amounts in used take:
// max over resources of used/fair; +Inf where something is used of a
// resource whose fair share is 0, and 0 when nothing is used.
func DominantUse(used, fair framework.ResourceAmounts) float64 {
	return fairshare.DominantShare(fairshare.Vector(used), fairshare.Vector(fair))
}

// FairShare is the default order policy (FairShareOrder): at each level of
// the tree, the tenant queue whose use is the smallest part of its fair
// share first, so that the tenant queue furthest below its share is
// served first. Tenant queues of equal use keep name order.
func FairShare(s *framework.QueueSnapshot) map[string]int {
	type keyed struct {
		name string
		key  []float64
	}
	all := make([]keyed, 0, len(s.Queues))
	for name := range s.Queues {
		path := s.Path(name)
		key := make([]float64, len(path))
		for i, q := range path {
			key[i] = DominantUse(q.Allocated, q.FairShare)
			if math.IsNaN(key[i]) {
				key[i] = math.Inf(1)
			}
		}
		all = append(all, keyed{name: name, key: key})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i].key, all[j].key
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		if len(a) != len(b) {
			return len(a) < len(b)
		}
		return all[i].name < all[j].name
	})
	ranks := make(map[string]int, len(all))
	for i, k := range all {
		ranks[k.name] = i
	}
	return ranks
}

// schedulingRanks turns a policy's ranks into the scheduling queue's
// (SchedulingQueue.SetTenantQueueRanks): dense, from 1 in the policy's
// order, and the default tenant queue named "" as the scheduling queue
// names it. Rank 0 is left for the jobs whose tenant queue the ranks do
// not name, so that such jobs (of tenant queues that do not exist, which
// only wait) go first and fail fast. nil stays nil.
func schedulingRanks(policy map[string]int) map[string]int {
	if len(policy) == 0 {
		return nil
	}
	values := make([]int, 0, len(policy))
	for _, r := range policy {
		values = append(values, r)
	}
	slices.Sort(values)
	values = slices.Compact(values)
	out := make(map[string]int, len(policy))
	for name, r := range policy {
		dense, _ := slices.BinarySearch(values, r)
		if name == framework.DefaultQueue {
			name = ""
		}
		out[name] = dense + 1
	}
	return out
}
