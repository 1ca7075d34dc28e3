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

package twolevel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Name is the handler's name in the registry (--event-handler).
const Name = "two-level"

// DefaultCheckInterval is how often the handler looks for nodes whose
// grant this scheduler's pods exceed.
const DefaultCheckInterval = time.Second

// Args are the handler's args: the configuration API's type
// (pkg/apis/config), its own fields and the default handler's inline,
// which pkg/config decodes, defaults and validates from the file's
// eventHandlers entry.
type Args = configapi.TwoLevelHandlerArgs

// Handler is the two-level handler. Build it with New.
type Handler struct {
	*defaulthandler.Handler

	cache     eventhandlers.Cache
	framework string
	evict     bool
	// client evicts pods and writes Events; nil when the handler was
	// built without a rest.Config (tests), which disables both.
	client        kubernetes.Interface
	clock         clock.WithTicker
	checkInterval time.Duration
	defaultOpts   []defaulthandler.Option

	// mu guards grants, byNode and caps (see the package documentation).
	mu sync.Mutex
	// grants holds this framework's grants by name, and byNode their
	// names by node, so that a node's cap is summed over its own grants.
	grants map[string]grant
	byNode map[string]map[string]bool
	// caps is the cap last given to the cache, per node with at least one
	// grant.
	caps map[string]resources.Resource
	// observed is the resourceVersion of each grant of this framework
	// whose cap the cache holds (see ObservedGrants).
	observed map[string]string
	// wake tells Run that the earliest expiry may have changed.
	wake chan struct{}
}

var (
	_ eventhandlers.Interface         = (*Handler)(nil)
	_ eventhandlers.GrantEventHandler = (*Handler)(nil)
	_ eventhandlers.Runner            = (*Handler)(nil)
	_ eventhandlers.GrantObserver     = (*Handler)(nil)
)

// Option configures New.
type Option func(*Handler)

// WithClock replaces the real clock, for tests of expiry.
func WithClock(c clock.WithTicker) Option { return func(h *Handler) { h.clock = c } }

// WithCheckInterval sets how often exceeded grants are looked for.
func WithCheckInterval(d time.Duration) Option { return func(h *Handler) { h.checkInterval = d } }

// WithClient sets the client used for evictions and Events.
func WithClient(c kubernetes.Interface) Option { return func(h *Handler) { h.client = c } }

// WithDefaultOptions passes options (a Policy, say) to the embedded
// default handler.
func WithDefaultOptions(opts ...defaulthandler.Option) Option {
	return func(h *Handler) { h.defaultOpts = append(h.defaultOpts, opts...) }
}

// Factory is the handler's eventhandlers.Factory.
func Factory(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
	obj, err := config.DecodeHandlerArgs(Name, cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	args := *obj.(*Args)
	var opts []Option
	if rc != nil {
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("creating the client for evictions and events: %w", err)
		}
		opts = append(opts, WithClient(client))
	}
	h, err := New(c, args, opts...)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// validateArgs checks args built in code, which the configuration file's
// validation has not seen: the framework. Errors name the field.
func validateArgs(a *Args) error {
	if a.Framework == "" {
		return errors.New("framework: required (the framework name grants are issued to)")
	}
	if errs := validation.IsDNS1123Label(a.Framework); len(errs) > 0 {
		return fmt.Errorf("framework %q: %s", a.Framework, errs[0])
	}
	return nil
}

// New builds the handler and makes the cache require caps: until a grant
// arrives, no node has room for this scheduler.
func New(c eventhandlers.Cache, args Args, opts ...Option) (*Handler, error) {
	if c == nil {
		return nil, errors.New("no cache given")
	}
	if err := validateArgs(&args); err != nil {
		return nil, err
	}
	h := &Handler{
		cache:         c,
		framework:     args.Framework,
		evict:         args.EvictOnRevoke,
		clock:         clock.RealClock{},
		checkInterval: DefaultCheckInterval,
		grants:        map[string]grant{},
		byNode:        map[string]map[string]bool{},
		caps:          map[string]resources.Resource{},
		observed:      map[string]string{},
		wake:          make(chan struct{}, 1),
	}
	for _, opt := range opts {
		opt(h)
	}
	if h.checkInterval <= 0 {
		return nil, fmt.Errorf("check interval %v: must be positive", h.checkInterval)
	}
	d, err := defaulthandler.NewWithArgs(c, args.DefaultHandlerArgs, h.defaultOpts...)
	if err != nil {
		return nil, err
	}
	h.Handler = d
	c.RequireNodeCaps()
	klog.InfoS("Built event handler", "handler", Name, "framework", h.framework, "evictOnRevoke", h.evict)
	return h, nil
}

var _ eventhandlers.FrameworkMember = (*Handler)(nil)

// Framework implements eventhandlers.FrameworkMember: the framework name
// this scheduler's grants are issued to.
func (h *Handler) Framework() string { return h.framework }

// TakesPodRecords implements eventhandlers.PodRecordHandler: the handler
// keeps the default handler's pod methods, so it takes the informers'
// records of bound pods as that handler does.
func (h *Handler) TakesPodRecords(registered eventhandlers.Interface) bool {
	self, ok := registered.(*Handler)
	return ok && self == h
}
