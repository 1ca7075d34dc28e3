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

package informerhost

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
)

// Options configure a Host. The cache builds them from its own Options
// (see cache.Options for what each field means to a user) and adds the
// hooks that need its state.
type Options struct {
	// SchedulerNames are only logged.
	SchedulerNames []string
	// Client reaches the API server for the native informers; Run needs it.
	Client kubernetes.Interface
	// DynamicClient serves the resources the handler asks for.
	DynamicClient dynamic.Interface
	// Discovery tells which resources the API server serves. Default:
	// Client's discovery client.
	Discovery ResourceDiscovery
	// RediscoveryPeriod is how often Run asks Discovery again. Default:
	// DefaultRediscoveryPeriod.
	RediscoveryPeriod time.Duration
	// ResyncPeriod of the informers; 0 disables resyncs.
	ResyncPeriod time.Duration
	// InformerFactory, when set, is the factory of the native informers;
	// nil: Run makes its own with NewInformerFactory.
	InformerFactory informers.SharedInformerFactory
	// Resources are the resources whose events are needed: Run starts
	// native informers only for these, pods and nodes always. nil, or a
	// list containing WildCard, means every native resource but the
	// opt-in ones (ResourceClaim, ResourceSlice, DeviceClass;
	// ResourceClaimTemplate comes with ResourceClaim), which run
	// only when listed by name, WildCard or not.
	Resources []framework.EventResource
	// Metrics the dispatchers and backlog gauges report to. Default: a
	// private, unregistered set.
	Metrics *metrics.Metrics
	// Clock drives the backlog probes and gauges. Default: the real clock.
	Clock clock.WithTicker

	// PodFilter, when set, passes only the pod events the handler is to
	// see (the cache's: pods bound to a node and pods of this scheduler).
	PodFilter func(obj any) bool
	// NodeFilter, when set, wraps the node handler (the cache's: a node
	// selector that also records the nodes it leaves out).
	NodeFilter func(next toolscache.ResourceEventHandler) toolscache.ResourceEventHandler
	// ClaimObserver, when set, wraps the handlers of ResourceClaims,
	// ResourceClaimTemplates, DeviceClasses and ResourceSlices (the
	// cache's: it counts the devices of pods' own claims against their
	// queues and the devices the classes select in the capacity the
	// queues share, and sees every event of these objects before the
	// handler does).
	ClaimObserver func(r framework.EventResource, next toolscache.ResourceEventHandler) toolscache.ResourceEventHandler
	// SetOwnerKindUnavailable, when set, is told whether the resource of
	// an owner kind gangs may be inferred from can be listed (discovery
	// checks it).
	SetOwnerKindUnavailable func(kind framework.GroupKind, unavailable bool)
}

// Host starts every informer of the scheduler (native, dynamic, custom and
// discovered) and delivers their events to the event handler through the
// dispatchers, behind the filters of Options, with a backlog probe on
// each; it knows when they have synced. The cache owns one and runs it
// from its own Run.
type Host struct {
	// opts, nativeResources, optIn and dispatchers are set by New and read-only
	// afterwards.
	opts Options
	// nativeResources are the native resources Run starts informers for;
	// nil means all of them but the opt-in ones.
	nativeResources map[framework.EventResource]bool
	// optIn are the opt-in native resources Options.Resources names.
	optIn       map[framework.EventResource]bool
	dispatchers *Dispatchers

	// runMu guards the fields below, which Run, AddCustomInformer and the
	// discovery goroutine set. It is never held while calling the handler
	// or the cache.
	runMu           sync.Mutex
	started         bool
	customInformers []CustomInformer
	registrations   []namedRegistration
	// syncReporter is the handler's own sync state, if it reports one
	// (eventhandlers.SyncReporter).
	syncReporter eventhandlers.SyncReporter
	// stateRules are the handler's rules for what the cache records, if
	// it has its own (eventhandlers.StateRules).
	stateRules eventhandlers.StateRules
	// discovery is the state of the resources the handler would like
	// discovered (see discovery.go).
	discovery discoveryState
}

// New returns a host configured by opts; it checks Options.Resources.
func New(opts Options) (*Host, error) {
	switch {
	case opts.ResyncPeriod < 0:
		return nil, fmt.Errorf("negative resync period %v", opts.ResyncPeriod)
	case opts.RediscoveryPeriod < 0:
		return nil, fmt.Errorf("negative rediscovery period %v", opts.RediscoveryPeriod)
	}
	if opts.RediscoveryPeriod == 0 {
		opts.RediscoveryPeriod = DefaultRediscoveryPeriod
	}
	if opts.Discovery == nil && opts.Client != nil {
		opts.Discovery = opts.Client.Discovery()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Metrics == nil {
		m, err := metrics.New(nil)
		if err != nil {
			return nil, err
		}
		opts.Metrics = m
	}
	native, err := nativeResourceSet(opts.Resources)
	if err != nil {
		return nil, err
	}
	optIn := map[framework.EventResource]bool{}
	for _, r := range opts.Resources {
		if IsOptIn(r) {
			optIn[r] = true
		}
	}
	if optIn[framework.ResourceClaim] {
		// Pods' claims come from templates as often as they are named.
		optIn[framework.ResourceClaimTemplate] = true
	}
	return &Host{opts: opts, nativeResources: native, optIn: optIn, dispatchers: NewDispatchers(opts.Metrics)}, nil
}

// setOwnerKindUnavailable passes discovery's finding on, if anyone asked.
func (c *Host) setOwnerKindUnavailable(kind framework.GroupKind, unavailable bool) {
	if f := c.opts.SetOwnerKindUnavailable; f != nil {
		f(kind, unavailable)
	}
}
