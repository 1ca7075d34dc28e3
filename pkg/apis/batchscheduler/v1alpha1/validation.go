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

package v1alpha1

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxResources is the most resource names a Grant's or an
// ExternalWorkload's spec.resources may hold.
//
// The CRDs enforce the same rules as this file, and this limit exists for
// them: the API server refuses a CEL rule whose estimated cost is too high,
// and a rule that visits every entry of an unbounded map is. With the map
// bounded (the +kubebuilder:validation:MaxProperties markers in types.go,
// which must equal this constant), the CRDs check signs with cheap string
// comparisons: a quantity as Go encodes it is negative exactly when it
// starts with "-" (the CEL quantity library would parse every value, at a
// cost the budget does not allow for values without a maximum length).
const MaxResources = 128

// ValidateGrant checks a Grant's spec and status. Each error names the
// field path it is about, e.g. "spec.nodeName".
func ValidateGrant(g *Grant) field.ErrorList {
	if g == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "grant is nil")}
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if g.Spec.Framework == "" {
		errs = append(errs, field.Required(spec.Child("framework"), "the framework the capacity is granted to"))
	}
	errs = append(errs, validateNodeName(g.Spec.NodeName, spec.Child("nodeName"))...)
	errs = append(errs, validateResources(g.Spec.Resources, spec.Child("resources"))...)
	if g.Spec.Issuer == "" {
		errs = append(errs, field.Required(spec.Child("issuer"), "who issued the grant"))
	}
	switch g.Status.Phase {
	case "", GrantActive, GrantRevoked, GrantExpired:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("status", "phase"), g.Status.Phase,
			[]GrantPhase{GrantActive, GrantRevoked, GrantExpired}))
	}
	return errs
}

// ValidateExternalWorkload checks an ExternalWorkload's spec and status.
// Each error names the field path it is about, e.g. "spec.workloadKind".
func ValidateExternalWorkload(w *ExternalWorkload) field.ErrorList {
	if w == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "external workload is nil")}
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	errs = append(errs, validateNodeName(w.Spec.NodeName, spec.Child("nodeName"))...)
	errs = append(errs, validateResources(w.Spec.Resources, spec.Child("resources"))...)
	if w.Spec.WorkloadKind == "" {
		errs = append(errs, field.Required(spec.Child("workloadKind"), "what the workload is, e.g. vm or reservation"))
	}
	switch w.Status.Phase {
	case "", ExternalWorkloadPending, ExternalWorkloadRunning, ExternalWorkloadStopped:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("status", "phase"), w.Status.Phase,
			[]ExternalWorkloadPhase{ExternalWorkloadPending, ExternalWorkloadRunning, ExternalWorkloadStopped}))
	}
	return errs
}

func validateNodeName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "the host the object is about")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func validateResources(rl v1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rl) > MaxResources {
		errs = append(errs, field.TooMany(p, len(rl), MaxResources))
	}
	for name, q := range rl {
		rp := p.Key(string(name))
		if name == "" {
			errs = append(errs, field.Invalid(rp, string(name), "resource name must not be empty"))
			continue
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(rp, q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

// MaxQueueWeight is the largest spec.weight of a Queue.
const MaxQueueWeight = 1000000

// ValidateQueue checks a Queue's name and spec. Each error names the field
// path it is about, e.g. "spec.weight". A queue's parent is only checked
// for form here: whether it exists, and whether the tree has a cycle, is
// known only with every queue at hand.
func ValidateQueue(q *Queue) field.ErrorList {
	if q == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "queue is nil")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(q.Name) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), q.Name, msg))
	}
	spec := field.NewPath("spec")
	if p := q.Spec.Parent; p != "" {
		for _, msg := range validation.IsDNS1123Subdomain(p) {
			errs = append(errs, field.Invalid(spec.Child("parent"), p, msg))
		}
		if p == q.Name {
			errs = append(errs, field.Invalid(spec.Child("parent"), p, "a queue cannot be its own parent"))
		}
	}
	if w := q.Spec.Weight; w < 0 || w > MaxQueueWeight {
		errs = append(errs, field.Invalid(spec.Child("weight"), w, "must be between 1 and 1000000 (0 means the default, 1)"))
	}
	errs = append(errs, validateResources(q.Spec.Guaranteed, spec.Child("guaranteed"))...)
	errs = append(errs, validateResources(q.Spec.Limit, spec.Child("limit"))...)
	for name, g := range q.Spec.Guaranteed {
		if l, ok := q.Spec.Limit[name]; ok && g.Cmp(l) > 0 {
			errs = append(errs, field.Invalid(spec.Child("guaranteed").Key(string(name)), g.String(),
				"must not exceed spec.limit["+string(name)+"] ("+l.String()+")"))
		}
	}
	return errs
}

// ValidateNodeLedger checks a NodeLedger: its name is a node name, its
// placers are named once each, and its entries are complete, recorded by
// a named placer, within the size limits, never negative, and each
// placement (kind, namespace, name) is recorded once. Each error names the
// field path it is about, e.g. "spec.entries[3].resources[cpu]".
func ValidateNodeLedger(l *NodeLedger) field.ErrorList {
	if l == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "node ledger is nil")}
	}
	errs := validateNodeName(l.Name, field.NewPath("metadata", "name"))
	spec := field.NewPath("spec")
	if n := len(l.Spec.Placers); n > MaxLedgerPlacers {
		errs = append(errs, field.TooMany(spec.Child("placers"), n, MaxLedgerPlacers))
	}
	placers := map[string]bool{}
	for i, p := range l.Spec.Placers {
		pp := spec.Child("placers").Index(i).Child("name")
		switch {
		case p.Name == "":
			errs = append(errs, field.Required(pp, "the placer's name"))
		case placers[p.Name]:
			errs = append(errs, field.Duplicate(pp, p.Name))
		}
		placers[p.Name] = true
	}
	if n := len(l.Spec.Entries); n > MaxLedgerEntries {
		errs = append(errs, field.TooMany(spec.Child("entries"), n, MaxLedgerEntries))
	}
	type key struct{ kind, ns, name string }
	seen := map[key]bool{}
	for i, e := range l.Spec.Entries {
		ep := spec.Child("entries").Index(i)
		if e.Placer == "" {
			errs = append(errs, field.Required(ep.Child("placer"), "who made the placement"))
		}
		if e.Kind == "" {
			errs = append(errs, field.Required(ep.Child("kind"), `what was placed: "Pod" or a workload kind`))
		}
		if e.Name == "" {
			errs = append(errs, field.Required(ep.Child("name"), "the placement's name"))
		}
		k := key{e.Kind, e.Namespace, e.Name}
		if seen[k] {
			errs = append(errs, field.Duplicate(ep, e.Kind+" "+e.Namespace+"/"+e.Name))
		}
		seen[k] = true
		if len(e.Resources) > MaxLedgerEntryResources {
			errs = append(errs, field.TooMany(ep.Child("resources"), len(e.Resources), MaxLedgerEntryResources))
		}
		errs = append(errs, validateResources(e.Resources, ep.Child("resources"))...)
	}
	return errs
}
