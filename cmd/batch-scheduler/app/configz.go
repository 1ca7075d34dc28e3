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
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
)

// ConfigzPath serves the effective configuration, behind the secure
// port's authorization like /metrics.
const ConfigzPath = "/configz"

// effectiveConfig is what /configz shows: the settings from the command
// line, and the configuration file as the scheduler resolved it (every
// profile's plugins after the file's changes to the default profile).
// Plugin and handler args are shown as the file gave them; a plugin
// without args in the file runs with its own defaults.
type effectiveConfig struct {
	SchedulerNames  []string          `json:"schedulerNames"`
	NodeSelector    string            `json:"nodeSelector,omitempty"`
	EventHandler    string            `json:"eventHandler"`
	ConfigPath      string            `json:"configPath,omitempty"`
	MaxEventDelay   string            `json:"maxEventDelay"`
	BindConcurrency int               `json:"bindConcurrency"`
	KubeAPIQPS      float32           `json:"kubeAPIQPS"`
	KubeAPIBurst    int               `json:"kubeAPIBurst"`
	LeaderElection  leaderElectionOut `json:"leaderElection"`
	// Parallelism and the backoffs as in effect (defaults filled in).
	Parallelism              int   `json:"parallelism"`
	PodInitialBackoffSeconds int64 `json:"podInitialBackoffSeconds"`
	PodMaxBackoffSeconds     int64 `json:"podMaxBackoffSeconds"`
	// PercentageOfNodesToScore: 0 adapts the share to the cluster.
	PercentageOfNodesToScore int `json:"percentageOfNodesToScore"`
	// EventHandlerArgs are the args of the chosen handler's entry.
	EventHandlerArgs json.RawMessage     `json:"eventHandlerArgs,omitempty"`
	CustomInformers  []customInformerOut `json:"customInformers,omitempty"`
	Profiles         []profileOut        `json:"profiles"`
}

type leaderElectionOut struct {
	Enabled       bool   `json:"leaderElect"`
	LeaseDuration string `json:"leaseDuration"`
	RenewDeadline string `json:"renewDeadline"`
	RetryPeriod   string `json:"retryPeriod"`
	Lease         string `json:"lease"`
}

type customInformerOut struct {
	Name         string          `json:"name"`
	Resource     string          `json:"resource"`
	Source       string          `json:"source"`
	SourceArgs   json.RawMessage `json:"sourceArgs,omitempty"`
	ResyncPeriod string          `json:"resyncPeriod,omitempty"`
}

type profileOut struct {
	SchedulerName string `json:"schedulerName"`
	// PercentageOfNodesToScore is the profile's own, when it has one.
	PercentageOfNodesToScore *int                       `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  map[string][]pluginOut     `json:"plugins"`
	PluginConfig             map[string]json.RawMessage `json:"pluginConfig,omitempty"`
}

type pluginOut struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight,omitempty"`
}

// checkBackoffs refuses a backoff given alone that crosses the other's
// default (the file checks the two against each other when both are
// given).
func checkBackoffs(t config.Tuning) error {
	switch {
	case t.InitialBackoff > 0 && t.MaxBackoff == 0 && t.InitialBackoff > schedulingqueue.DefaultMaxBackoff:
		return fmt.Errorf("podInitialBackoffSeconds %d is above the default podMaxBackoffSeconds (%d): set podMaxBackoffSeconds too",
			int(t.InitialBackoff.Seconds()), int(schedulingqueue.DefaultMaxBackoff.Seconds()))
	case t.MaxBackoff > 0 && t.InitialBackoff == 0 && t.MaxBackoff < schedulingqueue.DefaultInitialBackoff:
		return fmt.Errorf("podMaxBackoffSeconds %d is below the default podInitialBackoffSeconds (%d)",
			int(t.MaxBackoff.Seconds()), int(schedulingqueue.DefaultInitialBackoff.Seconds()))
	}
	return nil
}

// newEffectiveConfig builds what /configz serves from the options, the
// file (nil without --config-path) and the built profiles.
func newEffectiveConfig(o *Options, cfg *config.File, profiles map[string]*frameworkruntime.Framework) (*effectiveConfig, error) {
	le := o.LeaderElection
	out := &effectiveConfig{
		SchedulerNames: o.SchedulerNames, NodeSelector: o.NodeSelector, EventHandler: o.EventHandler, ConfigPath: o.ConfigPath,
		MaxEventDelay: o.MaxEventDelay.String(), BindConcurrency: o.BindConcurrency, KubeAPIQPS: o.KubeAPIQPS, KubeAPIBurst: o.KubeAPIBurst,
		LeaderElection: leaderElectionOut{Enabled: le.Enabled, LeaseDuration: le.LeaseDuration.String(), RenewDeadline: le.RenewDeadline.String(),
			RetryPeriod: le.RetryPeriod.String(), Lease: le.ResourceNamespace + "/" + le.ResourceName},
	}
	out.Parallelism = frameworkruntime.DefaultParallelism
	out.PodInitialBackoffSeconds, out.PodMaxBackoffSeconds = int64(schedulingqueue.DefaultInitialBackoff.Seconds()), int64(schedulingqueue.DefaultMaxBackoff.Seconds())
	if cfg != nil {
		if t := cfg.Tuning; t.Parallelism > 0 {
			out.Parallelism = t.Parallelism
		}
		if t := cfg.Tuning; t.InitialBackoff > 0 {
			out.PodInitialBackoffSeconds = int64(t.InitialBackoff.Seconds())
		}
		if t := cfg.Tuning; t.MaxBackoff > 0 {
			out.PodMaxBackoffSeconds = int64(t.MaxBackoff.Seconds())
		}
		out.PercentageOfNodesToScore = cfg.Tuning.PercentageOfNodesToScore
	}
	args := map[string]map[string]json.RawMessage{} // scheduler name → plugin → args as written
	if cfg != nil {
		for i, h := range cfg.API.EventHandlers {
			if h.Name == o.EventHandler && h.Args != nil {
				raw, err := redactedJSON(cfg, fmt.Sprintf("eventHandlers[%d].args", i))
				if err != nil {
					return nil, fmt.Errorf("eventHandlers entry %q (line %d): %w", h.Name, cfg.Line(fmt.Sprintf("eventHandlers[%d]", i)), err)
				}
				out.EventHandlerArgs = raw
			}
		}
		for i, ci := range cfg.CustomInformers() {
			c := customInformerOut{Name: ci.Name, Resource: ci.Resource, Source: ci.SourceType}
			if ci.ResyncPeriod.Duration > 0 {
				c.ResyncPeriod = ci.ResyncPeriod.Duration.String()
			}
			if ci.SourceArgs != nil {
				raw, err := redactedJSON(cfg, fmt.Sprintf("customInformers[%d].source.%s", i, ci.SourceType))
				if err != nil {
					return nil, fmt.Errorf("customInformers entry %q (line %d): %w", ci.Name, cfg.Line(fmt.Sprintf("customInformers[%d]", i)), err)
				}
				c.SourceArgs = raw
			}
			out.CustomInformers = append(out.CustomInformers, c)
		}
		for i, p := range cfg.Profiles() {
			m := map[string]json.RawMessage{}
			for j, pc := range p.PluginConfig {
				path := fmt.Sprintf("profiles[%d].pluginConfig[%d].args", i, j)
				if pc.Args == nil {
					continue
				}
				raw, err := redactedJSON(cfg, path)
				if err != nil {
					return nil, fmt.Errorf("profile %q, pluginConfig %q: %w", p.SchedulerName, pc.Name, err)
				}
				if raw != nil {
					m[pc.Name] = raw
				}
			}
			args[p.SchedulerName] = m
		}
	}
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		p := profileOut{SchedulerName: name, Plugins: map[string][]pluginOut{}}
		if cfg != nil {
			if pct, ok := cfg.Tuning.ProfilePercentageOfNodesToScore[name]; ok {
				p.PercentageOfNodesToScore = &pct
			}
		}
		for point, set := range profiles[name].ListPlugins() {
			for _, pl := range set {
				p.Plugins[string(point)] = append(p.Plugins[string(point)], pluginOut{Name: pl.Name, Weight: pl.Weight})
			}
		}
		for plugin, raw := range args[name] {
			if p.PluginConfig == nil {
				p.PluginConfig = map[string]json.RawMessage{}
			}
			p.PluginConfig[plugin] = raw
		}
		out.Profiles = append(out.Profiles, p)
	}
	return out, nil
}

// secretKey matches the keys whose string values /configz hides: inline
// credentials. Paths to them ("tokenFile", "passwordFile") are shown.
var secretKey = regexp.MustCompile(`(?i)(token|password|secret|credential)s?$`)

// redactedJSON converts what the file says at a field path (args, as
// written) to JSON, with the string values of credential-like keys
// replaced; nil when the file has nothing there.
func redactedJSON(cfg *config.File, path string) (json.RawMessage, error) {
	data, ok, err := cfg.WrittenJSON(path)
	if err != nil {
		return nil, fmt.Errorf("converting to JSON: %w", err)
	}
	if !ok {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("converting to JSON: %w", err)
	}
	v = redact(v)
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("converting to JSON: %w", err)
	}
	return raw, nil
}

func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if _, isString := x.(string); isString && secretKey.MatchString(k) {
				t[k] = "<redacted>"
				continue
			}
			t[k] = redact(x)
		}
	case []any:
		for i := range t {
			t[i] = redact(t[i])
		}
	}
	return v
}

// configzHandler serves c as JSON under the key "componentconfig", as
// kube-scheduler's /configz does, computed once: the configuration does
// not change while the process runs.
func configzHandler(c *effectiveConfig) (http.Handler, error) {
	body, err := json.MarshalIndent(map[string]any{"componentconfig": c}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding /configz: %w", err)
	}
	body = append(body, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(body)
	}), nil
}
