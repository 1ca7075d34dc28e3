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

package custominformer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/registry"
)

// Options configure New.
type Options struct {
	// Name identifies the informer in logs and metrics.
	Name string
	// ResyncPeriod, when non-zero, re-delivers every object as an update at
	// that interval.
	ResyncPeriod time.Duration
	// Metrics, when set, receives the informer's per-source metrics, with
	// Name as the informer label.
	Metrics *Metrics
}

// New returns an informer over lw whose objects are of example's type. lw
// is taken to be a source that is not an apiserver: the reflector never
// tries watch-list streaming, which such sources do not speak.
//
// Between lw and the informer sits a check that rejects what must not be
// stored: a list that is not a list or has no resourceVersion, an object
// of another type, or one without a name or resourceVersion. A rejected
// list fails whole and a rejected watch event ends the watch, so the
// informer keeps its last good state and lists again. Rejections are
// logged with the informer's name and counted in opts.Metrics.
//
// Failures are retried by the informer's source itself, not by client-go's
// reflector, whose backoff grows to a minute: attempts are paced between
// RetryInitialDelay and twice RetryMaxDelay, a watch that ends is resumed
// from the last resourceVersion, and after a 410, an error or
// resourceVersions that went backwards the source is listed again and the
// difference delivered as events, so the informer agrees with a manager
// within about two seconds of it answering again. The informer is not
// started.
func New(lw cache.ListerWatcher, example runtime.Object, opts Options) cache.SharedIndexInformer {
	informer, _ := newInformer(lw, example, opts)
	return informer
}

func newInformer(lw cache.ListerWatcher, example runtime.Object, opts Options) (cache.SharedIndexInformer, *resilientListWatch) {
	m := opts.Metrics
	if m == nil {
		m = unregisteredMetrics()
	}
	sm := m.forSource(opts.Name)
	source := newResilientListWatch(newCheckedListWatch(lw, example, opts.Name, sm), example, opts.Name, sm)
	informer := cache.NewSharedIndexInformerWithOptions(source, example, cache.SharedIndexInformerOptions{
		ResyncPeriod:      opts.ResyncPeriod,
		Indexers:          cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		ObjectDescription: "custom informer " + opts.Name,
	})
	// The source retries and logs its own failures; the reflector only
	// sees the informer stopping.
	_ = informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		klog.V(4).InfoS("Custom informer list/watch ended", "informer", opts.Name, "err", err)
	})
	if opts.Metrics != nil {
		opts.Metrics.synced.add(opts.Name, informer.HasSynced)
	}
	return informer, source
}

// unregisteredMetrics count for informers built without Options.Metrics.
// They are created at the first such informer, not when the package is
// loaded: creating a metric counts it in component-base's
// registered_metrics_total, which a command that never needs them should
// not report.
var unregisteredMetrics = sync.OnceValue(func() *Metrics {
	m, err := NewMetrics(nil)
	if err != nil {
		panic(err)
	}
	return m
})

// SourceFactory builds the ListerWatcher of one custom informer from its
// configuration entry. ci.SourceArgs holds the source's own settings:
// for a vendor's source a *configapi.RawArgs to decode with
// config.DecodeStrict(configapi.ReaderOf(ci.SourceArgs), ...); the built-in http and file
// sources get their typed settings (configapi.HTTPSourceArgs,
// FileSourceArgs), or RawArgs from callers that build an entry in code. example is a zero object of the
// informer's type, for decoding. ctx bounds set-up work only.
type SourceFactory func(ctx context.Context, ci configapi.CustomInformer, example runtime.Object) (cache.ListerWatcher, error)

// SourceRegistry is a set of named source types.
type SourceRegistry = registry.Registry[SourceFactory]

// NewSourceRegistry returns an empty registry.
func NewSourceRegistry() *SourceRegistry {
	return registry.New[SourceFactory]("custom informer source")
}

// NewInTreeSourceRegistry returns a new registry holding the built-in
// source types (file, http, kubeconfig): an explicit list, as the
// in-tree plugins and handlers are.
func NewInTreeSourceRegistry() *SourceRegistry {
	r := NewSourceRegistry()
	for _, s := range []struct {
		name    string
		factory SourceFactory
	}{
		{FileSource, newFileSource},
		{HTTPSource, newHTTPSource},
		{KubeconfigSource, newKubeconfigSource},
	} {
		if err := r.Register(s.name, s.factory); err != nil {
			// The list is fixed: a failure is a programming error.
			panic(fmt.Sprintf("registering in-tree custom informer source: %v", err))
		}
	}
	return r
}

// globalSources holds the source types vendors register process-wide.
var globalSources = NewSourceRegistry()

// RegisterSource makes a source type available to the configuration file
// under name. It panics on an empty or duplicate name.
func RegisterSource(name string, factory SourceFactory) {
	if factory == nil {
		panic(fmt.Sprintf("custominformer: RegisterSource(%q) with a nil factory", name))
	}
	if err := globalSources.Register(name, factory); err != nil {
		panic("custominformer: " + err.Error())
	}
}

// GlobalSourceRegistry returns the registry RegisterSource fills: the
// vendors' source types, not the built-in ones.
func GlobalSourceRegistry() *SourceRegistry { return globalSources }

// resourceType is what a custom informer needs to know about one resource:
// its Go type and where an apiserver-like source serves it.
type resourceType struct {
	newObj func() runtime.Object
	gvr    schema.GroupVersionResource
}

// exampleObjects maps the resources a custom informer may produce to their
// Go types and GroupVersionResources.
var exampleObjects = map[framework.EventResource]resourceType{
	framework.Node: {func() runtime.Object { return &v1.Node{} }, v1.SchemeGroupVersion.WithResource("nodes")},
	framework.Pod:  {func() runtime.Object { return &v1.Pod{} }, v1.SchemeGroupVersion.WithResource("pods")},
	framework.Grant: {func() runtime.Object { return &v1alpha1.Grant{} },
		v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.GrantsResource)},
	framework.ExternalWorkload: {func() runtime.Object { return &v1alpha1.ExternalWorkload{} },
		v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.ExternalWorkloadsResource)},
}

// Built is a custom informer ready to be handed to the scheduler cache.
type Built struct {
	Name     string
	Resource framework.EventResource
	Informer cache.SharedIndexInformer
	// ListerWatcher is the informer's source as configured, without the
	// retrying wrapper, for the cache's consistency checker, which lists
	// it afresh.
	ListerWatcher cache.ListerWatcher

	// source is the informer's ListerWatcher, for tests.
	source *resilientListWatch
}

// BuildOption changes what Build does.
type BuildOption func(*Options)

// WithMetrics makes the built informer report its metrics to m.
func WithMetrics(m *Metrics) BuildOption {
	return func(o *Options) { o.Metrics = m }
}

// Build turns one customInformers entry into an informer, using the source
// type registered in reg. Errors name the informer, the file (path) and
// the entry's line there (0: unknown).
func Build(ctx context.Context, reg *SourceRegistry, path string, line int, ci configapi.CustomInformer, opts ...BuildOption) (Built, error) {
	where := fmt.Sprintf("%s: custom informer %q", path, ci.Name)
	if line > 0 {
		where = fmt.Sprintf("%s: line %d: custom informer %q", path, line, ci.Name)
	}
	rt, ok := exampleObjects[framework.EventResource(ci.Resource)]
	newObj := rt.newObj
	if !ok {
		return Built{}, fmt.Errorf("%s: resource %q cannot come from a custom informer (supported: %s)", where, ci.Resource, supportedResources())
	}
	factory, err := reg.Lookup(ci.SourceType)
	if err != nil {
		return Built{}, fmt.Errorf("%s: %w", where, err)
	}
	lw, err := factory(ctx, ci, newObj())
	if err != nil {
		// A settings error from config.DecodeStrict names the file again;
		// where already does.
		var de *config.DecodeError
		if errors.As(err, &de) && err.Error() == path+": "+de.Error() {
			err = de
		}
		return Built{}, fmt.Errorf("%s: source %s: %w", where, ci.SourceType, err)
	}
	o := Options{Name: ci.Name, ResyncPeriod: ci.ResyncPeriod.Duration}
	for _, opt := range opts {
		opt(&o)
	}
	informer, source := newInformer(lw, newObj(), o)
	return Built{
		Name:          ci.Name,
		Resource:      framework.EventResource(ci.Resource),
		Informer:      informer,
		ListerWatcher: lw,
		source:        source,
	}, nil
}

func supportedResources() string {
	names := make([]string, 0, len(exampleObjects))
	for r := range exampleObjects {
		names = append(names, string(r))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
