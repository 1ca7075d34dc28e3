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

// Package validation checks a configuration (the internal version of the
// configuration file API) and returns every problem with its field path,
// e.g. "profiles[0].plugins.score.enabled[1].weight". pkg/config adds
// the line of the file each path points to.
package validation

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// Bounds of the scheduler-wide settings.
const (
	// MaxParallelism bounds parallelism: more goroutines than this only
	// contend.
	MaxParallelism = 1024
	// MaxBackoffSeconds bounds the backoffs at a day: longer ones are a
	// mistake, and seconds beyond it would overflow a time.Duration long
	// before they made sense.
	MaxBackoffSeconds = 24 * 60 * 60
)

// AllPlugins is the plugin name that, disabled, stands for every default
// plugin of an extension point.
const AllPlugins = "*"

// ValidateSchedulerConfiguration returns every problem of cfg, defaulted.
func ValidateSchedulerConfiguration(cfg *config.SchedulerConfiguration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateTuning(cfg)...)

	handlers := field.NewPath("eventHandlers")
	seen := sets.New[string]()
	for i, h := range cfg.EventHandlers {
		errs = append(errs, validateName(handlers.Index(i).Child("name"), h.Name, seen, "the name of a registered event handler", nil)...)
		errs = append(errs, ValidateHandlerArgs(handlers.Index(i).Child("args"), h.Args)...)
	}

	informers := field.NewPath("customInformers")
	seen = sets.New[string]()
	for i, ci := range cfg.CustomInformers {
		p := informers.Index(i)
		errs = append(errs, validateName(p.Child("name"), ci.Name, seen, "a DNS-1123 label naming the informer", validation.IsDNS1123Label)...)
		if ci.Resource == "" {
			errs = append(errs, field.Required(p.Child("resource"), "what the informer's objects are, e.g. Node"))
		}
		if ci.SourceType == "" {
			errs = append(errs, field.Required(p.Child("source"), "a mapping with exactly one key, the source type (e.g. http)"))
		} else {
			errs = append(errs, ValidateSourceArgs(p.Child("source", ci.SourceType), ci.SourceArgs)...)
		}
		if ci.ResyncPeriod.Duration < 0 {
			errs = append(errs, field.Invalid(p.Child("resyncPeriod"), ci.ResyncPeriod.Duration.String(), "must not be negative"))
		}
	}

	profiles := field.NewPath("profiles")
	seen = sets.New[string]()
	for i := range cfg.Profiles {
		errs = append(errs, validateProfile(profiles.Index(i), &cfg.Profiles[i], seen)...)
	}
	return errs
}

func validateTuning(cfg *config.SchedulerConfiguration) field.ErrorList {
	var errs field.ErrorList
	if p := cfg.Parallelism; p < 1 || p > MaxParallelism {
		errs = append(errs, field.Invalid(field.NewPath("parallelism"), p, "must be between 1 and 1024"))
	}
	initial, maxB := cfg.PodInitialBackoffSeconds, cfg.PodMaxBackoffSeconds
	inRange := true
	if initial < 1 || initial > MaxBackoffSeconds {
		errs = append(errs, field.Invalid(field.NewPath("podInitialBackoffSeconds"), initial, "must be between 1 and 86400"))
		inRange = false
	}
	if maxB < 1 || maxB > MaxBackoffSeconds {
		errs = append(errs, field.Invalid(field.NewPath("podMaxBackoffSeconds"), maxB, "must be between 1 and 86400"))
		inRange = false
	}
	if inRange && maxB < initial {
		errs = append(errs, field.Invalid(field.NewPath("podMaxBackoffSeconds"), maxB,
			"must not be below podInitialBackoffSeconds (the default of the one left out is 1 for the initial backoff and 10 for the maximum)"))
	}
	errs = append(errs, validatePercentage(field.NewPath("percentageOfNodesToScore"), cfg.PercentageOfNodesToScore)...)
	if o := cfg.TenantQueueOrder; o != "" && !orderPolicyName.MatchString(o) {
		// Whether a policy of that name is registered is the command's to
		// say: the registry is its (pkg/tenancy OrderPolicies).
		errs = append(errs, field.Invalid(field.NewPath("tenantQueueOrder"), o, "must be the name of a tenant queue order policy, e.g. FairShare"))
	}
	return errs
}

// orderPolicyName is the form of a tenant queue order policy's name.
var orderPolicyName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,62}$`)

// validatePercentage checks a percentageOfNodesToScore: 0 to 100.
func validatePercentage(p *field.Path, pct *int32) field.ErrorList {
	if pct != nil && (*pct < 0 || *pct > 100) {
		return field.ErrorList{field.Invalid(p, *pct, "must be between 0 and 100 (0: a share adapted to the cluster size, as in kube-scheduler)")}
	}
	return nil
}

func validateProfile(p *field.Path, prof *config.Profile, seen sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateName(p.Child("schedulerName"), prof.SchedulerName, seen,
		"the spec.schedulerName of the pods this profile schedules", validation.IsDNS1123Subdomain)...)
	errs = append(errs, validatePercentage(p.Child("percentageOfNodesToScore"), prof.PercentageOfNodesToScore)...)
	if pl := prof.Plugins; pl != nil {
		plugins := p.Child("plugins")
		for _, point := range []struct {
			key string
			set *config.PluginSet
		}{
			{"queueSort", pl.QueueSort}, {"preFilter", pl.PreFilter}, {"filter", pl.Filter}, {"preScore", pl.PreScore},
			{"score", pl.Score}, {"reserve", pl.Reserve}, {"permit", pl.Permit}, {"postFilter", pl.PostFilter}, {"bind", pl.Bind},
			{"multiPoint", pl.MultiPoint},
		} {
			if point.set != nil {
				// A multiPoint weight applies where the plugin scores.
				weighted := point.key == "score" || point.key == "multiPoint"
				errs = append(errs, validatePluginSet(plugins.Child(point.key), weighted, point.set)...)
			}
		}
	}
	configs := p.Child("pluginConfig")
	names := sets.New[string]()
	for i, pc := range prof.PluginConfig {
		errs = append(errs, validateName(configs.Index(i).Child("name"), pc.Name, names, "the plugin these args are for", nil)...)
		errs = append(errs, ValidatePluginArgs(configs.Index(i).Child("args"), pc.Args)...)
	}
	return errs
}

func validatePluginSet(p *field.Path, score bool, set *config.PluginSet) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, pl := range set.Enabled {
		ep := p.Child("enabled").Index(i)
		switch {
		case pl.Name == "":
			errs = append(errs, field.Required(ep.Child("name"), "a plugin name"))
		case pl.Name == AllPlugins:
			errs = append(errs, field.Invalid(ep.Child("name"), pl.Name, "can only be disabled (it stands for every default plugin)"))
		case seen.Has(pl.Name):
			errs = append(errs, field.Duplicate(ep.Child("name"), pl.Name))
		}
		seen.Insert(pl.Name)
		switch {
		case pl.Weight != 0 && !score:
			errs = append(errs, field.Forbidden(ep.Child("weight"), "a weight is only allowed under score"))
		case pl.Weight < 0:
			errs = append(errs, field.Invalid(ep.Child("weight"), pl.Weight, "must be at least 1"))
		}
	}
	seen = sets.New[string]()
	for i, pl := range set.Disabled {
		dp := p.Child("disabled").Index(i)
		switch {
		case pl.Name == "":
			errs = append(errs, field.Required(dp.Child("name"), "a plugin name, or \"*\" for every default plugin"))
		case seen.Has(pl.Name):
			errs = append(errs, field.Duplicate(dp.Child("name"), pl.Name))
		}
		seen.Insert(pl.Name)
		if pl.Weight != 0 {
			errs = append(errs, field.Forbidden(dp.Child("weight"), "a disabled plugin has no weight"))
		}
	}
	return errs
}

// validateName checks the name of an entry of a list whose names are
// required and unique (seen holds those of the entries before it), and,
// with format, well formed.
func validateName(p *field.Path, name string, seen sets.Set[string], what string, format func(string) []string) field.ErrorList {
	var errs field.ErrorList
	switch {
	case name == "":
		errs = append(errs, field.Required(p, what))
	case seen.Has(name):
		errs = append(errs, field.Duplicate(p, name))
	case format != nil:
		for _, msg := range format(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
	}
	seen.Insert(name)
	return errs
}
