package allocator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
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
	// StateFile, when set, is rewritten after every admin change.
	StateFile string
	// Registry is the initial set of frameworks and revocations.
	Registry *frameworks.File
}

// framework is a registered framework and the client that reads its
// demand report.
type framework struct {
	spec   frameworks.Framework
	client *http.Client // nil without a demand URL
}

// FrameworkStatus is what GET /allocation says of a framework: its
// weight, weighted dominant share and whether it is hungry, its grants by
// node, its revoked nodes (with the message), what its last report said,
// and the error of the last read if it failed.
type FrameworkStatus struct {
	Weight        float64                    `json:"weight"`
	DominantShare float64                    `json:"dominantShare"`
	Hungry        bool                       `json:"hungry"`
	Granted       v1.ResourceList            `json:"granted"`
	Grants        map[string]v1.ResourceList `json:"grants"`            // by node
	Revoked       map[string]string          `json:"revoked,omitempty"` // node -> message
	Unmet         v1.ResourceList            `json:"unmet,omitempty"`
	Used          map[string]v1.ResourceList `json:"used,omitempty"`
	LastReport    *metav1.Time               `json:"lastReport,omitempty"`
	LastError     string                     `json:"lastError,omitempty"`
}

// Status is the body of GET /allocation: the last round's number and
// time, each node's allocatable and each framework's status.
type Status struct {
	Round      int64                      `json:"round"`
	Time       *metav1.Time               `json:"time,omitempty"`
	Nodes      map[string]v1.ResourceList `json:"nodes"` // allocatable
	Frameworks map[string]FrameworkStatus `json:"frameworks"`
}

// Allocator divides nodes among frameworks and publishes the grants.
type Allocator struct {
	opts    Options
	client  kubernetes.Interface
	store   *resourcemanager.Store
	metrics *metrics
	trigger chan struct{}
	now     func() time.Time

	// mu guards the registry (fws, revoked), saving it, and status.
	mu      sync.Mutex
	fws     map[string]*framework
	revoked map[drf.Key]string
	status  Status

	// Only the goroutine running rounds touches these.
	nodes     corelisters.NodeLister
	prev      map[drf.Key]drf.Grant
	reports   map[string]*demand.Report
	published map[string]*v1alpha1.Grant
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
		prev:      map[drf.Key]drf.Grant{},
		reports:   map[string]*demand.Report{},
		published: map[string]*v1alpha1.Grant{},
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

// round reads the reports, allocates and publishes.
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
	for name := range fws {
		if errs[name] != nil {
			in.Unreadable[name] = true
		}
		if r := a.reports[name]; r != nil {
			in.Reports[name] = r
		}
	}
	for name := range a.reports {
		if fws[name] == nil {
			delete(a.reports, name)
		}
	}
	in.Now = a.now()
	res := drf.Allocate(in)
	a.prev = res.Grants
	a.publish(in, res, revoked)
	a.record(in, res, revoked, errs)
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
			klog.ErrorS(ans.err, "Reading a demand report failed; the framework's grants stay as they are",
				"framework", ans.name, "url", fws[ans.name].spec.DemandURL)
			continue
		}
		a.reports[ans.name] = ans.report
	}
	return errs
}

// grantName is the name of framework's grant on node.
func grantName(k drf.Key) string { return k.Framework + "." + k.Node }

// publish brings the store to res: creates, updates and deletes only what
// changed, keeps revoked grants published as Revoked, and renews grants
// whose expiry is near.
func (a *Allocator) publish(in drf.Input, res drf.Result, revoked map[drf.Key]string) {
	now := in.Now
	nodes := map[string]bool{}
	for _, n := range in.Nodes {
		nodes[n.Name] = true
	}
	fwNames := map[string]bool{}
	for _, f := range in.Frameworks {
		fwNames[f.Name] = true
	}
	desired := map[string]*v1alpha1.Grant{}
	for k, g := range res.Grants {
		desired[grantName(k)] = a.newGrant(k, g.Resources.ToList(), v1alpha1.GrantActive, "")
	}
	for k, msg := range revoked {
		if !nodes[k.Node] || !fwNames[k.Framework] {
			continue
		}
		var last v1.ResourceList
		if p := a.published[grantName(k)]; p != nil {
			last = p.Spec.Resources
		}
		if msg == "" {
			msg = "revoked by an administrator"
		}
		desired[grantName(k)] = a.newGrant(k, last, v1alpha1.GrantRevoked, msg)
	}
	// Capacity moves between grants of one node: it must leave one grant
	// before it is added to another, or a framework watching the grants
	// would see the node over-committed in between. So: deletions first,
	// then the grants that do not grow, then those that do, each pass in
	// name order. If anything could not be taken away, nothing grows this
	// round.
	var stale []string
	for name := range a.published {
		if desired[name] == nil {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	shrinkFailed := false
	for _, name := range stale {
		if err := a.store.Delete("", name); err != nil {
			klog.ErrorS(err, "Deleting a grant failed", "grant", name)
			shrinkFailed = true
		} else {
			klog.V(2).InfoS("Grant deleted", "grant", name)
		}
		delete(a.published, name)
	}
	var keep, grow []string
	for name, want := range desired {
		cur := a.published[name]
		activated := cur != nil && cur.Status.Phase != v1alpha1.GrantActive && want.Status.Phase == v1alpha1.GrantActive
		if cur == nil || activated || grows(cur.Spec.Resources, want.Spec.Resources) {
			grow = append(grow, name)
		} else {
			keep = append(keep, name)
		}
	}
	sort.Strings(keep)
	sort.Strings(grow)
	for _, name := range keep {
		if !a.apply(name, desired[name], now) {
			shrinkFailed = true
		}
	}
	if shrinkFailed && len(grow) > 0 {
		klog.InfoS("Not growing grants this round: a grant could not be shrunk or deleted", "grants", len(grow))
		grow = nil
	}
	for _, name := range grow {
		a.apply(name, desired[name], now)
	}
	a.metrics.grants.Set(float64(len(a.published)))
}

// apply creates or updates the grant name to want, if it changed or is
// due for renewal, and reports whether the store has it as wanted.
func (a *Allocator) apply(name string, want *v1alpha1.Grant, now time.Time) bool {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		klog.ErrorS(errors.New(msgs[0]), "Grant name is not a valid object name; not published", "grant", name)
		return false
	}
	if errs := v1alpha1.ValidateGrant(want); len(errs) > 0 {
		klog.ErrorS(errs.ToAggregate(), "Invalid grant; not published", "grant", name)
		return false
	}
	cur := a.published[name]
	if cur == nil {
		a.setExpiry(want, now)
		if err := a.store.Create(want); err != nil {
			klog.ErrorS(err, "Publishing a grant failed", "grant", name)
			return false
		}
		klog.V(2).InfoS("Grant published", "grant", name, "resources", resources.FromList(want.Spec.Resources), "phase", want.Status.Phase)
		a.published[name] = want
		return true
	}
	same := equality.Semantic.DeepEqual(cur.Spec.Resources, want.Spec.Resources) && cur.Status == want.Status
	if same && !a.renewDue(cur, now) {
		return true
	}
	a.setExpiry(want, now)
	if err := a.store.Update(want); err != nil {
		klog.ErrorS(err, "Updating a grant failed", "grant", name)
		return false
	}
	if !same {
		klog.V(2).InfoS("Grant updated", "grant", name, "resources", resources.FromList(want.Spec.Resources), "phase", want.Status.Phase)
	}
	a.published[name] = want
	return true
}

// grows reports whether want asks for more of some resource than cur.
func grows(cur, want v1.ResourceList) bool {
	for name, q := range want {
		if c, ok := cur[name]; !ok || q.Cmp(c) > 0 {
			if ok || !q.IsZero() {
				return true
			}
		}
	}
	return false
}

func (a *Allocator) newGrant(k drf.Key, rl v1.ResourceList, phase v1alpha1.GrantPhase, msg string) *v1alpha1.Grant {
	if rl == nil {
		rl = v1.ResourceList{}
	}
	return &v1alpha1.Grant{
		ObjectMeta: metav1.ObjectMeta{Name: grantName(k)},
		Spec: v1alpha1.GrantSpec{
			Framework: k.Framework,
			NodeName:  k.Node,
			Resources: rl,
			Issuer:    a.opts.Name,
		},
		Status: v1alpha1.GrantStatus{Phase: phase, Message: msg},
	}
}

// renewDue reports whether cur's expiry is less than half a TTL away.
func (a *Allocator) renewDue(cur *v1alpha1.Grant, now time.Time) bool {
	if a.opts.GrantTTL <= 0 || cur.Spec.ExpiresAt == nil {
		return false
	}
	return cur.Spec.ExpiresAt.Sub(now) < a.opts.GrantTTL/2
}

// setExpiry sets want's expiry to a full TTL from now (when a TTL is set).
func (a *Allocator) setExpiry(want *v1alpha1.Grant, now time.Time) {
	if a.opts.GrantTTL > 0 {
		t := metav1.NewTime(now.Add(a.opts.GrantTTL))
		want.Spec.ExpiresAt = &t
	}
}

// record updates the metrics and the status served at /allocation.
func (a *Allocator) record(in drf.Input, res drf.Result, revoked map[drf.Key]string, errs map[string]error) {
	a.metrics.rounds.Inc()
	a.metrics.granted.Reset()
	st := Status{
		Time:       &metav1.Time{Time: in.Now},
		Nodes:      map[string]v1.ResourceList{},
		Frameworks: map[string]FrameworkStatus{},
	}
	for _, n := range in.Nodes {
		st.Nodes[n.Name] = n.Allocatable.ToList()
	}
	for _, f := range in.Frameworks {
		fr := res.Frameworks[f.Name]
		fs := FrameworkStatus{
			Weight:        f.Weight,
			DominantShare: fr.DominantShare,
			Hungry:        fr.Hungry,
			Granted:       fr.Granted.ToList(),
			Grants:        map[string]v1.ResourceList{},
		}
		for r, q := range fs.Granted {
			v := q.AsApproximateFloat64()
			a.metrics.granted.WithLabelValues(f.Name, string(r)).Set(v)
		}
		if r := in.Reports[f.Name]; r != nil {
			fs.Unmet, fs.Used = r.Unmet, r.Used
			t := r.Time
			fs.LastReport = &t
		}
		if err := errs[f.Name]; err != nil {
			fs.LastError = err.Error()
		}
		st.Frameworks[f.Name] = fs
	}
	for k, g := range res.Grants {
		st.Frameworks[k.Framework].Grants[k.Node] = g.Resources.ToList()
	}
	for k, msg := range revoked {
		fs, ok := st.Frameworks[k.Framework]
		if !ok {
			continue
		}
		if fs.Revoked == nil {
			fs.Revoked = map[string]string{}
		}
		fs.Revoked[k.Node] = msg
		st.Frameworks[k.Framework] = fs
	}
	a.mu.Lock()
	st.Round = a.status.Round + 1
	a.status = st
	a.mu.Unlock()
}
