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

package allocator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/held"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Options configure New.
type Options struct {
	// Name is the issuer written in every grant (spec.issuer).
	Name string
	// Interval is how often a round runs when nothing changes.
	Interval time.Duration
	// IdleTimeout is how long granted capacity must stay unused before it
	// may go to a hungry framework.
	IdleTimeout time.Duration
	// GrantTTL, when positive, makes grants expire that long after they
	// were last published; they are renewed when half of it is left.
	GrantTTL time.Duration
	// DemandTimeout bounds one read of a demand report.
	DemandTimeout time.Duration
	// StateFile, when set, is rewritten after every admin change, and
	// whenever what frameworks hold changes (before a grant grows into
	// capacity the file does not yet count as held).
	StateFile string
	// Registry is the initial set of frameworks and revocations, and what
	// frameworks held when it was saved (see package held).
	Registry *frameworks.File
}

// framework is a registered framework and the client that reads its
// demand report.
type framework struct {
	spec   frameworks.Framework
	client *http.Client // nil without a demand URL
}

// Allocator divides nodes among frameworks and publishes the grants.
//
// It never gives one framework capacity another still holds: a
// framework holds, on each node, the most that any version of its grant
// it may still apply lets it occupy, or what it reports to use if more
// (package held). A grant shrinks at once, but the capacity it gives up
// goes to others only once the framework's synced demand report
// acknowledges the shrunk version and no longer counts it as used. A
// framework whose report cannot be read, or is never synced, keeps
// everything it holds.
type Allocator struct {
	opts    Options
	client  kubernetes.Interface
	store   *resourcemanager.Store
	metrics *metrics
	trigger chan struct{}
	now     func() time.Time

	// mu guards the registry (fws, revoked), persisted, saving them to
	// the state file, and status. Taken by the admin handlers, by
	// getAllocation and by the round goroutine (snapshot, saving held,
	// record); nothing else is locked while it is held.
	mu      sync.Mutex
	fws     map[string]*framework
	revoked map[drf.Key]string
	// persisted is the held capacity per grant the state file holds, or
	// is being written with; every save of the registry writes it too.
	persisted map[drf.Key]resources.Resource
	status    Status

	// Only the goroutine running rounds touches these (and New, before
	// it starts).
	nodes     corelisters.NodeLister
	prev      map[drf.Key]drf.Grant      // what was published, as drf's carry-over
	reports   map[string]*demand.Report  // latest readable report of each registered framework
	synced    map[string]*demand.Report  // latest synced report of each framework ever registered
	published map[string]*v1alpha1.Grant // by grant name
	ledger    *held.Ledger

	// ready is set once the first round has published (see Handler).
	ready atomic.Bool
}

// New returns an Allocator for the nodes client lists, registering the
// frameworks and revocations of opts.Registry.
func New(client kubernetes.Interface, opts Options) (*Allocator, error) {
	if opts.Name == "" {
		return nil, errors.New("allocator: Name (the grants' issuer) is required")
	}
	if opts.Interval <= 0 {
		return nil, fmt.Errorf("allocator: interval %s must be positive", opts.Interval)
	}
	if opts.DemandTimeout <= 0 {
		opts.DemandTimeout = 5 * time.Second
	}
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("Grant"),
		Resource:         v1alpha1.GrantsResource,
		Example:          &v1alpha1.Grant{},
		HistoryPerObject: 2,
		// Above any resourceVersion an earlier run served.
		InitialResourceVersion: time.Now().UnixMicro(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the grant store: %w", err)
	}
	a := &Allocator{
		opts:      opts,
		client:    client,
		store:     store,
		metrics:   newMetrics(),
		trigger:   make(chan struct{}, 1),
		now:       time.Now,
		fws:       map[string]*framework{},
		revoked:   map[drf.Key]string{},
		persisted: map[drf.Key]resources.Resource{},
		prev:      map[drf.Key]drf.Grant{},
		reports:   map[string]*demand.Report{},
		synced:    map[string]*demand.Report{},
		published: map[string]*v1alpha1.Grant{},
		ledger:    held.NewLedger(),
		status:    Status{Nodes: map[string]v1.ResourceList{}, Frameworks: map[string]FrameworkStatus{}},
	}
	if r := opts.Registry; r != nil {
		if err := r.Validate(nil); err != nil {
			return nil, fmt.Errorf("allocator: registry: %w", err)
		}
		for _, spec := range r.Frameworks {
			fw, err := newFramework(spec)
			if err != nil {
				return nil, err
			}
			a.fws[spec.Name] = fw
		}
		for _, rv := range r.Revoked {
			f, n, _ := frameworks.ParseGrantName(rv.Grant) // validated above
			a.revoked[drf.Key{Framework: f, Node: n}] = rv.Message
		}
		if err := a.restore(r.Held); err != nil {
			return nil, fmt.Errorf("allocator: registry: %w", err)
		}
	}
	return a, nil
}

// newFramework builds the client that reads spec's demand report.
func newFramework(spec frameworks.Framework) (*framework, error) {
	fw := &framework{spec: spec}
	if spec.DemandURL == "" {
		return fw, nil
	}
	rt, err := transport.New(&transport.Config{
		BearerTokenFile: spec.BearerTokenFile,
		TLS:             transport.TLSConfig{CAFile: spec.CAFile, Insecure: spec.InsecureSkipTLSVerify},
	})
	if err != nil {
		return nil, fmt.Errorf("framework %s: client for demandURL %s (caFile %q, bearerTokenFile %q): %w",
			spec.Name, spec.DemandURL, spec.CAFile, spec.BearerTokenFile, err)
	}
	fw.client = &http.Client{Transport: rt}
	return fw, nil
}

// Store is where the grants are published.
func (a *Allocator) Store() *resourcemanager.Store { return a.store }

// Trigger asks for a round soon.
func (a *Allocator) Trigger() {
	select {
	case a.trigger <- struct{}{}:
	default:
	}
}

// Run watches nodes and runs rounds until ctx ends, then closes the store.
func (a *Allocator) Run(ctx context.Context) error {
	defer a.store.Close()
	factory := informers.NewSharedInformerFactory(a.client, 0)
	inf := factory.Core().V1().Nodes()
	a.nodes = inf.Lister()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { a.Trigger() },
		UpdateFunc: func(old, cur any) { a.nodeUpdated(old, cur) },
		DeleteFunc: func(any) { a.Trigger() },
	}); err != nil {
		return fmt.Errorf("watching nodes: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		if ctx.Err() != nil {
			return nil // stopped before the first sync
		}
		return fmt.Errorf("waiting for the node informer to sync: %w", ctx.Err())
	}
	klog.InfoS("Allocator started", "issuer", a.opts.Name, "interval", a.opts.Interval, "idleTimeout", a.opts.IdleTimeout)
	ticker := time.NewTicker(a.opts.Interval)
	defer ticker.Stop()
	for {
		a.round(ctx)
		select {
		case <-ctx.Done():
			klog.InfoS("Allocator stopping")
			return nil
		case <-ticker.C:
		case <-a.trigger:
		}
	}
}

// nodeUpdated triggers a round when a node's allocatable changed (status
// heartbeats alone do not).
func (a *Allocator) nodeUpdated(old, cur any) {
	o, ok1 := old.(*v1.Node)
	c, ok2 := cur.(*v1.Node)
	if !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Status.Allocatable, c.Status.Allocatable) {
		a.Trigger()
	}
}

// snapshot copies the registry.
func (a *Allocator) snapshot() (map[string]*framework, map[drf.Key]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fws := make(map[string]*framework, len(a.fws))
	for k, v := range a.fws {
		fws[k] = v
	}
	rev := make(map[drf.Key]string, len(a.revoked))
	for k, v := range a.revoked {
		rev[k] = v
	}
	return fws, rev
}

// round reads the reports, learns what each framework acknowledged and
// holds, allocates, and publishes what may be published now.
func (a *Allocator) round(ctx context.Context) {
	fws, revoked := a.snapshot()
	nodeList, err := a.nodes.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "Listing nodes from the informer failed")
		return
	}
	in := drf.Input{
		Reports:     map[string]*demand.Report{},
		Unreadable:  map[string]bool{},
		Previous:    a.prev,
		Revoked:     map[drf.Key]bool{},
		IdleTimeout: a.opts.IdleTimeout,
	}
	for _, n := range nodeList {
		in.Nodes = append(in.Nodes, drf.Node{Name: n.Name, Allocatable: resources.FromList(n.Status.Allocatable)})
	}
	sort.Slice(in.Nodes, func(i, j int) bool { return in.Nodes[i].Name < in.Nodes[j].Name })
	for name, fw := range fws {
		in.Frameworks = append(in.Frameworks, drf.Framework{Name: name, Weight: fw.spec.EffectiveWeight()})
	}
	sort.Slice(in.Frameworks, func(i, j int) bool { return in.Frameworks[i].Name < in.Frameworks[j].Name })
	for k := range revoked {
		in.Revoked[k] = true
	}
	errs := a.fetchReports(ctx, fws)
	for name := range a.reports {
		if fws[name] == nil {
			delete(a.reports, name)
		}
	}
	in.Now = a.now()
	a.acknowledge(fws)
	used := a.usage()
	in.Held = a.holdings(in.Now, used)
	for name := range fws {
		if errs[name] != nil {
			in.Unreadable[name] = true
		}
		if r := a.drfReport(name, used); r != nil {
			in.Reports[name] = r
		}
	}
	res := drf.Allocate(in)
	a.publish(in, res, revoked, in.Held)
	a.prev = a.carried(in, res, used)
	after := a.holdings(in.Now, used)
	a.persistAfter(after)
	a.record(in, res, revoked, errs, used, after)
	if !a.ready.Swap(true) {
		klog.InfoS("First round published: serving grants", "grants", len(a.published))
	}
}

// fetchReports reads the demand report of every framework with a demand
// URL, concurrently, into a.reports, and returns the errors by framework.
func (a *Allocator) fetchReports(ctx context.Context, fws map[string]*framework) map[string]error {
	type answer struct {
		name   string
		report *demand.Report
		err    error
	}
	ch := make(chan answer, len(fws))
	var wg sync.WaitGroup
	for name, fw := range fws {
		if fw.client == nil {
			continue
		}
		wg.Go(func() {
			fctx, cancel := context.WithTimeout(ctx, a.opts.DemandTimeout)
			defer cancel()
			r, err := demand.Fetch(fctx, fw.client, fw.spec.DemandURL)
			ch <- answer{name: name, report: r, err: err}
		})
	}
	wg.Wait()
	close(ch)
	errs := map[string]error{}
	for ans := range ch {
		if ans.err != nil {
			errs[ans.name] = ans.err
			a.metrics.reportErrors.WithLabelValues(ans.name).Inc()
			klog.ErrorS(ans.err, "Reading a demand report failed; the framework keeps its grants and all it holds",
				"framework", ans.name, "url", fws[ans.name].spec.DemandURL)
			continue
		}
		a.reports[ans.name] = ans.report
		if ans.report.Synced {
			a.synced[ans.name] = ans.report
		}
	}
	return errs
}
