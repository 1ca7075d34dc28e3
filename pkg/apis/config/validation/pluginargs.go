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

package validation

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// The details of the plugin args' errors read after their field, as
// "resources[0].weight: must be between 1 and 100, got 101"; pkg/config
// renders them so, after the plugin's name. A detail that starts with a
// space follows its field without a colon, as
// "maxPlacements -2 must be at least 1".

// ValidatePluginArgs returns every problem of a plugin's typed args,
// defaulted, with field paths under p. Args the API has no type for
// (RawArgs, nil) are the plugin's to check.
func ValidatePluginArgs(p *field.Path, args runtime.Object) field.ErrorList {
	switch a := args.(type) {
	case *config.NodeResourcesFitArgs:
		return ValidateNodeResourcesFitArgs(p, a)
	case *config.NodeLedgerArgs:
		return ValidateNodeLedgerArgs(p, a)
	case *config.TopologyAwareArgs:
		return ValidateTopologyAwareArgs(p, a)
	case *config.DefaultPreemptionArgs:
		return ValidateDefaultPreemptionArgs(p, a)
	case *config.CapacityArgs:
		return ValidateCapacityArgs(p, a)
	case *config.ReclaimArgs:
		return ValidateReclaimArgs(p, a)
	case *config.ReservationArgs:
		return ValidateReservationArgs(p, a)
	}
	return nil
}

// ValidateNodeResourcesFitArgs checks NodeResourcesFit's args.
func ValidateNodeResourcesFitArgs(p *field.Path, a *config.NodeResourcesFitArgs) field.ErrorList {
	var errs field.ErrorList
	switch a.ScoringStrategy {
	case config.LeastAllocated, config.MostAllocated:
	default:
		errs = append(errs, field.Invalid(p.Child("scoringStrategy"), a.ScoringStrategy,
			fmt.Sprintf("unknown strategy %q (want %s or %s)", a.ScoringStrategy, config.LeastAllocated, config.MostAllocated)))
	}
	if len(a.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "at least one resource is required"))
	}
	seen := sets.New[v1.ResourceName]()
	for i, r := range a.Resources {
		rp := p.Child("resources").Index(i)
		switch {
		case r.Name == "":
			errs = append(errs, field.Required(rp.Child("name"), "required"))
		case len(validation.IsQualifiedName(string(r.Name))) > 0:
			errs = append(errs, field.Invalid(rp.Child("name"), r.Name,
				fmt.Sprintf("%q is not a valid resource name: %s", r.Name, strings.Join(validation.IsQualifiedName(string(r.Name)), "; "))))
		case seen.Has(r.Name):
			errs = append(errs, field.Duplicate(rp.Child("name"), r.Name))
			errs[len(errs)-1].Detail = fmt.Sprintf("resource %q is listed more than once", r.Name)
		}
		seen.Insert(r.Name)
		if r.Weight < config.MinResourceWeight || r.Weight > config.MaxResourceWeight {
			errs = append(errs, field.Invalid(rp.Child("weight"), r.Weight,
				fmt.Sprintf("must be between %d and %d, got %d", config.MinResourceWeight, config.MaxResourceWeight, r.Weight)))
		}
	}
	return errs
}

// ValidateNodeLedgerArgs checks NodeLedger's args.
func ValidateNodeLedgerArgs(p *field.Path, a *config.NodeLedgerArgs) field.ErrorList {
	var errs field.ErrorList
	sp := p.Child("nodeSelector")
	if a.NodeSelector == "" {
		errs = append(errs, field.Required(sp, "required (the label selector of the nodes shared with a VM manager)"))
	} else if sel, err := labels.Parse(a.NodeSelector); err != nil {
		errs = append(errs, field.Invalid(sp, a.NodeSelector, fmt.Sprintf("%q: %v", a.NodeSelector, err)))
	} else if sel.Empty() {
		errs = append(errs, field.Invalid(sp, a.NodeSelector, fmt.Sprintf("%q selects every node; name the label of the shared ones", a.NodeSelector)))
	}
	if msgs := validation.IsDNS1123Subdomain(a.Placer); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("placer"), a.Placer, fmt.Sprintf("%q: %s", a.Placer, msgs[0])))
	}
	if a.ReleaseInterval.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("releaseInterval"), a.ReleaseInterval.Duration.String(),
			fmt.Sprintf("%s: must not be negative", a.ReleaseInterval.Duration)))
	}
	return errs
}

// ValidateTopologyAwareArgs checks TopologyAware's args.
func ValidateTopologyAwareArgs(p *field.Path, a *config.TopologyAwareArgs) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, l := range a.Levels {
		lp := p.Child("levels").Index(i)
		if msgs := validation.IsQualifiedName(l); len(msgs) > 0 {
			errs = append(errs, field.Invalid(lp, l, fmt.Sprintf(" %q is not a node label key: %s", l, msgs[0])))
		} else if seen.Has(l) {
			errs = append(errs, field.Duplicate(lp, l))
			errs[len(errs)-1].Detail = fmt.Sprintf(" %q is listed twice", l)
		}
		seen.Insert(l)
	}
	if a.MaxPlacements < 1 {
		errs = append(errs, field.Invalid(p.Child("maxPlacements"), a.MaxPlacements, fmt.Sprintf(" %d must be at least 1", a.MaxPlacements)))
	}
	if a.MaxNarrowerPlacements < -1 {
		errs = append(errs, field.Invalid(p.Child("maxNarrowerPlacements"), a.MaxNarrowerPlacements,
			fmt.Sprintf(" %d must be -1 (none) or more", a.MaxNarrowerPlacements)))
	}
	return errs
}

// ValidateDefaultPreemptionArgs checks DefaultPreemption's args, as
// kube-scheduler does.
func ValidateDefaultPreemptionArgs(p *field.Path, a *config.DefaultPreemptionArgs) field.ErrorList {
	var errs field.ErrorList
	pct, abs := a.MinCandidateNodesPercentage, a.MinCandidateNodesAbsolute
	if pct < 0 || pct > 100 {
		errs = append(errs, field.Invalid(p.Child("minCandidateNodesPercentage"), pct, fmt.Sprintf("%d is not between 0 and 100", pct)))
	}
	if abs < 0 {
		errs = append(errs, field.Invalid(p.Child("minCandidateNodesAbsolute"), abs, fmt.Sprintf("%d is negative", abs)))
	}
	if pct == 0 && abs == 0 {
		errs = append(errs, field.Invalid(p.Child("minCandidateNodesPercentage"), pct,
			" and minCandidateNodesAbsolute cannot both be 0"))
	}
	return errs
}

// ValidateCapacityArgs checks Capacity's args.
func ValidateCapacityArgs(p *field.Path, a *config.CapacityArgs) field.ErrorList {
	if d, err := time.ParseDuration(a.StarvationAfter); err != nil || d < 0 {
		return field.ErrorList{field.Invalid(p.Child("starvationAfter"), a.StarvationAfter,
			fmt.Sprintf("%q is not a duration of 0 or more, such as 5m", a.StarvationAfter))}
	}
	return nil
}

// ValidateReclaimArgs checks Reclaim's args.
func ValidateReclaimArgs(p *field.Path, a *config.ReclaimArgs) field.ErrorList {
	switch a.Below {
	case config.ReclaimBelowFairShare, config.ReclaimBelowGuarantee:
		return nil
	}
	return field.ErrorList{field.Invalid(p.Child("below"), a.Below,
		fmt.Sprintf("%q is not one of %s, %s", a.Below, config.ReclaimBelowFairShare, config.ReclaimBelowGuarantee))}
}

// ValidateReservationArgs checks Reservation's args.
func ValidateReservationArgs(p *field.Path, a *config.ReservationArgs) field.ErrorList {
	var errs field.ErrorList
	if a.MaxReservations < 0 {
		errs = append(errs, field.Invalid(p.Child("maxReservations"), a.MaxReservations, "must be 0 (off) or more"))
	}
	for _, d := range []struct {
		name, value string
		positive    bool
	}{{"reclaimAfter", a.ReclaimAfter, false}, {"waitWithoutEstimate", a.WaitWithoutEstimate, false}, {"maxHold", a.MaxHold, true}, {"overrunGrace", a.OverrunGrace, false}} {
		v, err := time.ParseDuration(d.value)
		switch {
		case err != nil || v < 0:
			errs = append(errs, field.Invalid(p.Child(d.name), d.value, fmt.Sprintf("%q is not a duration of 0 or more, such as 2m", d.value)))
		case d.positive && v == 0:
			errs = append(errs, field.Invalid(p.Child(d.name), d.value, "must be more than 0"))
		}
	}
	return errs
}
