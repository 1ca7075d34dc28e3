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

package defaulthandler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/podgroups"
	"github.com/batch-scheduler/batch-scheduler/pkg/registry"
)

// Name is the name the default handler is registered under, the value of
// --event-handler that selects it.
const Name = "default"

// Args are the handler's args: the configuration API's type
// (pkg/apis/config), which pkg/config decodes, defaults and validates from
// the file's eventHandlers entry. Its YAML names let an embedder inline
// these fields in a section it decodes itself.
type Args = configapi.DefaultHandlerArgs

// Policy changes how the handler treats nodes, pods and external
// workloads, in one place that every event path obeys: add, both versions
// of an update (so an object the policy stops accepting leaves the cache,
// and one it starts accepting enters), delete, tombstones, and resyncs.
// This is how a vendor changes the default behaviour; overriding a method
// of an embedded *Handler would leave the other paths (an update, a
// delete) doing the default thing.
//
// Each hook is optional. It returns the object as the scheduler should see
// it: the object itself, a modified copy (never modify the argument: it is
// shared with the informer's store), or nil to ignore it. A hook must be a
// pure function of the object (the same object always gets the same
// answer, so a resync changes nothing), fast, and safe for concurrent use:
// it runs on the informers' goroutines for every event.
type Policy struct {
	// Node decides whether a node is part of the cluster this scheduler
	// schedules onto, and what the scheduler sees of it (for example a
	// copy whose allocatable keeps a reserve). An ignored node never
	// reaches the cache.
	Node func(node *v1.Node) *v1.Node
	// Pod decides whether a pod is tracked at all. An ignored pod is
	// neither queued (if pending) nor accounted on its node (if assigned),
	// so ignore assigned pods only if their usage is accounted otherwise.
	Pod func(pod *v1.Pod) *v1.Pod
	// ExternalWorkload decides whether an external workload's usage is
	// accounted, and how (the copy's node and resources are what count).
	ExternalWorkload func(w *v1alpha1.ExternalWorkload) *v1alpha1.ExternalWorkload
}

// Option configures the handler built by New or NewWithArgs.
type Option func(*Handler)

// WithDialects makes the handler read the gang dialects of t instead of
// the built-in ones (dialects.Builtin): their objects become group
// policies, their status rules drive the status writer, and the cache
// (an eventhandlers.GroupMatcherCache) puts pods in gangs by t's rules.
// Adding a dialect is an entry of t: dialects.Builtin().With(d).
func WithDialects(t dialects.Table) Option {
	return func(h *Handler) { h.dialects = t }
}

// WithPolicy makes the handler treat objects as p says.
func WithPolicy(p Policy) Option {
	return func(h *Handler) { h.policy = p }
}

// Handler is the default event handler. Build it with New or NewWithArgs;
// the zero value has no cache and is not usable.
//
// A vendor changes how objects are treated with a Policy (WithPolicy),
// which every path obeys. A vendor adds behaviour for a resource the
// default handler only raises events for (Grants, say) by embedding
// *Handler and overriding that resource's methods: a type embedding
// *Handler is an eventhandlers.Interface, an
// eventhandlers.DynamicResourceRequester and
// DiscoveredResourceRequester, and an eventhandlers.Runner (and an
// eventhandlers.ExternalWorkloadEventHandler and GrantEventHandler). All
// methods are safe for concurrent use.
type Handler struct {
	cache   eventhandlers.Cache
	dynamic []schema.GroupVersionResource
	// externalNodeLabel is Args.ExternalWorkloadNodeLabel.
	externalNodeLabel string
	policy            Policy
	// dialectConfig, set by WithGangDialects, reaches the API server
	// whose gang dialects are watched and whose PodGroups' status is
	// written; nil: no gang dialects.
	dialectConfig *rest.Config
	// dialects is the table of gang dialects the handler reads
	// (dialects.Builtin unless WithDialects).
	dialects dialects.Table
	// owners are the owner kinds gangs are inferred from.
	owners framework.OwnerKinds
	// queues: the tenant queue resources are watched (tenantqueues.go),
	// which needs an API server (apiServer: New was given one, or
	// WithGangDialects).
	queues, apiServer bool
	// groupResources are the resources whose objects define gangs, which
	// the handler asks the cache to watch where served (see
	// groupobjects.go), and statusWriter writes the status of the
	// PodGroups among them (nil: none). Both, like dialects, are set
	// when the handler is built and never change, so they need no lock.
	groupResources []dialects.Watch
	statusWriter   *podgroups.Writer
	// lendsPods: the pods made of the informers' records are lent from
	// lentPods (see podOf). Set when the handler is built.
	lendsPods bool
}

var (
	_ eventhandlers.Interface                 = (*Handler)(nil)
	_ eventhandlers.DynamicResourceRequester  = (*Handler)(nil)
	_ eventhandlers.ResourceClaimEventHandler = (*Handler)(nil)
	_ eventhandlers.ResourceSliceEventHandler = (*Handler)(nil)
	_ eventhandlers.DeviceClassEventHandler   = (*Handler)(nil)
)

// Factory is the eventhandlers.Factory of the default handler; see New.
func Factory(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
	h, err := New(ctx, c, cfg, rc)
	if err != nil {
		// Return an untyped nil: a nil *Handler in an Interface is not nil.
		return nil, err
	}
	return h, nil
}

// New builds the default handler from its args cfg: the reader
// config.File.HandlerArgs or config.NewHandlerArgsReader gives, which
// holds them typed, or YAML, decoded strictly into Args as the file is
// (config.DecodeHandlerArgs); a nil cfg means defaults. c must not be
// nil. With rc, unless Args.DisableGangDialects, the API server is asked
// which gang dialects it serves (see WithGangDialects). ctx is not used.
func New(_ context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config, opts ...Option) (*Handler, error) {
	obj, err := config.DecodeHandlerArgs(Name, cfg)
	if err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	args := *obj.(*Args)
	if rc != nil && !args.DisableGangDialects {
		opts = append([]Option{WithGangDialects(rc)}, opts...)
	}
	if rc != nil {
		// Queues are watched wherever there is an API server, whatever
		// the gang dialects.
		opts = append([]Option{func(h *Handler) { h.apiServer = true }}, opts...)
	}
	return NewWithArgs(c, args, opts...)
}

// WithGangDialects makes the handler ask the cache to watch the gang
// dialect resources the API server serves (see DiscoveredResources):
// native PodGroups (scheduling.k8s.io v1beta1, else v1alpha3),
// scheduler-plugins and Volcano PodGroups, and batch/v1 Jobs, and write
// the PodGroups' status through the API server rc reaches. It needs a
// cache that implements eventhandlers.GroupPolicyCache. The handler's Run
// (eventhandlers.Runner) writes the status: an embedder that overrides
// Run must call the embedded one.
func WithGangDialects(rc *rest.Config) Option {
	return func(h *Handler) { h.dialectConfig, h.apiServer = rc, rc != nil }
}

// NewWithArgs builds the default handler from already decoded arguments. It
// is for embedders whose configuration inlines Args in a larger type.
func NewWithArgs(c eventhandlers.Cache, args Args, opts ...Option) (*Handler, error) {
	if c == nil {
		return nil, errors.New("no cache given")
	}
	gvrs, err := parseDynamicResources(args.DynamicResources)
	if err != nil {
		return nil, err
	}
	if l := args.ExternalWorkloadNodeLabel; l != "" {
		if errs := validation.IsQualifiedName(l); len(errs) > 0 {
			return nil, fmt.Errorf("externalWorkloadNodeLabel %q is not a valid label key: %s", l, strings.Join(errs, "; "))
		}
	}
	h := &Handler{cache: c, dynamic: gvrs, externalNodeLabel: args.ExternalWorkloadNodeLabel, dialects: dialects.Builtin()}
	for _, opt := range opts {
		opt(h)
	}
	_, takesRecords := c.(eventhandlers.PodRecordCache)
	h.lendsPods = takesRecords && h.policy.Pod == nil
	if err := h.dialects.Validate(); err != nil {
		return nil, fmt.Errorf("gang dialects: %w", err)
	}
	owners, err := ownerKinds(args.OwnerGangs, h.dialects)
	if err != nil {
		return nil, err
	}
	if _, ok := c.(eventhandlers.GroupPolicyCache); !ok {
		if h.dialectConfig != nil {
			klog.InfoS("The cache does not record gang groups; gang dialects other than the annotations are not read")
		}
		h.dialectConfig, owners = nil, 0
	}
	if oc, ok := c.(eventhandlers.OwnerGangCache); ok {
		if err := oc.SetOwnerGangs(owners); err != nil {
			return nil, fmt.Errorf("ownerGangs: %w", err)
		}
	} else if owners != 0 {
		klog.V(2).InfoS("The cache does not infer gangs from pod owners; ownerGangs is not applied")
		owners = 0
	}
	if mc, ok := c.(eventhandlers.GroupMatcherCache); ok {
		if err := mc.SetGroupMatcher(h.dialects); err != nil {
			return nil, fmt.Errorf("gang dialects: %w", err)
		}
	}
	h.owners = owners
	h.groupResources = h.dialects.Watches(h.dialectConfig != nil, owners)
	_, queueCache := c.(eventhandlers.TenantQueueCache)
	h.queues = h.apiServer && queueCache && !args.DisableQueues
	if h.queues {
		c.(eventhandlers.TenantQueueCache).WatchTenantQueues()
	}
	if h.statusWriter, err = h.newStatusWriter(); err != nil {
		return nil, err
	}
	klog.V(2).InfoS("Built event handler", "handler", Name, "dynamicResources", args.DynamicResources,
		"externalWorkloadNodeLabel", args.ExternalWorkloadNodeLabel, "gangDialects", h.dialectConfig != nil,
		"ownerGangs", owners.String(), "groupKinds", groupKindsOf(h.groupResources), "queues", h.queues)
	return h, nil
}

// parseDynamicResources parses and de-duplicates Args.DynamicResources.
// Errors name the offending entry as it appears in the file.
func parseDynamicResources(names []string) ([]schema.GroupVersionResource, error) {
	if len(names) == 0 {
		return nil, nil
	}
	gvrs := make([]schema.GroupVersionResource, 0, len(names))
	first := make(map[schema.GroupVersionResource]int, len(names))
	for i, name := range names {
		gvr, err := eventhandlers.ParseDynamicResource(name)
		if err != nil {
			return nil, fmt.Errorf("dynamicResources[%d]: %w", i, err)
		}
		if j, dup := first[gvr]; dup {
			return nil, fmt.Errorf("dynamicResources[%d]: %q is already listed at dynamicResources[%d]", i, name, j)
		}
		first[gvr] = i
		gvrs = append(gvrs, gvr)
	}
	return gvrs, nil
}

// Cache returns the cache the handler updates, for embedders.
func (h *Handler) Cache() eventhandlers.Cache { return h.cache }

// Dialects returns the table of gang dialects the handler reads and gives
// the cache (dialects.Builtin unless WithDialects), for embedders that
// put pods in gangs themselves: framework.GroupResolver{Matcher:
// h.Dialects()}. The table is shared: do not modify it.
func (h *Handler) Dialects() dialects.Table { return h.dialects }

// DynamicResources returns the resources listed in Args.DynamicResources, in
// their order. It implements eventhandlers.DynamicResourceRequester. The
// slice is the caller's.
func (h *Handler) DynamicResources() []schema.GroupVersionResource {
	return slices.Clone(h.dynamic)
}

// raise raises event with the objects it is about (oldObj nil for an
// addition, newObj nil for a deletion); the plugins' queueing hints decide
// which waiting jobs it may help.
func (h *Handler) raise(event framework.ClusterEvent, oldObj, newObj klog.KMetadata) {
	if logger := klog.V(4); logger.Enabled() {
		about := newObj
		if isNil(about) {
			about = oldObj
		}
		logger.InfoS("Raising cluster event", "event", event, "object", klog.KObj(about))
	}
	var o, n any
	if !isNil(oldObj) {
		o = oldObj
	}
	if !isNil(newObj) {
		n = newObj
	}
	h.cache.MoveAllToActiveOrBackoffQueue(event, o, n)
}

// isNil reports whether m is nil or a typed nil pointer.
func isNil(m klog.KMetadata) bool {
	return m == nil || registry.IsNil(m)
}

// applyPolicy runs hook, when set, on obj; nil means "ignore obj".
func applyPolicy[T any](hook func(*T) *T, obj *T) *T {
	if hook == nil || obj == nil {
		return obj
	}
	return hook(obj)
}

// objectAs is eventhandlers.ObjectAs that also rejects a nil pointer, which
// an informer never delivers but a broken custom source might.
func objectAs[T any, PT interface{ *T }](obj any) (PT, bool) {
	p, ok := eventhandlers.ObjectAs[PT](obj)
	if !ok {
		return nil, false
	}
	if p == nil {
		klog.ErrorS(nil, "Ignoring nil object", "type", fmt.Sprintf("%T", p))
		return nil, false
	}
	return p, true
}

// sameVersion reports whether an update is a resync that changed nothing:
// both objects have the same, non-empty, resourceVersion.
func sameVersion(oldRV, newRV string) bool {
	return oldRV != "" && oldRV == newRV
}

var _ eventhandlers.ExternalWorkloadNodeLabeler = (*Handler)(nil)

// ExternalWorkloadNodeLabel implements eventhandlers.ExternalWorkloadNodeLabeler:
// Args.ExternalWorkloadNodeLabel, so that the cache's consistency checker
// places ExternalWorkloads as the handler does.
func (h *Handler) ExternalWorkloadNodeLabel() string { return h.externalNodeLabel }
