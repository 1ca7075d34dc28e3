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

package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SchedulerConfiguration is the scheduler's configuration file, defaulted.
type SchedulerConfiguration struct {
	metav1.TypeMeta

	// Parallelism is how many goroutines filter and score nodes.
	Parallelism int32
	// PodInitialBackoffSeconds and PodMaxBackoffSeconds bound a job's
	// backoff after a failed attempt.
	PodInitialBackoffSeconds int64
	PodMaxBackoffSeconds     int64
	// PercentageOfNodesToScore is the share of the nodes (0 to 100) a
	// pod's Filter and Score look at, as kube-scheduler's; nil or 0 adapt
	// it to the cluster's size.
	PercentageOfNodesToScore *int32
	// TenantQueueOrder names the policy that orders jobs across tenant
	// queues (a tenancy.OrderPolicy); empty for the default.
	TenantQueueOrder string

	// EventHandlers holds per-handler settings; only the entry of the
	// handler chosen with --event-handler is used.
	EventHandlers []EventHandler
	// CustomInformers declares informers whose objects come from external
	// resource managers.
	CustomInformers []CustomInformer
	// Profiles are the scheduling profiles, overrides of the default one.
	Profiles []Profile
}

// EventHandler is one entry of eventHandlers.
type EventHandler struct {
	Name string
	// Args is the handler's args: for a built-in handler with typed args
	// (types_handlerargs.go: default, two-level) its typed object,
	// decoded, defaulted and validated with the rest of the file; for
	// any other handler a *RawArgs its factory decodes; nil when the
	// entry has none.
	Args runtime.Object
}

// CustomInformer is one entry of customInformers.
type CustomInformer struct {
	// Name identifies the informer in logs, metrics and /readyz.
	Name string
	// Resource says what the informer's objects are, e.g. "Node".
	Resource string
	// SourceType is the source kind (the single key under source:, e.g.
	// http), and SourceArgs its settings: for a built-in source with
	// typed settings (types_sourceargs.go: http, file) its typed object,
	// decoded, defaulted and validated with the rest of the file; for any
	// other source a *RawArgs its factory decodes; nil when the file
	// gives none.
	SourceType string
	SourceArgs runtime.Object
	// ResyncPeriod, when non-zero, re-delivers every object as an update
	// at that interval.
	ResyncPeriod metav1.Duration
}

// Profile is one entry of profiles.
type Profile struct {
	SchedulerName string
	// Plugins holds the per extension point overrides; nil for none.
	Plugins      *Plugins
	PluginConfig []PluginConfig
	// PercentageOfNodesToScore overrides the top-level setting for this
	// profile.
	PercentageOfNodesToScore *int32
}

// Plugins holds a profile's plugins per extension point. A nil set keeps
// the default profile's plugins at that point.
type Plugins struct {
	QueueSort  *PluginSet
	PreFilter  *PluginSet
	Filter     *PluginSet
	PreScore   *PluginSet
	Score      *PluginSet
	Reserve    *PluginSet
	Permit     *PluginSet
	PostFilter *PluginSet
	Bind       *PluginSet
	// MultiPoint enables its plugins at every extension point whose
	// interface they implement, except where the profile disables them;
	// its disabled plugins leave every point's defaults.
	MultiPoint *PluginSet
}

// PluginSet changes the default plugins of one extension point: the
// disabled ones are removed ("*" removes them all), the enabled ones added
// after those that stay, or in place of a default plugin of the same name.
type PluginSet struct {
	Enabled  []Plugin
	Disabled []Plugin
}

// Plugin names a plugin; Weight (score only) multiplies its scores, 0
// meaning the plugin's default.
type Plugin struct {
	Name   string
	Weight int32
}

// PluginConfig holds one plugin's args.
type PluginConfig struct {
	Name string
	// Args is the plugin's args: for an in-tree plugin with typed args
	// (types_pluginargs.go) its typed object, decoded, defaulted and
	// validated with the rest of the file; for any other plugin a
	// *RawArgs its factory decodes; nil when the entry has none.
	Args runtime.Object
}

// Extension point keys under a profile's plugins:, in the order a
// scheduling cycle runs them.
const (
	ExtensionQueueSort = "queueSort"
	ExtensionPreFilter = "preFilter"
	ExtensionFilter    = "filter"
	ExtensionPreScore  = "preScore"
	ExtensionScore     = "score"
	ExtensionReserve   = "reserve"
	ExtensionPermit    = "permit"
	// ExtensionPostFilter runs only when a cycle found no placement.
	ExtensionPostFilter = "postFilter"
	ExtensionBind       = "bind"
	// ExtensionMultiPoint is not a point of its own: its plugins are
	// enabled at every point whose interface they implement.
	ExtensionMultiPoint = "multiPoint"
)

// ExtensionPoints lists the extension points, in cycle order (without
// multiPoint).
var ExtensionPoints = []string{
	ExtensionQueueSort, ExtensionPreFilter, ExtensionFilter, ExtensionPreScore,
	ExtensionScore, ExtensionReserve, ExtensionPermit, ExtensionPostFilter, ExtensionBind,
}

// Get returns the set of the extension point named by key (one of the
// Extension* constants), or nil when the point is absent or key unknown.
func (p *Plugins) Get(key string) *PluginSet {
	if p == nil {
		return nil
	}
	switch key {
	case ExtensionQueueSort:
		return p.QueueSort
	case ExtensionPreFilter:
		return p.PreFilter
	case ExtensionFilter:
		return p.Filter
	case ExtensionPreScore:
		return p.PreScore
	case ExtensionScore:
		return p.Score
	case ExtensionReserve:
		return p.Reserve
	case ExtensionPermit:
		return p.Permit
	case ExtensionPostFilter:
		return p.PostFilter
	case ExtensionBind:
		return p.Bind
	case ExtensionMultiPoint:
		return p.MultiPoint
	}
	return nil
}
