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
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	bslisters "github.com/batch-scheduler/batch-scheduler/pkg/generated/listers/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Ledger mode closes hybrid mode's race window: a pod bound by
// batch-scheduler and a VM placed at the same instant on one host. Both
// placers commit every placement to the host's NodeLedger (pkg/ledger)
// before it takes effect, and the API server serialises the commits, so
// each decides knowing the other's placements.
//
// The manager's rules:
//   - It joins the ledger of every node its host selector selects, in the
//     background (runJoins), and records each of its Running VMs there.
//   - A VM goes to a host only through a commit whose change checks that
//     the required placers have joined and that the VM fits the node's
//     allocatable after the ledger's entries and the bound pods the ledger
//     does not record; the change then adds the VM's entry. Only then is
//     the VM saved Running and published.
//   - The entries of this placer on a node are exactly its VMs Running
//     there and those being placed there (syncEntries); every commit of
//     the manager applies that rule, and Reconcile's sweep applies it to
//     ledgers whose informer view disagrees.
//   - The sweep also removes other placers' pod entries whose pods the API
//     server says are gone, so capacity flows back when their placer is
//     down.

// Defaults of LedgerConfig.
const (
	// DefaultLedgerPlacer is the name this manager joins ledgers under.
	DefaultLedgerPlacer = "vm-manager"
	// DefaultLedgerRequire is the placer that must have joined a ledger
	// before a VM goes to its node.
	DefaultLedgerRequire = "batch-scheduler"
	// DefaultPodRecheck is how long the sweep waits before it reads the
	// pod of a pod entry from the API server again.
	DefaultPodRecheck = 5 * time.Second
	// DefaultLedgerTimeout bounds one placement's commit, one removal and
	// one sweep.
	DefaultLedgerTimeout = 30 * time.Second
)

// Retries of the joins: from joinRetryBase, doubling, up to joinRetryMax.
const (
	joinRetryBase = 500 * time.Millisecond
	joinRetryMax  = 30 * time.Second
	joinWorkers   = 2
)

// LedgerConfig configures ledger mode.
type LedgerConfig struct {
	// Ledgers commits changes to the nodes' ledgers.
	Ledgers *ledger.Ledgers
	// View lists the ledgers as an informer last saw them. It guides the
	// choice of a host, GET /hosts, the over-commit check and the sweep;
	// the commits themselves decide on the ledger as the API server has
	// it.
	View bslisters.NodeLedgerLister
	// Pods reads a pod from the API server, to confirm that the pod of
	// another placer's entry is gone before the entry is removed. It must
	// not be served from an informer, which may not have seen a pod
	// created a moment ago.
	Pods corev1client.PodsGetter
	// Placer is this manager's name in the ledgers (DefaultLedgerPlacer
	// if empty).
	Placer string
	// Require are the placers that must have joined a node's ledger
	// before a VM goes to the node.
	Require []string
	// PodRecheck is how long the sweep waits before it reads the same
	// pod again (DefaultPodRecheck if zero).
	PodRecheck time.Duration
	// Timeout bounds one commit of a placement, one removal and one
	// sweep (DefaultLedgerTimeout if zero).
	Timeout time.Duration
}

// complete checks c and returns a copy with the defaults filled in.
func (c *LedgerConfig) complete() (*LedgerConfig, error) {
	switch {
	case c.Ledgers == nil:
		return nil, errors.New("manager config: Ledger.Ledgers is nil")
	case c.View == nil:
		return nil, errors.New("manager config: Ledger.View is nil")
	case c.Pods == nil:
		return nil, errors.New("manager config: Ledger.Pods is nil")
	}
	out := *c
	out.Require = append([]string(nil), c.Require...)
	if out.Placer == "" {
		out.Placer = DefaultLedgerPlacer
	}
	if out.PodRecheck <= 0 {
		out.PodRecheck = DefaultPodRecheck
	}
	if out.Timeout <= 0 {
		out.Timeout = DefaultLedgerTimeout
	}
	return &out, nil
}

// viewLedger returns host's ledger as the informer last saw it; nil when
// it saw none. The ledger is shared: it must not be changed.
func (m *Manager) viewLedger(host string) (*v1alpha1.NodeLedger, error) {
	l, err := m.cfg.Ledger.View.Get(host)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the ledger of node %s: %w", host, err)
	}
	return l, nil
}

// entryOf is the ledger entry of this manager's VM name using res.
func (m *Manager) entryOf(name string, res resources.Resource) v1alpha1.LedgerEntry {
	return v1alpha1.LedgerEntry{Placer: m.cfg.Ledger.Placer, Kind: WorkloadKind, Name: name, Resources: cpuMemory(res).ToList()}
}

// ledgerUse is one host's accounting by the ledger rule.
type ledgerUse struct {
	allocatable resources.Resource
	// podEntries and otherEntries are what the ledger's pod entries and
	// its other entries (VMs) record.
	podEntries, otherEntries resources.Resource
	// podsOutside is what the bound, unfinished pods whose UIDs the
	// ledger does not record request; vmsOutside what this manager's VMs
	// on the host without an entry use.
	podsOutside, vmsOutside resources.Resource
}

// used is everything the rule counts on the host.
func (u ledgerUse) used() resources.Resource {
	return sumOf(u.podEntries, u.otherEntries, u.podsOutside, u.vmsOutside)
}

// free is what is left for VMs on the host.
func (u ledgerUse) free() resources.Resource {
	f := u.allocatable.Clone()
	f.Sub(u.used())
	return cpuMemory(f)
}

// useOnLedger accounts node by the ledger rule: l's entries (l may be
// nil), the pods bound to node that l does not record and, of own (this
// manager's VMs on node), those l has no entry for.
func (m *Manager) useOnLedger(node *v1.Node, l *v1alpha1.NodeLedger, own []*vm) (ledgerUse, error) {
	u := ledgerUse{allocatable: cpuMemory(resources.FromList(node.Status.Allocatable))}
	if l != nil {
		for i := range l.Spec.Entries {
			e := &l.Spec.Entries[i]
			r := cpuMemory(resources.FromList(e.Resources))
			if e.Kind == v1alpha1.LedgerEntryKindPod {
				u.podEntries.Add(r)
			} else {
				u.otherEntries.Add(r)
			}
		}
	}
	recorded := ledger.PodUIDs(l)
	objs, err := m.cfg.Pods.ByIndex(PodNodeNameIndex, node.Name)
	if err != nil {
		return u, fmt.Errorf("listing the pods bound to node %s: %w", node.Name, err)
	}
	for _, obj := range objs {
		pod, ok := obj.(*v1.Pod)
		if !ok || podFinished(pod) || recorded[pod.UID] {
			continue
		}
		u.podsOutside.Add(cpuMemory(resources.PodRequests(pod)))
	}
	for _, v := range own {
		if l == nil || ledger.Find(l, ledger.Key{Kind: WorkloadKind, Name: v.Name}) == nil {
			u.vmsOutside.Add(v.res)
		}
	}
	return u, nil
}

// podFinished reports whether pod has terminated: it holds nothing on its
// node any more.
func podFinished(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// shortOf returns why a VM using req does not fit on host, or nil.
func (u ledgerUse) shortOf(host string, req resources.Resource) *refusal {
	free := u.free()
	short := free.Insufficient(cpuMemory(req))
	if len(short) == 0 {
		return nil
	}
	parts := make([]string, len(short))
	for i, name := range short {
		entries := sumOf(u.podEntries, u.otherEntries)
		parts[i] = fmt.Sprintf("%s %s requested, %s free (ledger entries use %s: pods %s, VMs %s; pods not in the ledger %s",
			name, amount(name, req), amount(name, free), amount(name, entries), amount(name, u.podEntries),
			amount(name, u.otherEntries), amount(name, u.podsOutside))
		if !u.vmsOutside.IsZero() {
			parts[i] += "; this manager's VMs not in the ledger " + amount(name, u.vmsOutside)
		}
		parts[i] += "; of " + amount(name, u.allocatable) + ")"
	}
	return &refusal{ReasonInsufficientCapacity, host + ": " + strings.Join(parts, "; ")}
}

// notJoined is the refusal of a host whose ledger lacks the placers
// missing.
func notJoined(host string, missing []string) *refusal {
	verb := "has"
	if len(missing) > 1 {
		verb = "have"
	}
	return &refusal{ReasonLedgerNotJoined, fmt.Sprintf("%s: %s %s not joined its ledger", host, strings.Join(missing, ", "), verb)}
}

// fitLedgerView is fitHost in ledger mode, on the informer's view of the
// node's ledger: the required placers must have joined it, and the VM
// must fit by the ledger rule (own are this manager's VMs on the node).
func (m *Manager) fitLedgerView(node *v1.Node, req resources.Resource, own []*vm) (*refusal, error) {
	l, err := m.viewLedger(node.Name)
	if err != nil {
		return nil, err
	}
	if missing := ledger.Missing(l, m.cfg.Ledger.Require); len(missing) > 0 {
		return notJoined(node.Name, missing), nil
	}
	u, err := m.useOnLedger(node, l, own)
	if err != nil {
		return nil, err
	}
	return u.shortOf(node.Name, req), nil
}

// ledgerPlacement is the outcome of placing a VM through the ledgers.
type ledgerPlacement struct {
	// host is where the VM's entry was committed; empty if nowhere.
	host string
	// why says why the VM was not placed.
	why *refusal
	// unsure is a host whose commit failed without a clear answer: its
	// ledger may hold the VM's entry.
	unsure string
}

// createOnLedger is Create in ledger mode: it reserves the name, places
// the VM through the ledgers without m.mu, then saves and publishes it.
func (m *Manager) createOnLedger(v *vm) (VM, error) {
	m.mu.Lock()
	if _, ok := m.vms[v.Name]; ok {
		m.mu.Unlock()
		return VM{}, fmt.Errorf("VM %s: %w", v.Name, ErrExists)
	}
	m.seq++
	v.seq = m.seq
	v.placing, v.unsaved = true, true
	m.vms[v.Name] = v
	m.countPhases()
	m.mu.Unlock()

	p, err := m.placeOnLedgers(v)
	m.mu.Lock()
	if err == nil && p.why == nil {
		if err = m.runLocked(v, p.host); err != nil {
			err = fmt.Errorf("VM %s not created: %w", v.Name, err)
			p.unsure = p.host
		}
	}
	if err != nil || p.why != nil {
		delete(m.vms, v.Name)
		m.countPhases()
		m.mu.Unlock()
		if p.unsure != "" {
			// The VM is forgotten: the removal takes its entry out.
			m.releaseEntry(p.unsure, v.Name)
		}
		if err != nil {
			return VM{}, err
		}
		return VM{}, m.refuse(v, p.why)
	}
	m.countPhases()
	out := v.VM
	m.mu.Unlock()
	return out, nil
}

// placePendingOnLedgers places the pending VMs, oldest first, through the
// ledgers; each that does not fit stays pending with why.
func (m *Manager) placePendingOnLedgers() {
	m.mu.Lock()
	pending := m.pendingLocked()
	m.mu.Unlock()
	for _, v := range pending {
		m.mu.Lock()
		if m.vms[v.Name] != v || v.Phase != PhasePending || v.placing {
			m.mu.Unlock()
			continue // deleted, or taken by another Reconcile
		}
		v.placing = true
		waited := v.Message
		m.mu.Unlock()

		p, err := m.placeOnLedgers(v)
		m.mu.Lock()
		v.Message = waited
		switch {
		case err != nil:
			klog.ErrorS(err, "Could not place a pending VM", "vm", v.Name)
			v.Message = "could not be placed: " + err.Error()
		case p.why != nil:
			m.stillWaits(v, p.why.reason, p.why.message)
		default:
			if err := m.runLocked(v, p.host); err != nil {
				klog.ErrorS(err, "Could not place a pending VM", "vm", v.Name, "node", klog.KRef("", p.host))
				v.Message = fmt.Sprintf("could not be placed on %s: %v", p.host, err)
				p.unsure = p.host
			}
		}
		if v.Phase != PhaseRunning {
			v.placing, v.target = false, ""
		}
		m.mu.Unlock()
		if p.unsure != "" {
			m.releaseEntry(p.unsure, v.Name)
		}
	}
}

// staleView reports whether why, a refusal on the informer's view of a
// ledger, may not hold on the ledger as the API server has it.
func staleView(why *refusal) bool {
	return why.reason == ReasonLedgerNotJoined || why.reason == ReasonInsufficientCapacity
}

// placeOnLedgers chooses a host for v, which is being placed, from the
// local view (first fit, or the requested host), and commits v's entry to
// its ledger; when the ledger refuses for want of room or of a placer, it
// tries the next host that fits. m.mu is not held; it is taken to choose.
func (m *Manager) placeOnLedgers(v *vm) (ledgerPlacement, error) {
	rejected := map[string]string{}
	for {
		m.mu.Lock()
		v.target = ""
		c := m.snapshot(m.clock.Now())
		c.rejected = rejected
		host, why, err := c.place(v.RequestedHost, v.res)
		if why != nil && v.RequestedHost != "" && staleView(why) {
			// The view of the requested host's ledger may lag the API
			// server (a placer joined, an entry left); its commit
			// answers from the ledger itself.
			host, why = v.RequestedHost, nil
		}
		if host != "" {
			v.target, v.Message = host, "being placed on "+host
		}
		m.mu.Unlock()
		if err != nil {
			return ledgerPlacement{}, fmt.Errorf("placing VM %s: %w", v.Name, err)
		}
		if why != nil {
			return ledgerPlacement{why: why}, nil
		}
		err = m.commitVM(v, host)
		var r *refusal
		switch {
		case err == nil:
			return ledgerPlacement{host: host}, nil
		case errors.As(err, &r):
			if v.RequestedHost != "" {
				return ledgerPlacement{why: r}, nil
			}
			klog.V(2).InfoS("The ledger refused a VM; trying the next host", "vm", v.Name, "node", klog.KRef("", host), "reason", r.reason, "message", r.message)
			rejected[host] = r.message
		default:
			return ledgerPlacement{unsure: host, why: &refusal{ReasonLedgerUnavailable,
				fmt.Sprintf("%s: the placement could not be committed to the node's ledger: %v", host, err)}}, nil
		}
	}
}

// commitVM commits v's entry to host's ledger, if the required placers
// have joined it and v fits there by the ledger rule. It returns nil once
// committed, a *refusal (wrapped) if the ledger as the API server has it
// refuses, or another error. A refusal against the copy of the ledger
// last seen is checked again on a fresh read.
func (m *Manager) commitVM(v *vm, host string) error {
	lc := m.cfg.Ledger
	node, err := m.cfg.Nodes.Get(host)
	if err != nil {
		return &refusal{ReasonUnknownHost, host + ": no such node"}
	}
	entry := m.entryOf(v.Name, v.res)
	change := func(l *v1alpha1.NodeLedger) error {
		m.syncEntries(l)
		if missing := ledger.Missing(l, lc.Require); len(missing) > 0 {
			return notJoined(host, missing)
		}
		// syncEntries recorded every Running VM of this manager there,
		// so none is outside the ledger.
		u, err := m.useOnLedger(node, l, nil)
		if err != nil {
			return err
		}
		if why := u.shortOf(host, v.res); why != nil {
			return why
		}
		ledger.Put(l, entry)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lc.Timeout)
	defer cancel()
	err = lc.Ledgers.Commit(ctx, host, ledger.Create, change)
	var r *refusal
	if errors.As(err, &r) {
		lc.Ledgers.Forget(host)
		err = lc.Ledgers.Commit(ctx, host, ledger.Create, change)
	}
	switch {
	case err == nil:
		m.cfg.Metrics.LedgerCommits.WithLabelValues(CommitCommitted).Inc()
		klog.V(4).InfoS("Committed a VM to a ledger", "vm", v.Name, "node", klog.KRef("", host))
	case errors.As(err, &r):
		m.cfg.Metrics.LedgerCommits.WithLabelValues(CommitRefused).Inc()
	default:
		m.cfg.Metrics.LedgerCommits.WithLabelValues(CommitFailed).Inc()
		klog.ErrorS(err, "Could not commit a VM to a ledger", "vm", v.Name, "node", klog.KRef("", host))
	}
	return err
}
