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
	// Args is the handler's own settings, decoded by its factory.
	Args runtime.RawExtension
}

// CustomInformer is one entry of customInformers.
type CustomInformer struct {
	Name     string
	Resource string
	// Source has exactly one entry: the source type and its settings.
	Source       map[string]runtime.RawExtension
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
	Args runtime.RawExtension
}
