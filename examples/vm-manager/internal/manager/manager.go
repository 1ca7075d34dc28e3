package manager

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

var everything = labels.Everything()

// Phase is a VM's phase.
type Phase string

const (
	// PhasePending means the VM waits for capacity (two-level mode only).
	PhasePending Phase = "Pending"
	// PhaseRunning means the VM is placed on its host and published.
	PhaseRunning Phase = "Running"
)

// DefaultOwner is the ExternalWorkloads' spec.owner when Config.Owner is
// empty.
const DefaultOwner = "vm-manager"

// DefaultRetryInterval is how often Run retries the pending VMs when
// Config.RetryInterval is zero.
const DefaultRetryInterval = 5 * time.Second

// WorkloadKind is the spec.workloadKind of the published ExternalWorkloads.
const WorkloadKind = "vm"

// Config configures New.
type Config struct {
	// Framework is the framework's name under the allocator; empty means
	// hybrid mode (no grants).
	Framework string
	// Owner is the published ExternalWorkloads' spec.owner (DefaultOwner
	// if empty).
	Owner string
	// Nodes lists the cluster's Nodes.
	Nodes corelisters.NodeLister
	// Pods holds the bound, non-terminated pods, indexed by PodIndexers.
	Pods cache.Indexer
	// Grants holds the Grants read from the allocator; it must be set in
	// two-level mode and nil in hybrid mode.
	Grants cache.Store
	// Store receives one ExternalWorkload per placed VM.
	Store *resourcemanager.Store
	// Metrics receives the manager's metrics.
	Metrics *Metrics
	// Clock tells the time for grant expiry and the demand report (the
	// real clock if nil).
	Clock clock.PassiveClock
	// RetryInterval is how often Run retries the pending VMs
	// (DefaultRetryInterval if zero).
	RetryInterval time.Duration
}

// VM is a VM as the admin API shows it.
type VM struct {
	// Name is the VM's name, also its ExternalWorkload's.
	Name string `json:"name"`
	// CPU and Memory are what the VM uses on its host.
	CPU    resource.Quantity `json:"cpu"`
	Memory resource.Quantity `json:"memory"`
	// RequestedHost is the host asked for at creation, if any.
	RequestedHost string `json:"requestedHost,omitempty"`
	// Host is where the VM runs; empty while Pending.
	Host string `json:"host,omitempty"`
	// Phase is Pending or Running.
	Phase Phase `json:"phase"`
	// Message says why a Pending VM waits.
	Message string `json:"message,omitempty"`
	// Created is when the VM was created.
	Created metav1.Time `json:"created"`
}

// vm is the manager's record of a VM.
type vm struct {
	VM
	res resources.Resource
	seq uint64
}

// Manager keeps the VMs. Its methods are safe for concurrent use.
type Manager struct {
	cfg   Config
	clock clock.PassiveClock
	kick  chan struct{}

	// mu serialises placements, so two VMs never take the same capacity.
	mu  sync.Mutex
	vms map[string]*vm
	seq uint64
	// overcommitted holds the hosts last found over a limit, with why.
	overcommitted map[string]string
}

// New returns a Manager. It checks that cfg is complete.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.Nodes == nil:
		return nil, errors.New("manager config: Nodes is nil")
	case cfg.Pods == nil:
		return nil, errors.New("manager config: Pods is nil")
	case cfg.Store == nil:
		return nil, errors.New("manager config: Store is nil")
	case cfg.Metrics == nil:
		return nil, errors.New("manager config: Metrics is nil")
	case cfg.Framework != "" && cfg.Grants == nil:
		return nil, fmt.Errorf("manager config: framework %q needs Grants", cfg.Framework)
	case cfg.Framework == "" && cfg.Grants != nil:
		return nil, errors.New("manager config: Grants needs a Framework")
	}
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	c := cfg.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	m := &Manager{cfg: cfg, clock: c, kick: make(chan struct{}, 1), vms: map[string]*vm{}, overcommitted: map[string]string{}}
	m.countPhases()
	return m, nil
}

// TwoLevel reports whether the manager runs under an allocator.
func (m *Manager) TwoLevel() bool { return m.cfg.Grants != nil }

// CreateRequest is the body of POST /vms.
type CreateRequest struct {
	Name   string `json:"name"`
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
	Host   string `json:"host,omitempty"`
}

// FieldError is bad input: Field names the request field.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ErrExists is returned by Create for a name already in use.
var ErrExists = errors.New("already exists")

// ErrNotFound is returned for a VM that does not exist.
var ErrNotFound = errors.New("not found")

// RefusedError is returned by Create in hybrid mode for a VM that does not
// fit.
type RefusedError struct {
	// Reason is one of the Reason constants.
	Reason  string
	Message string
}

func (e *RefusedError) Error() string { return e.Message }

// parsePositive parses a quantity that must be above zero.
func parsePositive(field, s string) (resource.Quantity, error) {
	if s == "" {
		return resource.Quantity{}, &FieldError{field, "required"}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, &FieldError{field, fmt.Sprintf("%q is not a quantity (e.g. \"2\", \"500m\", \"4Gi\")", s)}
	}
	if q.Sign() <= 0 {
		return q, &FieldError{field, fmt.Sprintf("%s must be greater than zero", s)}
	}
	return q, nil
}

// validate checks req and returns its quantities.
func (req CreateRequest) validate() (cpu, memory resource.Quantity, err error) {
	if req.Name == "" {
		return cpu, memory, &FieldError{"name", "required"}
	}
	if errs := validation.IsDNS1123Subdomain(req.Name); len(errs) > 0 {
		return cpu, memory, &FieldError{"name", fmt.Sprintf("%q: %s", req.Name, errs[0])}
	}
	if req.Host != "" {
		if errs := validation.IsDNS1123Subdomain(req.Host); len(errs) > 0 {
			return cpu, memory, &FieldError{"host", fmt.Sprintf("%q: %s", req.Host, errs[0])}
		}
	}
	if cpu, err = parsePositive("cpu", req.CPU); err != nil {
		return cpu, memory, err
	}
	if cpu.MilliValue() == 0 || cpu.Cmp(*resource.NewMilliQuantity(cpu.MilliValue(), resource.DecimalSI)) != 0 {
		return cpu, memory, &FieldError{"cpu", fmt.Sprintf("%s is not a whole number of millicores", req.CPU)}
	}
	if memory, err = parsePositive("memory", req.Memory); err != nil {
		return cpu, memory, err
	}
	return cpu, memory, nil
}

// Create validates req and places the VM. In hybrid mode a VM that does
// not fit is refused with a *RefusedError; in two-level mode it is kept,
// Pending. Errors: *FieldError for bad input, ErrExists, *RefusedError, or
// a failure to publish.
func (m *Manager) Create(req CreateRequest) (VM, error) {
	cpu, memory, err := req.validate()
	if err != nil {
		return VM{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.vms[req.Name]; ok {
		return VM{}, fmt.Errorf("VM %s: %w", req.Name, ErrExists)
	}
	m.seq++
	v := &vm{
		VM: VM{Name: req.Name, CPU: cpu, Memory: memory, RequestedHost: req.Host, Phase: PhasePending,
			Created: metav1.NewTime(m.clock.Now())},
		res: vmResources(cpu, memory),
		seq: m.seq,
	}
	now := m.clock.Now()
	host, why, err := m.snapshot(now).place(req.Host, v.res)
	if err != nil {
		return VM{}, fmt.Errorf("placing VM %s: %w", req.Name, err)
	}
	if why != nil {
		if !m.TwoLevel() {
			m.cfg.Metrics.Refusals.WithLabelValues(why.reason).Inc()
			klog.InfoS("Refused a VM", "vm", req.Name, "cpu", cpu.String(), "memory", memory.String(),
				"requestedHost", req.Host, "reason", why.reason, "message", why.message)
			return VM{}, &RefusedError{Reason: why.reason, Message: why.message}
		}
		v.Message = why.message
		m.vms[v.Name] = v
		m.countPhases()
		klog.InfoS("VM waits for capacity", "vm", v.Name, "cpu", cpu.String(), "memory", memory.String(),
			"requestedHost", req.Host, "reason", why.reason, "message", why.message)
		return v.VM, nil
	}
	if err := m.publish(v, host); err != nil {
		return VM{}, err
	}
	m.vms[v.Name] = v
	m.countPhases()
	return v.VM, nil
}

// publish makes v Running on host and publishes its ExternalWorkload; m.mu
// is held. v is left unchanged on error.
func (m *Manager) publish(v *vm, host string) error {
	w := &v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: v.Name},
		Spec: v1alpha1.ExternalWorkloadSpec{
			NodeName:     host,
			Resources:    v1.ResourceList{v1.ResourceCPU: v.CPU, v1.ResourceMemory: v.Memory},
			WorkloadKind: WorkloadKind,
			Owner:        m.cfg.Owner,
		},
		Status: v1alpha1.ExternalWorkloadStatus{Phase: v1alpha1.ExternalWorkloadRunning, Message: "placed by " + m.cfg.Owner},
	}
	if errs := v1alpha1.ValidateExternalWorkload(w); len(errs) > 0 {
		return fmt.Errorf("VM %s: its ExternalWorkload is invalid: %w", v.Name, errs.ToAggregate())
	}
	if err := m.cfg.Store.Create(w); err != nil {
		return fmt.Errorf("VM %s: publishing its ExternalWorkload: %w", v.Name, err)
	}
	v.Host, v.Phase, v.Message = host, PhaseRunning, ""
	klog.InfoS("Placed a VM", "vm", v.Name, "externalWorkload", klog.KObj(w), "node", klog.KRef("", host),
		"cpu", v.CPU.String(), "memory", v.Memory.String(), "resourceVersion", w.ResourceVersion)
	return nil
}

// Delete removes VM name, Pending or Running, and its ExternalWorkload.
// It returns the VM as it was, or ErrNotFound.
func (m *Manager) Delete(name string) (VM, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vms[name]
	if !ok {
		return VM{}, fmt.Errorf("VM %s: %w", name, ErrNotFound)
	}
	if v.Phase == PhaseRunning {
		if err := m.cfg.Store.Delete("", name); err != nil {
			return VM{}, fmt.Errorf("VM %s: deleting its ExternalWorkload: %w", name, err)
		}
	}
	delete(m.vms, name)
	m.countPhases()
	klog.InfoS("Deleted a VM", "vm", name, "phase", v.Phase, "node", klog.KRef("", v.Host))
	// Capacity freed here may let a pending VM in.
	m.Kick()
	return v.VM, nil
}

// Get returns VM name.
func (m *Manager) Get(name string) (VM, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vms[name]
	if !ok {
		return VM{}, false
	}
	return v.VM, true
}

// List returns the VMs sorted by name.
func (m *Manager) List() []VM {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]VM, 0, len(m.vms))
	for _, v := range m.vms {
		out = append(out, v.VM)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Kick asks Run to retry the pending VMs soon. It never blocks; kicks
// that come while one is already queued are merged.
func (m *Manager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// EventHandler returns an informer event handler that kicks the manager on
// every change: a node, pod or grant change may make room.
func (m *Manager) EventHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.Kick() },
		UpdateFunc: func(any, any) { m.Kick() },
		DeleteFunc: func(any) { m.Kick() },
	}
}

// Run retries the pending VMs and checks the hosts for over-commitment on
// every Kick and every RetryInterval, until ctx is done.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.RetryInterval)
	defer t.Stop()
	for {
		m.Reconcile()
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		case <-t.C:
		}
	}
}

// Reconcile places the pending VMs that fit now, oldest first, and
// reports hosts where the VMs exceed the grants or pods and VMs together
// exceed allocatable.
func (m *Manager) Reconcile() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	c := m.snapshot(now)
	pending := make([]*vm, 0)
	for _, v := range m.vms {
		if v.Phase == PhasePending {
			pending = append(pending, v)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].seq < pending[j].seq })
	for _, v := range pending {
		host, why, err := c.place(v.RequestedHost, v.res)
		switch {
		case err != nil:
			klog.ErrorS(err, "Could not place a pending VM", "vm", v.Name)
		case why != nil:
			if why.message != v.Message {
				klog.V(2).InfoS("VM still waits for capacity", "vm", v.Name, "reason", why.reason, "message", why.message)
			}
			v.Message = why.message
		default:
			if err := m.publish(v, host); err != nil {
				klog.ErrorS(err, "Could not publish a pending VM", "vm", v.Name)
				continue
			}
			u := c.vms[host]
			u.Add(v.res)
			c.vms[host] = u
		}
	}
	m.countPhases()
	m.checkOvercommit(c)
}

// checkOvercommit finds the hosts where this manager's VMs exceed its
// grants, or pods and VMs exceed allocatable; it logs each host when it
// goes over and when it clears, and sets the gauge. m.mu is held.
func (m *Manager) checkOvercommit(c *capacity) {
	now := map[string]string{}
	byLimit := map[string]int{LimitAllocatable: 0, LimitGrant: 0}
	for host, used := range c.vms {
		if used.IsZero() {
			continue
		}
		if c.granted != nil {
			left := c.granted[host].Clone()
			left.Sub(used)
			if left.MilliCPU < 0 || left.Memory < 0 {
				g := c.granted[host]
				now[host] = fmt.Sprintf("VMs use %s, the grants give %s", used.String(), g.String())
				byLimit[LimitGrant]++
				continue
			}
		}
		node, err := m.cfg.Nodes.Get(host)
		if err != nil {
			continue
		}
		h, err := c.use(node)
		if err != nil {
			continue
		}
		if f := h.free(); f.MilliCPU < 0 || f.Memory < 0 {
			now[host] = fmt.Sprintf("pods use %s and VMs %s of %s allocatable", h.pods.String(), h.vms.String(), h.allocatable.String())
			byLimit[LimitAllocatable]++
		}
	}
	for host, why := range now {
		if m.overcommitted[host] != why {
			klog.InfoS("Host over-committed: VMs are kept running", "node", klog.KRef("", host), "detail", why)
		}
	}
	for host := range m.overcommitted {
		if _, ok := now[host]; !ok {
			klog.InfoS("Host no longer over-committed", "node", klog.KRef("", host))
		}
	}
	m.overcommitted = now
	for limit, n := range byLimit {
		m.cfg.Metrics.Overcommitted.WithLabelValues(limit).Set(float64(n))
	}
}

// countPhases sets the VMs gauge; m.mu is held.
func (m *Manager) countPhases() {
	n := map[Phase]int{PhasePending: 0, PhaseRunning: 0}
	for _, v := range m.vms {
		n[v.Phase]++
	}
	for p, c := range n {
		m.cfg.Metrics.VMs.WithLabelValues(string(p)).Set(float64(c))
	}
}

// Demand returns the demand report: what the pending VMs ask for and what
// the running ones use, per host.
func (m *Manager) Demand() *demand.Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &demand.Report{Framework: m.cfg.Framework, Time: metav1.NewTime(m.clock.Now())}
	var unmet, largest resources.Resource
	used := map[string]resources.Resource{}
	for _, v := range m.vms {
		switch v.Phase {
		case PhasePending:
			r.Waiting++
			unmet.Add(v.res)
			largest.MilliCPU = max(largest.MilliCPU, v.res.MilliCPU)
			largest.Memory = max(largest.Memory, v.res.Memory)
		case PhaseRunning:
			u := used[v.Host]
			u.Add(v.res)
			used[v.Host] = u
		}
	}
	if r.Waiting > 0 {
		r.Unmet = unmet.ToList()
		r.LargestUnit = largest.ToList()
	}
	if len(used) > 0 {
		r.Used = make(map[string]v1.ResourceList, len(used))
		for host, u := range used {
			r.Used[host] = u.ToList()
		}
	}
	return r
}
