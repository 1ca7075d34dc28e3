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

package metrics

import (
	"fmt"
	"sync/atomic"

	"github.com/blang/semver/v4"
	k8smetrics "k8s.io/component-base/metrics"
)

// Register registers each metric with reg. A nil reg leaves them
// unregistered but live: they are created as a registry would create
// them, so that they count and can be read (what most tests want), and
// nothing exports them. component-base's own metrics are no-ops until
// created, so a nil reg must not simply skip registration.
//
// A metric that --disabled-metrics names is not created when registered:
// it stays a no-op, and so do the children taken from it.
func Register(reg k8smetrics.KubeRegistry, ms ...k8smetrics.Registerable) error {
	for _, m := range ms {
		if reg == nil {
			m.Create(nil)
			continue
		}
		if err := reg.Register(m); err != nil {
			return fmt.Errorf("registering metric %s: %w", m.FQName(), err)
		}
	}
	return nil
}

// NamedCollector is a custom collector of one metric, such as the
// types that embed CustomCollector.
type NamedCollector interface {
	k8smetrics.StableCollector
	FQName() string
}

// RegisterCustom registers each custom collector with reg (CustomRegister).
// A nil reg creates them unregistered, as Register does, so that they can
// be collected directly.
func RegisterCustom(reg k8smetrics.KubeRegistry, cs ...NamedCollector) error {
	for _, c := range cs {
		if reg == nil {
			c.Create(nil, c)
			continue
		}
		if err := reg.CustomRegister(c); err != nil {
			return fmt.Errorf("registering metric %s: %w", c.FQName(), err)
		}
	}
	return nil
}

// CustomCollector is the base of this project's collectors that compute
// one metric when scraped, as component-base custom collectors: a type
// embeds it, implements CollectWithStability with NewLazyConstMetric on
// Desc, and is registered with RegisterCustom. Build it with
// NewCustomCollector.
//
// Unlike component-base's plain custom collectors it honours
// --disabled-metrics: a disabled one is not registered at all.
type CustomCollector struct {
	k8smetrics.BaseStableCollector
	// Desc describes the one metric; it carries the stability level that
	// the HELP text shows once the collector is registered.
	Desc      *k8smetrics.Desc
	name      string
	stability k8smetrics.StabilityLevel
}

// NewCustomCollector describes a custom collector's metric.
func NewCustomCollector(fqName, help string, stability k8smetrics.StabilityLevel, labels ...string) CustomCollector {
	return CustomCollector{
		Desc:      k8smetrics.NewDesc(fqName, help, labels, nil, stability, ""),
		name:      fqName,
		stability: stability,
	}
}

// FQName is the metric's fully-qualified name.
func (c *CustomCollector) FQName() string { return c.name }

// DescribeWithStability implements k8smetrics.StableCollector.
func (c *CustomCollector) DescribeWithStability(ch chan<- *k8smetrics.Desc) { ch <- c.Desc }

// Create implements k8smetrics.StableCollector: a registry calls it with
// its version when the collector is registered, and again when
// --show-hidden-metrics-for-version re-registers hidden metrics. It
// refuses (the registry then leaves the collector out) when the metric is
// disabled.
func (c *CustomCollector) Create(version *semver.Version, self k8smetrics.StableCollector) bool {
	if version != nil && isDisabled(c.name, c.stability, version) {
		return false
	}
	return c.BaseStableCollector.Create(version, self)
}

// isDisabled reports whether --disabled-metrics (component-base's
// process-wide list) names name. component-base applies that list when it
// creates its own metrics, and not to custom collectors, and it has no
// accessor for the list; so a throwaway gauge of the same name asks it:
// creating that gauge fails exactly when the name is disabled. When it is
// not, the gauge is counted in registered_metrics_total under the
// collector's stability level, which component-base otherwise leaves out
// for custom collectors.
func isDisabled(name string, stability k8smetrics.StabilityLevel, version *semver.Version) bool {
	probe := k8smetrics.NewGauge(&k8smetrics.GaugeOpts{Name: name, Help: "probe of " + name, StabilityLevel: stability})
	return !probe.Create(version)
}

// ScrapedGauge is a gauge without labels whose value a function computes
// each time the metric is collected. The function is supplied after the
// gauge is created and registered, by the component that can compute it
// (which is built later, from the Metrics); until then the gauge reports
// no sample.
type ScrapedGauge struct {
	CustomCollector
	source atomic.Pointer[func() float64]
}

var _ k8smetrics.StableCollector = &ScrapedGauge{}

func newScrapedGauge(fqName, help string, stability k8smetrics.StabilityLevel) *ScrapedGauge {
	return &ScrapedGauge{CustomCollector: NewCustomCollector(fqName, help, stability)}
}

// SetSource makes f compute the gauge's value from now on, replacing the
// function set before. f runs on every scrape, concurrently with anything
// else, so it must be safe for concurrent use and cheap.
func (g *ScrapedGauge) SetSource(f func() float64) { g.source.Store(&f) }

// CollectWithStability implements k8smetrics.StableCollector.
func (g *ScrapedGauge) CollectWithStability(ch chan<- k8smetrics.Metric) {
	if f := g.source.Load(); f != nil {
		ch <- k8smetrics.NewLazyConstMetric(g.Desc, k8smetrics.GaugeValue, (*f)())
	}
}

// ScrapedGaugeVec is ScrapedGauge with labels: its source returns one
// value per combination of label values (in the order the labels were
// given), each time the metric is collected.
type ScrapedGaugeVec struct {
	CustomCollector
	source atomic.Pointer[func() map[LabelValues]float64]
}

// LabelValues are the values of a ScrapedGaugeVec's labels, in order:
// every ScrapedGaugeVec has exactly two labels.
type LabelValues [2]string

var _ k8smetrics.StableCollector = &ScrapedGaugeVec{}

func newScrapedGaugeVec(fqName, help string, stability k8smetrics.StabilityLevel, label1, label2 string) *ScrapedGaugeVec {
	return &ScrapedGaugeVec{CustomCollector: NewCustomCollector(fqName, help, stability, label1, label2)}
}

// SetSource makes f compute the values from now on; see
// ScrapedGauge.SetSource.
func (g *ScrapedGaugeVec) SetSource(f func() map[LabelValues]float64) { g.source.Store(&f) }

// CollectWithStability implements k8smetrics.StableCollector.
func (g *ScrapedGaugeVec) CollectWithStability(ch chan<- k8smetrics.Metric) {
	f := g.source.Load()
	if f == nil {
		return
	}
	for lv, v := range (*f)() {
		ch <- k8smetrics.NewLazyConstMetric(g.Desc, k8smetrics.GaugeValue, v, lv[0], lv[1])
	}
}
