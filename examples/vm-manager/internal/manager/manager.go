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

package manager

import (
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
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

var everything = labels.Everything()

// Phase is a VM's phase.
type Phase string

const (
	// PhasePending means the VM waits for capacity (two-level mode, or a
	// VM loaded pending from the state file), or is being placed (ledger
	// mode, while its ledger entry is committed).
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

// WorkloadKind is the spec.workloadKind of the published ExternalWorkloads,
// and the kind of the VMs' ledger entries.
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
	// HostSelector selects the nodes VMs may be placed on; nil or empty
	// selects every node. Hybrid mode only.
	HostSelector labels.Selector
	// Ledger, if set, turns ledger mode on (hybrid mode only): every
	// placement is committed to its host's NodeLedger first (see
	// ledger.go).
	Ledger *LedgerConfig
	// State, if set, keeps the VMs across restarts: New loads them, and
	// every change is saved before it shows.
	State State
	// Store receives one ExternalWorkload per placed VM.
	Store *resourcemanager.Store
	// Metrics receives the manager's metrics.
	Metrics *Metrics
	// Clock tells the time for grant expiry, the demand report and the
	// VMs' times (the real clock if nil).
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
	// Placed is when the VM became Running; nil while Pending.
	Placed *metav1.Time `json:"placed,omitempty"`
}

// vm is the manager's record of a VM.
type vm struct {
	VM
	res resources.Resource
	seq uint64
	// placing is set while a placement of the VM is committed to a
	// ledger, outside m.mu (ledger mode); target is the host committed
	// to, empty between two hosts. Such a VM stays Pending, is counted on
	// target, and is left alone by every other path.
	placing bool
	target  string
	// unsaved marks a VM whose Create is still under way: it is not in
	// the state file, and a failed placement forgets it.
	unsaved bool
}

// Manager keeps the VMs. Its methods are safe for concurrent use.
//
// Locks, in the order they are taken:
//   - sweepMu serialises the ledger sweeps (ledger.go) and guards
//     podChecked; it is held during API calls.
//   - mu guards vms, seq and overcommitted, and serialises placements
//     and saves of the state, so two VMs never take the same capacity
//     and the state file follows the VMs' order of changes. It is held
//     while the state file is written and an ExternalWorkload published,
//     never during an API call or while waiting for a ledger commit: the
//     changes committed to ledgers take it themselves (syncEntries).
type Manager struct {
	cfg   Config
	clock clock.PassiveClock
	kick  chan struct{}

	mu  sync.Mutex
	vms map[string]*vm
	seq uint64
	// overcommitted holds the hosts last found over a limit, with why.
	overcommitted map[string]string

	sweepMu sync.Mutex
	// podChecked holds when the pod of each pod entry was last read from
	// the API server, to read each at most once per PodRecheck.
	podChecked map[podCheck]time.Time
	// joins holds the nodes whose ledger this placer must join (ledger
	// mode); Run works it off.
	joins workqueue.TypedRateLimitingInterface[string]
}

// New returns a Manager. It checks that cfg is complete, and with a State
// loads the VMs and publishes the Running ones again before it returns.
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
	case cfg.Framework != "" && cfg.Ledger != nil:
		return nil, errors.New("manager config: ledger mode is for hybrid mode only, not with a Framework")
	case cfg.Framework != "" && cfg.HostSelector != nil && !cfg.HostSelector.Empty():
		return nil, errors.New("manager config: a HostSelector is for hybrid mode only, not with a Framework")
	}
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = DefaultRetryInterval
	}
	if cfg.HostSelector == nil {
		cfg.HostSelector = everything
	}
	c := cfg.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	m := &Manager{cfg: cfg, clock: c, kick: make(chan struct{}, 1), vms: map[string]*vm{}, overcommitted: map[string]string{},
		podChecked: map[podCheck]time.Time{}}
	if cfg.Ledger != nil {
		lc, err := cfg.Ledger.complete()
		if err != nil {
			return nil, err
		}
		m.cfg.Ledger = lc
		m.joins = workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](joinRetryBase, joinRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "vm-manager-ledger-joins"})
	}
	if err := m.load(); err != nil {
		return nil, err
	}
	m.countPhases()
	return m, nil
}

// load reads the saved VMs and publishes the Running ones again.
func (m *Manager) load() error {
	if m.cfg.State == nil {
		return nil
	}
	saved, err := m.cfg.State.Load()
	if err != nil {
		return fmt.Errorf("loading the VMs: %w", err)
	}
	running := 0
	for _, s := range saved {
		m.seq++
		v := &vm{VM: s, res: vmResources(s.CPU, s.Memory), seq: m.seq}
		if v.Phase == PhaseRunning {
			w, err := m.workload(&v.VM)
			if err != nil {
				return fmt.Errorf("loading the VMs: %w", err)
			}
			if err := m.cfg.Store.Create(w); err != nil {
				return fmt.Errorf("loading the VMs: VM %s: publishing its ExternalWorkload again: %w", v.Name, err)
			}
			running++
		}
		m.vms[v.Name] = v
	}
	klog.InfoS("Loaded the saved VMs", "vms", len(saved), "running", running, "pending", len(saved)-running)
	return nil
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

// ErrPlacing is returned by Delete for a VM whose placement is being
// committed to a ledger: try again in a moment.
var ErrPlacing = errors.New("is being placed; try again")

// RefusedError is returned by Create in hybrid mode for a VM that does not
// fit, or (reason ReasonLedgerUnavailable) whose ledger could not be
// written.
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
// Pending. In ledger mode the placement is committed to the host's ledger
// before the VM runs. The VM is saved (Config.State) before it is
// published; if saving fails, Create fails and keeps nothing. Errors:
// *FieldError for bad input, ErrExists, *RefusedError, or a failure to
// save or publish.
func (m *Manager) Create(req CreateRequest) (VM, error) {
	cpu, memory, err := req.validate()
	if err != nil {
		return VM{}, err
	}
	v := &vm{
		VM: VM{Name: req.Name, CPU: cpu, Memory: memory, RequestedHost: req.Host, Phase: PhasePending,
			Created: metav1.NewTime(m.clock.Now())},
		res: vmResources(cpu, memory),
	}
	if m.cfg.Ledger != nil {
		return m.createOnLedger(v)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.vms[req.Name]; ok {
		return VM{}, fmt.Errorf("VM %s: %w", req.Name, ErrExists)
	}
	m.seq++
	v.seq = m.seq
	host, why, err := m.snapshot(m.clock.Now()).place(req.Host, v.res)
	if err != nil {
		return VM{}, fmt.Errorf("placing VM %s: %w", req.Name, err)
	}
	if why != nil {
		if !m.TwoLevel() {
			return VM{}, m.refuse(v, why)
		}
		v.Message = why.message
		if err := m.saveLocked(&v.VM, ""); err != nil {
			return VM{}, fmt.Errorf("VM %s not created: %w", v.Name, err)
		}
		m.vms[v.Name] = v
		m.countPhases()
		klog.InfoS("VM waits for capacity", "vm", v.Name, "cpu", cpu.String(), "memory", memory.String(),
			"requestedHost", req.Host, "reason", why.reason, "message", why.message)
		return v.VM, nil
	}
	if err := m.runLocked(v, host); err != nil {
		return VM{}, fmt.Errorf("VM %s not created: %w", v.Name, err)
	}
	m.vms[v.Name] = v
	m.countPhases()
	return v.VM, nil
}

// refuse counts and logs the refusal of v and returns it as an error.
func (m *Manager) refuse(v *vm, why *refusal) error {
	m.cfg.Metrics.Refusals.WithLabelValues(why.reason).Inc()
	klog.InfoS("Refused a VM", "vm", v.Name, "cpu", v.CPU.String(), "memory", v.Memory.String(),
		"requestedHost", v.RequestedHost, "reason", why.reason, "message", why.message)
	return &RefusedError{Reason: why.reason, Message: why.message}
}

// workload is the ExternalWorkload that publishes v, a Running VM.
func (m *Manager) workload(v *VM) (*v1alpha1.ExternalWorkload, error) {
	w := &v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: v.Name},
		Spec: v1alpha1.ExternalWorkloadSpec{
			NodeName:     v.Host,
			Resources:    v1.ResourceList{v1.ResourceCPU: v.CPU, v1.ResourceMemory: v.Memory},
			WorkloadKind: WorkloadKind,
			Owner:        m.cfg.Owner,
		},
		Status: v1alpha1.ExternalWorkloadStatus{Phase: v1alpha1.ExternalWorkloadRunning, Message: "placed by " + m.cfg.Owner},
	}
	if errs := v1alpha1.ValidateExternalWorkload(w); len(errs) > 0 {
		return nil, fmt.Errorf("VM %s: its ExternalWorkload is invalid: %w", v.Name, errs.ToAggregate())
	}
	return w, nil
}

// runLocked makes v Running on host, write-ahead: it saves the state with
// v Running there, then publishes v's ExternalWorkload, then updates v.
// m.mu is held. On error v is unchanged and the state file is restored to
// the VMs as they are (v need not be in m.vms yet).
func (m *Manager) runLocked(v *vm, host string) error {
	next := v.VM
	placed := metav1.NewTime(m.clock.Now())
	next.Host, next.Phase, next.Message, next.Placed = host, PhaseRunning, "", &placed
	w, err := m.workload(&next)
	if err != nil {
		return err
	}
	if err := m.saveLocked(&next, ""); err != nil {
		return err
	}
	if err := m.cfg.Store.Create(w); err != nil {
		err = fmt.Errorf("publishing its ExternalWorkload: %w", err)
		if serr := m.saveLocked(nil, ""); serr != nil {
			err = errors.Join(err, fmt.Errorf("restoring the state: %w", serr))
		}
		return err
	}
	v.VM = next
	v.placing, v.target, v.unsaved = false, "", false
	klog.InfoS("Placed a VM", "vm", v.Name, "externalWorkload", klog.KObj(w), "node", klog.KRef("", host),
		"cpu", v.CPU.String(), "memory", v.Memory.String(), "resourceVersion", w.ResourceVersion)
	return nil
}

// saveLocked saves the VMs as they are once a change is made: m.vms in
// creation order, with next in place of the VM of its name (or added
// last), without the VM named drop, and without the VMs whose Create is
// still under way. A VM being placed is saved as it was, Pending. m.mu is
// held. It does nothing without a State.
func (m *Manager) saveLocked(next *VM, drop string) error {
	if m.cfg.State == nil {
		return nil
	}
	sorted := make([]*vm, 0, len(m.vms))
	for _, v := range m.vms {
		sorted = append(sorted, v)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].seq < sorted[j].seq })
	out := make([]VM, 0, len(sorted)+1)
	replaced := false
	for _, v := range sorted {
		switch {
		case v.Name == drop:
		case next != nil && v.Name == next.Name:
			out = append(out, *next)
			replaced = true
		case v.unsaved:
		default:
			out = append(out, v.VM)
		}
	}
	if next != nil && !replaced {
		out = append(out, *next)
	}
	if err := m.cfg.State.Save(out); err != nil {
		return fmt.Errorf("saving the state: %w", err)
	}
	return nil
}

// Delete removes VM name, Pending or Running, and its ExternalWorkload,
// then saves the state; if saving fails, the VM is published again and
// kept, and Delete fails. In ledger mode the VM's entry is then removed
// from its host's ledger (Reconcile retries if that fails). It returns the
// VM as it was, ErrNotFound, or ErrPlacing.
func (m *Manager) Delete(name string) (VM, error) {
	m.mu.Lock()
	v, ok := m.vms[name]
	if !ok {
		m.mu.Unlock()
		return VM{}, fmt.Errorf("VM %s: %w", name, ErrNotFound)
	}
	if v.placing {
		m.mu.Unlock()
		return VM{}, fmt.Errorf("VM %s: %w", name, ErrPlacing)
	}
	if v.Phase == PhaseRunning {
		if err := m.cfg.Store.Delete("", name); err != nil {
			m.mu.Unlock()
			return VM{}, fmt.Errorf("VM %s: deleting its ExternalWorkload: %w", name, err)
		}
	}
	if err := m.saveLocked(nil, name); err != nil {
		err = fmt.Errorf("VM %s not deleted, it keeps running: %w", name, err)
		if v.Phase == PhaseRunning {
			if perr := m.republishLocked(v); perr != nil {
				err = errors.Join(err, perr)
			}
		}
		m.mu.Unlock()
		return VM{}, err
	}
	delete(m.vms, name)
	m.countPhases()
	m.mu.Unlock()
	klog.InfoS("Deleted a VM", "vm", name, "phase", v.Phase, "node", klog.KRef("", v.Host))
	if m.cfg.Ledger != nil && v.Phase == PhaseRunning {
		m.releaseEntry(v.Host, name)
	}
	// Capacity freed here may let a pending VM in.
	m.Kick()
	return v.VM, nil
}

// republishLocked publishes Running v's ExternalWorkload again, after a
// delete that could not be saved. m.mu is held.
func (m *Manager) republishLocked(v *vm) error {
	w, err := m.workload(&v.VM)
	if err == nil {
		err = m.cfg.Store.Create(w)
	}
	if err != nil {
		return fmt.Errorf("publishing its ExternalWorkload again: %w", err)
	}
	return nil
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
