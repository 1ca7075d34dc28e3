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
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
)

// The settings of the built-in custom informer sources are checked here
// as far as the settings alone tell: what needs the machine (a file that
// exists, a certificate that loads) is the source's to check when it is
// built. Details read after their field, as the plugin args' do.

// ValidateSourceArgs returns every problem of a source's typed settings,
// defaulted, with field paths under p. Settings the API has no type for
// (RawArgs, nil) are the source's to check.
func ValidateSourceArgs(p *field.Path, args runtime.Object) field.ErrorList {
	switch a := args.(type) {
	case *config.HTTPSourceArgs:
		return ValidateHTTPSourceArgs(p, a)
	case *config.FileSourceArgs:
		return ValidateFileSourceArgs(p, a)
	}
	return nil
}

// ValidateHTTPSourceArgs checks the http source's settings.
func ValidateHTTPSourceArgs(p *field.Path, a *config.HTTPSourceArgs) field.ErrorList {
	var errs field.ErrorList
	up := p.Child("url")
	var u *url.URL
	if a.URL == "" {
		errs = append(errs, field.Required(up, "required"))
	} else if parsed, err := url.Parse(a.URL); err != nil {
		errs = append(errs, field.Invalid(up, a.URL, err.Error()))
	} else {
		u = parsed
		switch {
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, field.Invalid(up, a.URL, fmt.Sprintf("must be http(s), not %q", a.URL)))
		case u.Host == "":
			errs = append(errs, field.Invalid(up, a.URL, fmt.Sprintf("%q has no host", a.URL)))
		case u.RawQuery != "" || u.Fragment != "":
			errs = append(errs, field.Invalid(up, a.URL, fmt.Sprintf("%q must not have a query or fragment", a.URL)))
		}
	}
	if a.Path != "" && !strings.HasPrefix(a.Path, "/") {
		errs = append(errs, field.Invalid(p.Child("path"), a.Path, fmt.Sprintf("%q must start with /", a.Path)))
	}
	if a.Timeout.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("timeout"), a.Timeout.Duration.String(), "must not be negative"))
	}
	errs = append(errs, validateRate(p, a.QPS, a.Burst)...)
	if a.MaxObjectBytes < 0 {
		errs = append(errs, field.Invalid(p.Child("maxObjectBytes"), a.MaxObjectBytes, "must not be negative"))
	}
	if a.MaxListBytes < 0 {
		errs = append(errs, field.Invalid(p.Child("maxListBytes"), a.MaxListBytes, "must not be negative"))
	}
	if u != nil && u.Scheme == "http" && (a.CAFile != "" || a.CertFile != "" || a.KeyFile != "" || a.InsecureSkipTLSVerify) {
		errs = append(errs, field.Forbidden(up, "caFile, certFile, keyFile and insecureSkipTLSVerify need an https url"))
	}
	if a.CAFile != "" && a.InsecureSkipTLSVerify {
		errs = append(errs, field.Forbidden(p.Child("insecureSkipTLSVerify"), "cannot be used with caFile"))
	}
	switch {
	case a.CertFile != "" && a.KeyFile == "":
		errs = append(errs, field.Required(p.Child("keyFile"), "required with certFile"))
	case a.CertFile == "" && a.KeyFile != "":
		errs = append(errs, field.Required(p.Child("certFile"), "required with keyFile"))
	}
	return errs
}

// validateRate checks a client's qps and burst: neither negative, and a
// burst with a qps.
func validateRate(p *field.Path, qps float32, burst int32) field.ErrorList {
	var errs field.ErrorList
	if qps < 0 {
		errs = append(errs, field.Invalid(p.Child("qps"), qps, "must not be negative"))
	}
	if burst < 0 {
		errs = append(errs, field.Invalid(p.Child("burst"), burst, "must not be negative"))
	}
	if qps > 0 && burst == 0 {
		errs = append(errs, field.Required(p.Child("burst"), "required with qps"))
	}
	return errs
}

// ValidateFileSourceArgs checks the file source's settings.
func ValidateFileSourceArgs(p *field.Path, a *config.FileSourceArgs) field.ErrorList {
	var errs field.ErrorList
	if a.Directory == "" {
		errs = append(errs, field.Required(p.Child("directory"), "required"))
	}
	switch d := a.PollInterval.Duration; {
	case d < 0:
		errs = append(errs, field.Invalid(p.Child("pollInterval"), d.String(), fmt.Sprintf("must not be negative, got %s", d)))
	case d < config.MinFileSourcePollInterval:
		errs = append(errs, field.Invalid(p.Child("pollInterval"), d.String(),
			fmt.Sprintf("must be at least %s (or unset for %s), got %s", config.MinFileSourcePollInterval, config.DefaultFileSourcePollInterval, d)))
	}
	return errs
}
