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

package metricstest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	k8smetrics "k8s.io/component-base/metrics"
)

// RecordingRegistry is a component-base registry that remembers the
// collectors registered with it, so that a test can list every metric a
// constructor registers, including vectors without children yet (which
// gather nothing).
type RecordingRegistry struct {
	k8smetrics.KubeRegistry
	collectors []prometheus.Collector
}

// NewRecordingRegistry returns an empty RecordingRegistry over a fresh
// component-base registry.
func NewRecordingRegistry() *RecordingRegistry {
	return &RecordingRegistry{KubeRegistry: k8smetrics.NewKubeRegistry()}
}

// Collectors returns the collectors registered so far, in order.
func (r *RecordingRegistry) Collectors() []prometheus.Collector { return r.collectors }

// Register registers c and records it.
func (r *RecordingRegistry) Register(c k8smetrics.Registerable) error {
	if err := r.KubeRegistry.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

// MustRegister registers and records each of cs, panicking on an error.
func (r *RecordingRegistry) MustRegister(cs ...k8smetrics.Registerable) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// CustomRegister registers the custom collector c and records it.
func (r *RecordingRegistry) CustomRegister(c k8smetrics.StableCollector) error {
	if err := r.KubeRegistry.CustomRegister(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

// CustomMustRegister registers and records each of cs, panicking on an
// error.
func (r *RecordingRegistry) CustomMustRegister(cs ...k8smetrics.StableCollector) {
	for _, c := range cs {
		if err := r.CustomRegister(c); err != nil {
			panic(err)
		}
	}
}

// Desc is what a metric description says.
type Desc struct {
	Name, Help string
	Labels     []string
}

// descRE takes the fully-qualified name, the HELP text and the variable
// labels out of a Desc's String(), which is the only way client_golang
// gives them out. Other quoted fields (unit) may come between.
var descRE = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*")(?:, [a-zA-Z]+: "(?:[^"\\]|\\.)*")*, constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

// Describe returns what c describes, every description read to the end
// (so that Describe returns), or the first description it cannot read.
func Describe(c prometheus.Collector) ([]Desc, error) {
	descs := make(chan *prometheus.Desc)
	go func() {
		c.Describe(descs)
		close(descs)
	}()
	var out []Desc
	var firstErr error
	for d := range descs {
		if firstErr != nil {
			continue
		}
		desc, err := readDesc(d)
		if err != nil {
			firstErr = err
			continue
		}
		out = append(out, desc)
	}
	return out, firstErr
}

func readDesc(d *prometheus.Desc) (Desc, error) {
	if err := d.Err(); err != nil {
		return Desc{}, fmt.Errorf("invalid metric description %s: %w", d, err)
	}
	m := descRE.FindStringSubmatch(d.String())
	if m == nil {
		return Desc{}, fmt.Errorf("cannot read the metric description %s (has client_golang changed Desc.String?)", d)
	}
	var out Desc
	var err error
	if out.Name, err = strconv.Unquote(m[1]); err != nil {
		return Desc{}, fmt.Errorf("metric description %s: name %s: %w", d, m[1], err)
	}
	if out.Help, err = strconv.Unquote(m[2]); err != nil {
		return Desc{}, fmt.Errorf("metric description %s: help %s: %w", d, m[2], err)
	}
	if m[3] != "" {
		out.Labels = strings.Split(m[3], ",")
	}
	return out, nil
}
