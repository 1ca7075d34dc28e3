package defaulthandler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
)

// Name is the name the default handler is registered under, the value of
// --event-handler that selects it.
const Name = "default"

func init() {
	eventhandlers.RegisterEventHandler(Name, Factory)
}

// Args is the handler's section of the configuration file.
type Args struct {
	// DynamicResources lists resources, as "<plural>.<version>.<group>"
	// (e.g. "widgets.v1alpha1.example.com"), that the cache watches with
	// dynamic informers. Each of their events raises a cluster event.
	DynamicResources []string `yaml:"dynamicResources"`
	// ExternalWorkloadNodeLabel, when set, names a label on
	// ExternalWorkload objects whose value is the name of the node the
	// workload's usage is accounted to. Workloads without the label (or
	// with an empty value) fall back to spec.nodeName. Empty (the default):
	// spec.nodeName only.
	ExternalWorkloadNodeLabel string `yaml:"externalWorkloadNodeLabel"`
}

// Handler is the default event handler. Build it with New or NewWithArgs;
// the zero value has no cache and is not usable.
//
// Handler is meant to be embedded: a type embedding *Handler is an
// eventhandlers.Interface and an eventhandlers.DynamicResourceRequester (and
// an eventhandlers.ExternalWorkloadEventHandler and GrantEventHandler), and
// may override any method. All methods are safe for concurrent use.
type Handler struct {
	cache   eventhandlers.Cache
	dynamic []schema.GroupVersionResource
	// externalNodeLabel is Args.ExternalWorkloadNodeLabel.
	externalNodeLabel string
}

var (
	_ eventhandlers.Interface                = (*Handler)(nil)
	_ eventhandlers.DynamicResourceRequester = (*Handler)(nil)
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

// New builds the default handler from its configuration section cfg, which
// is decoded strictly into Args; a nil cfg means defaults. c must not be nil.
// ctx and rc are not used: the default handler does no start-up work and
// needs no client of its own.
func New(_ context.Context, c eventhandlers.Cache, cfg io.Reader, _ *rest.Config) (*Handler, error) {
	var args Args
	if err := config.DecodeStrict(cfg, &args); err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	return NewWithArgs(c, args)
}

// NewWithArgs builds the default handler from already decoded arguments. It
// is for embedders whose configuration inlines Args in a larger type.
func NewWithArgs(c eventhandlers.Cache, args Args) (*Handler, error) {
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
	klog.V(2).InfoS("Built event handler", "handler", Name, "dynamicResources", args.DynamicResources,
		"externalWorkloadNodeLabel", args.ExternalWorkloadNodeLabel)
	return &Handler{cache: c, dynamic: gvrs, externalNodeLabel: args.ExternalWorkloadNodeLabel}, nil
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

// DynamicResources returns the resources listed in Args.DynamicResources, in
// their order. It implements eventhandlers.DynamicResourceRequester. The
// slice is the caller's.
func (h *Handler) DynamicResources() []schema.GroupVersionResource {
	return slices.Clone(h.dynamic)
}

// moveAll raises event, asking preCheck (which may be nil) about each
// waiting job. about is the object that caused the event, for the log.
func (h *Handler) moveAll(event eventhandlers.ClusterEvent, preCheck eventhandlers.PreEnqueueCheck, about klog.KMetadata) {
	klog.V(4).InfoS("Raising cluster event", "event", event, "object", klog.KObj(about))
	h.cache.MoveAllToActiveOrBackoffQueue(event, preCheck)
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
