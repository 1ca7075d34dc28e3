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
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SchedulerConfiguration is the scheduler's configuration file.
type SchedulerConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// Parallelism is how many goroutines filter and score nodes, 1 to
	// 1024. Default 16.
	Parallelism *int32 `json:"parallelism,omitempty"`
	// PodInitialBackoffSeconds is a job's first backoff after a failed
	// attempt, doubled on each further failure up to
	// PodMaxBackoffSeconds. Defaults 1 and 10; each 1 to 86400.
	PodInitialBackoffSeconds *int64 `json:"podInitialBackoffSeconds,omitempty"`
	PodMaxBackoffSeconds     *int64 `json:"podMaxBackoffSeconds,omitempty"`
	// PercentageOfNodesToScore is the share of the nodes (0 to 100) a
	// pod's Filter and Score look at in clusters of more than 100 nodes, a
	// window that starts where the previous pod's ended, as in
	// kube-scheduler: 0 (the default) adapts it to the cluster (50 % less
	// 1 % per 125 nodes, at least 5 % and 100 nodes), 100 looks at every
	// node. A pod that fits on no node of its window is tried on all.
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`
	// TenantQueueOrder names the policy that orders jobs across tenant
	// queues (Queue objects, docs/queues.md): FairShare (the default)
	// serves first the tenant queue furthest below its fair share;
	// Unranked leaves the order to the QueueSort plugin alone. Out-of-tree
	// builds may register more (pkg/tenancy OrderPolicy).
	TenantQueueOrder string `json:"tenantQueueOrder,omitempty"`

	// EventHandlers holds per-handler settings, in file order. Only the
	// entry of the handler chosen with --event-handler is used; the others
	// let one file serve several binaries.
	EventHandlers []EventHandler `json:"eventHandlers,omitempty"`
	// CustomInformers declares informers whose objects come from external
	// resource managers.
	CustomInformers []CustomInformer `json:"customInformers,omitempty"`
	// Profiles are the scheduling profiles: each names the plugins that
	// schedule the pods of one spec.schedulerName, as overrides of the
	// default profile.
	Profiles []Profile `json:"profiles,omitempty"`
}

// EventHandler is one entry of eventHandlers.
type EventHandler struct {
	// Name is the handler's registered name, unique in the file.
	Name string `json:"name"`
	// Args is the handler's own settings, a mapping its factory decodes.
	Args runtime.RawExtension `json:"args,omitempty"`
}

// CustomInformer is one entry of customInformers.
type CustomInformer struct {
	// Name identifies the informer in logs, metrics and /readyz: a
	// DNS-1123 label, unique in the file.
	Name string `json:"name"`
	// Resource says what the informer's objects are, e.g. "Node".
	Resource string `json:"resource"`
	// Source has exactly one key, the source type (e.g. http), whose
	// value is that source's settings.
	Source map[string]runtime.RawExtension `json:"source"`
	// ResyncPeriod, when set, re-delivers every object as an update at
	// that interval.
	ResyncPeriod metav1.Duration `json:"resyncPeriod,omitempty"`
}

// Profile is one entry of profiles.
type Profile struct {
	// SchedulerName is the spec.schedulerName of the pods this profile
	// schedules: a DNS-1123 subdomain, unique in the file.
	SchedulerName string `json:"schedulerName"`
	// Plugins overrides the default plugins per extension point.
	Plugins *Plugins `json:"plugins,omitempty"`
	// PluginConfig holds the args of individual plugins.
	PluginConfig []PluginConfig `json:"pluginConfig,omitempty"`
	// PercentageOfNodesToScore overrides the top-level setting for this
	// profile.
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`
}

// Plugins holds a profile's plugins per extension point, in the order a
// scheduling cycle runs them. An extension point left out keeps the
// default profile's plugins.
type Plugins struct {
	QueueSort  *PluginSet `json:"queueSort,omitempty"`
	PreFilter  *PluginSet `json:"preFilter,omitempty"`
	Filter     *PluginSet `json:"filter,omitempty"`
	PreScore   *PluginSet `json:"preScore,omitempty"`
	Score      *PluginSet `json:"score,omitempty"`
	Reserve    *PluginSet `json:"reserve,omitempty"`
	Permit     *PluginSet `json:"permit,omitempty"`
	PostFilter *PluginSet `json:"postFilter,omitempty"`
	Bind       *PluginSet `json:"bind,omitempty"`
	// MultiPoint enables its plugins at every extension point whose
	// interface they implement, except where the profile disables them;
	// its disabled plugins leave every point's defaults.
	MultiPoint *PluginSet `json:"multiPoint,omitempty"`
}

// PluginSet changes the default plugins of one extension point, as a
// kube-scheduler profile does: the disabled ones are removed ("*" removes
// them all) and the enabled ones added after those that stay, or in place
// of a default plugin of the same name.
//
// The file may also give a plain list of plugins, which replaces the
// defaults: it reads as that list enabled with "*" disabled.
type PluginSet struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// UnmarshalJSON reads either form of an extension point: a mapping of
// enabled and disabled plugins, or a list that replaces the defaults.
func (s *PluginSet) UnmarshalJSON(data []byte) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var list []Plugin
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return fmt.Errorf("a list of plugins: %w", err)
		}
		if list == nil {
			list = []Plugin{}
		}
		*s = PluginSet{Enabled: list, Disabled: []Plugin{{Name: "*"}}}
		return nil
	}
	// The mapping form; a type without this method avoids recursion.
	type plain PluginSet
	var p plain
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*s = PluginSet(p)
	return nil
}

// Plugin names a plugin of an extension point.
type Plugin struct {
	Name string `json:"name"`
	// Weight multiplies the plugin's scores (score only), at least 1; left
	// out, the plugin's default weight.
	Weight *int32 `json:"weight,omitempty"`
}

// PluginConfig holds one plugin's args.
type PluginConfig struct {
	Name string `json:"name"`
	// Args is the plugin's settings; kube-scheduler's typed args (with
	// their apiVersion and kind) are accepted for the plugins both
	// schedulers share.
	Args runtime.RawExtension `json:"args,omitempty"`
}
