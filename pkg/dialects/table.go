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

package dialects

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/podgroups"
)

// Dialect is one entry of the table: a kind of object that defines
// gangs, how a pod names it, how its objects are read and whether their
// status is written.
type Dialect struct {
	// Kind is the kind of the dialect's group objects, unique in a
	// table, e.g. "PodGroup.scheduling.volcano.sh".
	Kind framework.GroupKind
	// OwnerName, for a kind gangs are inferred from (Infer is set), is
	// its key in the default handler's ownerGangs, e.g. "RayCluster".
	OwnerName string
	// Resources are the resources whose objects are of Kind, in the
	// order of precedence between versions of one resource.
	Resources []Resource
	// Match returns the groups of this dialect a pod names explicitly
	// (a label, an annotation, a field), none when it names none. A
	// dialect with Match is read when the gang dialects are on.
	Match func(pod *v1.Pod) []framework.GroupRef
	// Infer, for a kind gangs are inferred from, returns the gang the
	// pod's owner of this kind defines. It must be a kind
	// framework.OwnerKinds knows (framework.IsOwnerKind). A dialect with
	// Infer is read when its kind is inferred (ownerGangs). It reads the
	// pod's metadata only (see framework.GroupMatcher.Inferred).
	Infer func(pod *v1.Pod) (framework.GroupRef, bool)
	// Composite, set for the kind of the parents other dialects' group
	// objects name (framework.GroupKindComposite, see
	// framework.GroupPolicy.Parent), says that no pod names its objects:
	// their children's pods form their gangs. Such a dialect, without
	// Match or Infer, is read when the gang dialects are on.
	Composite bool
	// Policy reads an object of Kind: its quorum (MinMember), topology
	// constraint, queue, schedule timeout and sub-group rules, or the
	// error that makes it unusable; nil: the object defines no gang. inferred says whether
	// gangs are inferred from Kind (for a Job, whose objects define a
	// gang only for opted-in pods otherwise). It must never panic: read
	// fields with the readers of fields.go.
	Policy func(u *unstructured.Unstructured, inferred bool) *framework.GroupPolicy
	// Fields, when set, are the paths Policy reads: the informer keeps
	// only these of each object (see Slimmer). Objects whose status is
	// written are always kept whole.
	Fields [][]string
	// Status, when set, writes the gang's state into the object's status
	// (pkg/podgroups); nil: the status is never written.
	Status podgroups.StatusRule
	// Runtime, when set, reads what an object of Kind, as the owner of
	// pods, says about when they end (only batch Jobs say, see
	// JobRuntimeBound); Fields must keep what it reads. It must never
	// panic.
	Runtime func(u *unstructured.Unstructured) *framework.RuntimeBound
}

// Resource is a resource of a dialect.
type Resource struct {
	GVR schema.GroupVersionResource
	// FirstServedOnly: of the resources of a dialect so marked, only the
	// first the API server serves is watched.
	FirstServedOnly bool
}

// Table is the list of gang dialects. The order of its entries is the
// order of precedence of the groups a pod names explicitly, and the order
// its resources are watched in; gangs inferred from owners are tried in
// the order of framework.OwnerKinds.Kinds. A Table is a framework.
// GroupMatcher. It is not changed once built, so it is safe for
// concurrent use.
type Table []Dialect

var _ framework.GroupMatcher = Table(nil)

// Builtin returns the table of the dialects the scheduler reads (see
// builtin.go and docs/scheduling.md, "Gang dialects"). The slice is the
// caller's: a test or an embedder may add an entry (see With).
func Builtin() Table { return slices.Clone(builtin) }

// With returns a copy of t with d added last.
func (t Table) With(d Dialect) Table { return append(slices.Clone(t), d) }

// Validate reports the first problem of t: a kind or a resource listed
// twice, a dialect without a way to match pods, without a policy, or
// inferred from a kind framework.OwnerKinds does not know. A composite
// dialect needs neither Match nor Infer.
func (t Table) Validate() error {
	kinds := map[framework.GroupKind]bool{}
	gvrs := map[schema.GroupVersionResource]framework.GroupKind{}
	for i, d := range t {
		at := fmt.Sprintf("dialect %d (%s)", i, d.Kind)
		switch {
		case d.Kind == "":
			return fmt.Errorf("dialect %d has no kind", i)
		case kinds[d.Kind]:
			return fmt.Errorf("%s: the kind is listed twice", at)
		case d.Match == nil && d.Infer == nil && !d.Composite:
			return fmt.Errorf("%s: neither Match nor Infer is set, so no pod is in its gangs", at)
		case d.Policy == nil:
			return fmt.Errorf("%s: no Policy", at)
		case len(d.Resources) == 0:
			return fmt.Errorf("%s: no Resources", at)
		case d.Infer != nil && !framework.IsOwnerKind(d.Kind):
			return fmt.Errorf("%s: Infer is set but the kind is not one framework.OwnerKinds knows", at)
		case d.Infer != nil && d.OwnerName == "":
			return fmt.Errorf("%s: Infer is set but OwnerName is empty", at)
		}
		kinds[d.Kind] = true
		for _, r := range d.Resources {
			if k, dup := gvrs[r.GVR]; dup {
				return fmt.Errorf("%s: resource %s is already %s's", at, r.GVR, k)
			}
			gvrs[r.GVR] = d.Kind
		}
	}
	return nil
}

// Dialect returns the entry of kind.
func (t Table) Dialect(kind framework.GroupKind) (Dialect, bool) {
	for _, d := range t {
		if d.Kind == kind {
			return d, true
		}
	}
	return Dialect{}, false
}

// Explicit implements framework.GroupMatcher: every group pod names
// explicitly, by the dialects in table order.
func (t Table) Explicit(pod *v1.Pod) []framework.GroupRef {
	var refs []framework.GroupRef
	for _, d := range t {
		if d.Match != nil {
			refs = append(refs, d.Match(pod)...)
		}
	}
	return refs
}

// Inferred implements framework.GroupMatcher: the gang pod's owner
// defines, of the first of the kinds in owners (in their order) whose
// dialect infers one.
func (t Table) Inferred(pod *v1.Pod, owners framework.OwnerKinds) (framework.GroupRef, bool) {
	if owners == 0 || pod == nil {
		return framework.GroupRef{}, false
	}
	for kind := range owners.All() {
		for i := range t {
			if d := &t[i]; d.Kind == kind {
				if d.Infer != nil {
					if ref, ok := d.Infer(pod); ok {
						return ref, true
					}
				}
				break
			}
		}
	}
	return framework.GroupRef{}, false
}

// ExplicitKinds implements framework.GroupMatcher: the kinds of the
// dialects pods name explicitly, in table order.
func (t Table) ExplicitKinds() []framework.GroupKind {
	var out []framework.GroupKind
	for _, d := range t {
		if d.Match != nil {
			out = append(out, d.Kind)
		}
	}
	return out
}

// Watch is a resource to watch and how to read its objects.
type Watch struct {
	GVR  schema.GroupVersionResource
	Kind framework.GroupKind
	// FirstServedOnly is Resource.FirstServedOnly.
	FirstServedOnly bool
	// Transform, when set, keeps of each object only what Policy reads.
	Transform toolscache.TransformFunc
	// Policy reads an object's policy; nil: the object defines no gang.
	Policy func(u *unstructured.Unstructured) *framework.GroupPolicy
	// Runtime is Dialect.Runtime: nil for kinds whose objects bound no
	// runtime.
	Runtime func(u *unstructured.Unstructured) *framework.RuntimeBound
}

// Watches returns the resources to watch: with explicit on, those of
// the dialects pods name explicitly and of the composites; and those of the kinds in owners.
// The order is the table's.
func (t Table) Watches(explicit bool, owners framework.OwnerKinds) []Watch {
	var out []Watch
	for _, d := range t {
		inferred := d.Infer != nil && owners.Has(d.Kind)
		if !inferred && (!explicit || (d.Match == nil && !d.Composite)) {
			continue
		}
		var transform toolscache.TransformFunc
		if d.Fields != nil && d.Status == nil {
			transform = Slimmer(d.Fields...)
		}
		policy := d.Policy
		read := func(u *unstructured.Unstructured) *framework.GroupPolicy { return policy(u, inferred) }
		for _, r := range d.Resources {
			out = append(out, Watch{GVR: r.GVR, Kind: d.Kind, FirstServedOnly: r.FirstServedOnly, Transform: transform, Policy: read, Runtime: d.Runtime})
		}
	}
	return out
}

// StatusRules returns the status rules of the dialects whose status is
// written, for the writer of pkg/podgroups.
func (t Table) StatusRules() podgroups.Rules {
	rules := podgroups.Rules{}
	for _, d := range t {
		if d.Status != nil {
			rules[d.Kind] = d.Status
		}
	}
	return rules
}

// OwnerKind returns the kind gangs are inferred from whose OwnerName is
// name.
func (t Table) OwnerKind(name string) (framework.GroupKind, bool) {
	for _, d := range t {
		if d.Infer != nil && d.OwnerName == name {
			return d.Kind, true
		}
	}
	return "", false
}

// OwnerNames lists the OwnerNames of t, sorted, for messages.
func (t Table) OwnerNames() string {
	var names []string
	for _, d := range t {
		if d.Infer != nil {
			names = append(names, d.OwnerName)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// OwnerKinds returns the owner kinds of t that gangs are inferred from
// by default (all of them) less those enabled maps to false. Keys are
// OwnerNames; an unknown one is an error naming it.
func (t Table) OwnerKinds(enabled map[string]bool) (framework.OwnerKinds, error) {
	var kinds framework.OwnerKinds
	for _, d := range t {
		if d.Infer != nil {
			kinds = kinds.With(d.Kind)
		}
	}
	names := make([]string, 0, len(enabled))
	for n := range enabled {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		kind, ok := t.OwnerKind(n)
		if !ok {
			return 0, fmt.Errorf("ownerGangs: unknown kind %q (known: %s)", n, t.OwnerNames())
		}
		if !enabled[n] {
			kinds = kinds.Without(kind)
		}
	}
	return kinds, nil
}
