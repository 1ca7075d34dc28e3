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
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// This file is the manager's loop (Run, Reconcile: the pending VMs
// retried as the cluster changes) and what it reports (Demand, the
// phase counts).

// Kick asks Run to retry the pending VMs soon. It never blocks; kicks
// that come while one is already queued are merged.
func (m *Manager) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// EventHandler returns an informer event handler that kicks the manager on
// every change: a node, pod, grant or ledger change may make room, and a
// new node may need its ledger joined.
func (m *Manager) EventHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.Kick() },
		UpdateFunc: func(any, any) { m.Kick() },
		DeleteFunc: func(any) { m.Kick() },
	}
}

// Run retries the pending VMs and checks the hosts for over-commitment on
// every Kick and every RetryInterval, until ctx is done. In ledger mode it
// also joins the ledgers of the selected nodes in the background. Run is
// called once.
func (m *Manager) Run(ctx context.Context) {
	var workers sync.WaitGroup
	if m.joins != nil {
		for range joinWorkers {
			workers.Go(func() { m.runJoins(ctx) })
		}
		defer func() {
			m.joins.ShutDown()
			workers.Wait()
		}()
	}
	t := time.NewTicker(m.cfg.RetryInterval)
	defer t.Stop()
	for {
		m.Reconcile(ctx)
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
// exceed allocatable (or, in ledger mode, what the ledger records). In
// ledger mode it then sweeps the ledgers (see sweepLedgers): it removes
// the entries of VMs this manager no longer runs and those of pods that
// are gone, and queues the joins still to make.
func (m *Manager) Reconcile(ctx context.Context) {
	if m.cfg.Ledger != nil {
		m.placePendingOnLedgers()
		m.mu.Lock()
		m.countPhases()
		m.checkOvercommit(m.snapshot(m.clock.Now()))
		m.mu.Unlock()
		m.sweepLedgers(ctx)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	c := m.snapshot(now)
	for _, v := range m.pendingLocked() {
		host, why, err := c.place(v.RequestedHost, v.res)
		switch {
		case err != nil:
			klog.ErrorS(err, "Could not place a pending VM", "vm", v.Name)
		case why != nil:
			m.stillWaits(v, why.reason, why.message)
		default:
			if err := m.runLocked(v, host); err != nil {
				klog.ErrorS(err, "Could not place a pending VM", "vm", v.Name, "node", klog.KRef("", host))
				v.Message = fmt.Sprintf("could not be placed on %s: %v", host, err)
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

// pendingLocked returns the pending VMs not being placed, oldest first.
// m.mu is held.
func (m *Manager) pendingLocked() []*vm {
	pending := make([]*vm, 0)
	for _, v := range m.vms {
		if v.Phase == PhasePending && !v.placing {
			pending = append(pending, v)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].seq < pending[j].seq })
	return pending
}

// stillWaits records why pending v was not placed; m.mu is held.
func (m *Manager) stillWaits(v *vm, reason, message string) {
	if message != v.Message {
		klog.V(2).InfoS("VM still waits for capacity", "vm", v.Name, "reason", reason, "message", message)
	}
	v.Message = message
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
// the running ones (and those being placed) use, per host. In two-level
// mode it acknowledges the grants it has applied: under m.mu, which every
// placement holds while it reads the grants, it first reads the
// framework's grants from the store, then counts the VMs; every VM placed
// under one of those versions is then in Used, and the store only moves
// forward, so later placements see those versions or newer ones.
func (m *Manager) Demand() *demand.Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &demand.Report{Framework: m.cfg.Framework, Time: metav1.NewTime(m.clock.Now()),
		// The manager serves only once its informers have synced and its
		// state is loaded.
		Synced: true}
	if m.cfg.Grants != nil {
		r.ObservedGrants = m.observedGrants()
	}
	var unmet, largest resources.Resource
	used := map[string]resources.Resource{}
	for _, v := range m.vms {
		host := v.Host
		if v.placing {
			host = v.target
		}
		switch {
		case v.Phase == PhaseRunning || host != "":
			u := used[host]
			u.Add(v.res)
			used[host] = u
		case v.placing:
			// Between two hosts: neither waiting nor using anything.
		default:
			r.Waiting++
			unmet.Add(v.res)
			largest.MilliCPU = max(largest.MilliCPU, v.res.MilliCPU)
			largest.Memory = max(largest.Memory, v.res.Memory)
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

// observedGrants maps the name of each of the framework's grants in the
// store, whatever its phase, to its resourceVersion. m.mu is held.
func (m *Manager) observedGrants() map[string]string {
	out := map[string]string{}
	for _, obj := range m.cfg.Grants.List() {
		g, ok := obj.(*v1alpha1.Grant)
		if !ok || g.Spec.Framework != m.cfg.Framework || g.ResourceVersion == "" {
			continue
		}
		out[g.Name] = g.ResourceVersion
	}
	return out
}
