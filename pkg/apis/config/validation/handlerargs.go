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
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// The args of the built-in event handlers are checked here as far as the
// args alone tell; what needs the handler's state (its table of gang
// dialects, the cache it is given) is the handler's to check when it is
// built. Details read after their field, as the plugin args' do.

// ValidateHandlerArgs returns every problem of an event handler's typed
// args, defaulted, with field paths under p. Args the API has no type for
// (RawArgs, nil) are the handler's to check.
func ValidateHandlerArgs(p *field.Path, args runtime.Object) field.ErrorList {
	switch a := args.(type) {
	case *config.DefaultHandlerArgs:
		return ValidateDefaultHandlerArgs(p, a)
	case *config.TwoLevelHandlerArgs:
		return ValidateTwoLevelHandlerArgs(p, a)
	}
	return nil
}

var (
	// dnsLabelRE and apiVersionRE are the shapes of a dynamic resource's
	// plural (and each label of its group) and version; the default
	// handler parses the names by the same rules.
	dnsLabelRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	apiVersionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
)

// ValidateDefaultHandlerArgs checks the default handler's args.
func ValidateDefaultHandlerArgs(p *field.Path, a *config.DefaultHandlerArgs) field.ErrorList {
	var errs field.ErrorList
	first := map[string]int{}
	for i, name := range a.DynamicResources {
		rp := p.Child("dynamicResources").Index(i)
		if msg := dynamicResourceProblem(name); msg != "" {
			errs = append(errs, field.Invalid(rp, name, msg))
			continue
		}
		if j, dup := first[name]; dup {
			errs = append(errs, field.Duplicate(rp, name))
			errs[len(errs)-1].Detail = fmt.Sprintf("%q is already listed at dynamicResources[%d]", name, j)
			continue
		}
		first[name] = i
	}
	if l := a.ExternalWorkloadNodeLabel; l != "" {
		if msgs := validation.IsQualifiedName(l); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("externalWorkloadNodeLabel"), l,
				fmt.Sprintf("%q is not a valid label key: %s", l, strings.Join(msgs, "; "))))
		}
	}
	for kind := range a.OwnerGangs {
		if !config.IsOwnerGangKind(kind) {
			errs = append(errs, field.NotSupported(p.Child("ownerGangs").Key(kind), kind, config.OwnerGangKinds))
			errs[len(errs)-1].Detail = fmt.Sprintf("unknown kind %q (known: %s)", kind, strings.Join(config.OwnerGangKinds, ", "))
		}
	}
	return errs
}

// dynamicResourceProblem says what is wrong with a dynamic resource's
// name, "" when nothing.
func dynamicResourceProblem(name string) string {
	parts := strings.SplitN(name, ".", 3)
	if len(parts) != 3 {
		return fmt.Sprintf("dynamic resource %q: want <plural>.<version>.<group>, e.g. widgets.v1.example.com", name)
	}
	if !dnsLabelRE.MatchString(parts[0]) {
		return fmt.Sprintf("dynamic resource %q: resource %q must be a lower-case plural name", name, parts[0])
	}
	if !apiVersionRE.MatchString(parts[1]) {
		return fmt.Sprintf("dynamic resource %q: version %q must look like v1, v1beta1 or v2alpha3", name, parts[1])
	}
	for _, label := range strings.Split(parts[2], ".") {
		if !dnsLabelRE.MatchString(label) {
			return fmt.Sprintf("dynamic resource %q: group %q must be a DNS subdomain", name, parts[2])
		}
	}
	return ""
}

// ValidateTwoLevelHandlerArgs checks the two-level handler's args: its
// own and the default handler's, which are in the same mapping.
func ValidateTwoLevelHandlerArgs(p *field.Path, a *config.TwoLevelHandlerArgs) field.ErrorList {
	var errs field.ErrorList
	fp := p.Child("framework")
	if a.Framework == "" {
		errs = append(errs, field.Required(fp, "required (the framework name grants are issued to)"))
	} else if msgs := validation.IsDNS1123Label(a.Framework); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fp, a.Framework, fmt.Sprintf(" %q: %s", a.Framework, msgs[0])))
	}
	return append(errs, ValidateDefaultHandlerArgs(p, &a.DefaultHandlerArgs)...)
}
