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

package app

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"
	k8smetrics "k8s.io/component-base/metrics"
	metricsv1 "k8s.io/component-base/metrics/api/v1"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
)

// The metric flags, as component-base's Options.AddFlags names them.
const (
	flagShowHiddenMetrics   = "--show-hidden-metrics-for-version"
	flagDisabledMetrics     = "--disabled-metrics"
	flagAllowMetricLabels   = "--allow-metric-labels"
	flagAllowLabelsManifest = "--allow-metric-labels-manifest"
)

// validateMetricsOptions checks the metric flags with component-base's
// own validation, one flag at a time so that each error names its flag
// (component-base names a field of its configuration file instead). It
// returns every problem found, joined on one line.
func validateMetricsOptions(o *k8smetrics.Options) error {
	if o == nil {
		return nil
	}
	var errs []error
	if err := checkPreviousMinorExists(o.ShowHiddenMetricsForVersion, version.Get().GitVersion); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, validateMetricsFlag(flagShowHiddenMetrics, metricsv1.MetricsConfiguration{ShowHiddenMetricsForVersion: o.ShowHiddenMetricsForVersion})...)
	}
	errs = append(errs, validateMetricsFlag(flagDisabledMetrics, metricsv1.MetricsConfiguration{DisabledMetrics: o.DisabledMetrics})...)
	errs = append(errs, validateMetricsFlag(flagAllowMetricLabels, metricsv1.MetricsConfiguration{AllowListMapping: o.AllowListMapping})...)
	errs = append(errs, validateMetricsFlag(flagAllowLabelsManifest, metricsv1.MetricsConfiguration{AllowListMappingManifest: o.AllowListMappingManifest})...)
	if o.AllowListMapping != nil && o.AllowListMappingManifest != "" {
		errs = append(errs, fmt.Errorf("%s and %s: give one or the other, not both", flagAllowMetricLabels, flagAllowLabelsManifest))
	}
	return joinOneLine(errs)
}

// validateMetricsFlag validates c, which holds the setting of flag only,
// and rewords each error to name flag and the value given.
func validateMetricsFlag(flag string, c metricsv1.MetricsConfiguration) []error {
	var out []error
	for _, err := range (&k8smetrics.Options{MetricsConfiguration: c}).Validate() {
		var fe *field.Error
		switch {
		case !errors.As(err, &fe):
			out = append(out, fmt.Errorf("%s: %w", flag, err))
		case isString(fe.BadValue):
			out = append(out, fmt.Errorf("%s %s: %s", flag, quoteShort(fe.BadValue.(string)), fe.Detail))
		default:
			out = append(out, fmt.Errorf("%s: %s", flag, fe.Detail))
		}
	}
	return out
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// buildMinorRE takes the major and minor version out of a build's
// version, as component-base reads it (v1.2.3, v0.0.0-dev+abc).
var buildMinorRE = regexp.MustCompile(`^v(\d+)\.(\d+)\.\d+`)

// checkPreviousMinorExists rejects --show-hidden-metrics-for-version when
// the minor version of build (this build's version, which component-base
// compares the flag with) is 0: component-base accepts only the previous
// minor version, and there is none (it would compute one below zero and
// ask for a nonsensical value). A development build is v0.0.0.
func checkPreviousMinorExists(showHidden, build string) error {
	if showHidden == "" {
		return nil
	}
	m := buildMinorRE.FindStringSubmatch(build)
	if m == nil {
		return fmt.Errorf("%s %s: the version of this build, %s, has no minor version to compare with", flagShowHiddenMetrics, quoteShort(showHidden), quoteShort(build))
	}
	if minor, err := strconv.ParseUint(m[2], 10, 64); err == nil && minor == 0 {
		return fmt.Errorf("%s %s: this build, %s, has no previous minor version whose hidden metrics could be shown", flagShowHiddenMetrics, quoteShort(showHidden), build)
	}
	return nil
}

// applyMetricsOptions applies the metric flags to component-base's
// process-wide settings, which it reads when a metric is registered: call
// it before the metrics are created. It does what Options.Apply does
// without Apply's error logs for an allow-list that was not given (Apply
// reads the manifest whenever --allow-metric-labels is absent, and logs
// an error for an empty path: at every start without either flag).
func applyMetricsOptions(o *k8smetrics.Options) {
	if o == nil {
		return
	}
	if o.ShowHiddenMetricsForVersion != "" {
		k8smetrics.SetShowHidden()
		klog.InfoS("Showing the metrics hidden since the previous minor version", "version", o.ShowHiddenMetricsForVersion)
	}
	if len(o.DisabledMetrics) > 0 {
		k8smetrics.SetDisabledMetrics(o.DisabledMetrics)
		klog.InfoS("Metrics disabled", "metrics", o.DisabledMetrics)
	}
	switch {
	case o.AllowListMapping != nil:
		k8smetrics.SetLabelAllowList(o.AllowListMapping)
	case o.AllowListMappingManifest != "":
		k8smetrics.SetLabelAllowListFromManifest(o.AllowListMappingManifest)
	}
}
