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
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
)

// This file keeps the ledgers in step with this manager's VMs: the
// entries of Running VMs put, those of gone VMs and pods removed (the
// sweep), and the ledgers of the selected hosts joined.

// entrySync is what syncEntries did to a ledger.
type entrySync struct {
	joined       bool
	put, removed int
}

// syncEntries makes l record this manager's VMs on l's node: the one rule
// of which entries of this placer a ledger holds. It joins l, puts the
// entry of each VM Running there that l lacks, and removes the entries of
// this placer whose VMs are neither Running there nor being placed there.
// It runs inside ledger changes and takes m.mu itself.
func (m *Manager) syncEntries(l *v1alpha1.NodeLedger) entrySync {
	lc := m.cfg.Ledger
	host := l.Name
	m.mu.Lock()
	defer m.mu.Unlock()
	var s entrySync
	s.joined = ledger.Join(l, lc.Placer, m.clock.Now())
	keep := map[string]bool{}
	for _, v := range m.vms {
		switch {
		case v.Phase == PhaseRunning && v.Host == host:
			keep[v.Name] = true
			if ledger.Find(l, ledger.Key{Kind: WorkloadKind, Name: v.Name}) == nil {
				ledger.Put(l, m.entryOf(v.Name, v.res))
				s.put++
			}
		case v.placing && v.target == host:
			keep[v.Name] = true
		}
	}
	s.removed = ledger.RemoveIf(l, func(e *v1alpha1.LedgerEntry) bool {
		return e.Placer == lc.Placer && e.Kind == WorkloadKind && !keep[e.Name]
	})
	return s
}

// releaseEntry removes from host's ledger the entries of VMs this manager
// no longer has there, after VM name was deleted or not placed. A node
// without a ledger is fine; a failure is logged, and the sweep retries.
func (m *Manager) releaseEntry(host, name string) {
	lc := m.cfg.Ledger
	ctx, cancel := context.WithTimeout(context.Background(), lc.Timeout)
	defer cancel()
	var s entrySync
	err := lc.Ledgers.Commit(ctx, host, ledger.Existing, func(l *v1alpha1.NodeLedger) error {
		s = m.syncEntries(l)
		return nil
	})
	switch {
	case errors.Is(err, ledger.ErrNoLedger):
	case err != nil:
		klog.ErrorS(err, "Could not remove a VM's ledger entry; the next reconcile retries", "vm", name, "node", klog.KRef("", host))
	default:
		m.cfg.Metrics.LedgerEntriesRemoved.WithLabelValues(WorkloadKind).Add(float64(s.removed))
		klog.V(4).InfoS("Released a VM's ledger entry", "vm", name, "node", klog.KRef("", host), "removed", s.removed)
	}
}

// podCheck identifies a read of the pod of a pod entry on a node.
type podCheck struct {
	node string
	key  ledger.Key
	uid  types.UID
}

// sweepLedgers brings the ledgers (as the informer shows them) in line
// with what this manager and the API server know:
//   - on a ledger where this placer's entries are not its VMs there
//     (syncEntries' rule), it commits that rule: a VM whose entry was
//     committed before a crash but never saved is released, a Running VM
//     without an entry recorded;
//   - on a ledger it has joined, it removes the pod entries of other
//     placers whose pods the API server says are gone (podGone), reading
//     each pod at most once per PodRecheck, and only when the pod
//     informer does not show it bound there;
//   - it queues the joins of the selected nodes whose ledger does not list
//     this placer.
//
// Sweeps are serialised by sweepMu.
func (m *Manager) sweepLedgers(ctx context.Context) {
	lc := m.cfg.Ledger
	m.sweepMu.Lock()
	defer m.sweepMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, lc.Timeout)
	defer cancel()
	ledgers, err := lc.View.List(everything)
	if err != nil {
		klog.ErrorS(err, "Could not list the ledgers")
		return
	}
	sort.Slice(ledgers, func(i, j int) bool { return ledgers[i].Name < ledgers[j].Name })
	m.mu.Lock()
	held := m.heldLocked()
	m.mu.Unlock()
	now := m.clock.Now()
	checked := map[podCheck]time.Time{}
	for _, l := range ledgers {
		stale := m.entriesStale(l, held[l.Name])
		if !stale && !ledger.Joined(l, lc.Placer) {
			continue // not a ledger of this placer's (yet): the joins see to it
		}
		var gone map[ledger.Key]types.UID
		if ledger.Joined(l, lc.Placer) {
			gone = m.gonePods(ctx, l, now, checked)
		}
		if !stale && len(gone) == 0 {
			continue
		}
		m.commitSweep(ctx, l.Name, gone)
	}
	m.podChecked = checked
	m.queueJoins()
}

// heldVMs are this manager's VMs on one host: Running (with what they
// use) and being placed.
type heldVMs struct {
	running map[string]bool
	placing map[string]bool
}

// heldLocked returns this manager's VMs per host; m.mu is held.
func (m *Manager) heldLocked() map[string]heldVMs {
	out := map[string]heldVMs{}
	get := func(host string) heldVMs {
		h, ok := out[host]
		if !ok {
			h = heldVMs{running: map[string]bool{}, placing: map[string]bool{}}
			out[host] = h
		}
		return h
	}
	for _, v := range m.vms {
		switch {
		case v.Phase == PhaseRunning:
			get(v.Host).running[v.Name] = true
		case v.placing && v.target != "":
			get(v.target).placing[v.Name] = true
		}
	}
	return out
}

// entriesStale reports whether l's entries of this placer differ from
// what syncEntries would make of them, given held, its VMs on l's node.
func (m *Manager) entriesStale(l *v1alpha1.NodeLedger, held heldVMs) bool {
	lc := m.cfg.Ledger
	recorded := 0
	for i := range l.Spec.Entries {
		e := &l.Spec.Entries[i]
		if e.Placer != lc.Placer || e.Kind != WorkloadKind {
			continue
		}
		if !held.running[e.Name] && !held.placing[e.Name] {
			return true
		}
		if held.running[e.Name] {
			recorded++
		}
	}
	return recorded < len(held.running)
}

// gonePods returns the pod entries of other placers in l whose pods are
// gone, by key, with the UID recorded. It reads each pod the informer does
// not show bound to l's node from the API server, unless it did less than
// PodRecheck ago; checked receives when each entry's pod was last read.
func (m *Manager) gonePods(ctx context.Context, l *v1alpha1.NodeLedger, now time.Time, checked map[podCheck]time.Time) map[ledger.Key]types.UID {
	lc := m.cfg.Ledger
	out := map[ledger.Key]types.UID{}
	for i := range l.Spec.Entries {
		e := &l.Spec.Entries[i]
		if e.Kind != v1alpha1.LedgerEntryKindPod || e.Placer == lc.Placer || m.podBoundHere(e, l.Name) {
			continue
		}
		k := podCheck{node: l.Name, key: ledger.KeyOf(e), uid: e.UID}
		if last, ok := m.podChecked[k]; ok && now.Sub(last) < lc.PodRecheck {
			checked[k] = last
			continue
		}
		checked[k] = now
		pod, err := lc.Pods.Pods(e.Namespace).Get(ctx, e.Name, metav1.GetOptions{})
		gone, why := podGone(e, l.Name, pod, err)
		switch {
		case gone:
			klog.V(4).InfoS("A ledger entry's pod is gone", "pod", klog.KRef(e.Namespace, e.Name), "node", klog.KRef("", l.Name),
				"placer", e.Placer, "why", why)
			out[ledger.KeyOf(e)] = e.UID
		case err != nil:
			klog.V(2).InfoS("Could not read a ledger entry's pod; keeping the entry", "pod", klog.KRef(e.Namespace, e.Name),
				"node", klog.KRef("", l.Name), "err", err)
		}
	}
	return out
}

// podBoundHere reports whether the pod informer shows the pod of entry e
// bound to node, unfinished, with the UID e records.
func (m *Manager) podBoundHere(e *v1alpha1.LedgerEntry, node string) bool {
	obj, ok, err := m.cfg.Pods.GetByKey(e.Namespace + "/" + e.Name)
	if err != nil || !ok {
		return false
	}
	pod, isPod := obj.(*v1.Pod)
	return isPod && pod.Spec.NodeName == node && (e.UID == "" || pod.UID == e.UID) && !podFinished(pod)
}

// podGone reports whether the pod that entry e on node records is gone for
// good, from the API server's answer (pod, err) to a GET of it, and why:
// it does not exist, it is another pod of the same name (another UID), it
// has finished, or it is bound to another node. A pod that exists and is
// not bound yet is not gone: its placer committed it and is binding it.
// An error other than NotFound says nothing.
func podGone(e *v1alpha1.LedgerEntry, node string, pod *v1.Pod, err error) (bool, string) {
	switch {
	case apierrors.IsNotFound(err):
		return true, "deleted"
	case err != nil:
		return false, ""
	case e.UID != "" && pod.UID != e.UID:
		return true, fmt.Sprintf("replaced by another pod of the same name (UID %s, the entry records %s)", pod.UID, e.UID)
	case podFinished(pod):
		return true, "finished (" + string(pod.Status.Phase) + ")"
	case pod.Spec.NodeName != "" && pod.Spec.NodeName != node:
		return true, "bound to node " + pod.Spec.NodeName
	}
	return false, ""
}

// commitSweep commits syncEntries' rule to host's ledger and removes the
// pod entries in gone whose UIDs still match. It reads the ledger afresh:
// the sweep acts on what the informer shows, which the copy last written
// may not hold yet.
func (m *Manager) commitSweep(ctx context.Context, host string, gone map[ledger.Key]types.UID) {
	lc := m.cfg.Ledger
	var s entrySync
	var pruned []string
	lc.Ledgers.Forget(host)
	err := lc.Ledgers.Commit(ctx, host, ledger.Existing, func(l *v1alpha1.NodeLedger) error {
		s = m.syncEntries(l)
		pruned = pruned[:0]
		ledger.RemoveIf(l, func(e *v1alpha1.LedgerEntry) bool {
			uid, ok := gone[ledger.KeyOf(e)]
			if ok && e.Kind == v1alpha1.LedgerEntryKindPod && e.UID == uid {
				pruned = append(pruned, e.Namespace+"/"+e.Name)
				return true
			}
			return false
		})
		return nil
	})
	switch {
	case errors.Is(err, ledger.ErrNoLedger):
	case err != nil:
		klog.ErrorS(err, "Could not sweep a ledger; the next reconcile retries", "node", klog.KRef("", host))
	default:
		m.cfg.Metrics.LedgerEntriesRemoved.WithLabelValues(WorkloadKind).Add(float64(s.removed))
		m.cfg.Metrics.LedgerEntriesRemoved.WithLabelValues(v1alpha1.LedgerEntryKindPod).Add(float64(len(pruned)))
		if s.put+s.removed+len(pruned) > 0 || s.joined {
			klog.V(2).InfoS("Swept a ledger", "node", klog.KRef("", host), "vmEntriesPut", s.put,
				"vmEntriesRemoved", s.removed, "podEntriesRemoved", pruned)
		}
	}
}

// queueJoins queues the selected nodes whose ledger, as the informer
// shows it, does not list this placer; a node whose join failed waits for
// its retry.
func (m *Manager) queueJoins() {
	nodes, err := m.cfg.Nodes.List(m.cfg.HostSelector)
	if err != nil {
		klog.ErrorS(err, "Could not list the nodes to join their ledgers")
		return
	}
	for _, node := range nodes {
		l, err := m.viewLedger(node.Name)
		if err != nil || ledger.Joined(l, m.cfg.Ledger.Placer) || m.joins.NumRequeues(node.Name) > 0 {
			continue
		}
		m.joins.Add(node.Name)
	}
}

// runJoins joins the ledgers of the queued nodes until the queue shuts
// down, retrying each failure later.
func (m *Manager) runJoins(ctx context.Context) {
	for {
		node, shutdown := m.joins.Get()
		if shutdown {
			return
		}
		if err := m.joinLedger(ctx, node); err != nil {
			klog.ErrorS(err, "Could not join a node's ledger; retrying", "node", klog.KRef("", node),
				"placer", m.cfg.Ledger.Placer, "attempts", m.joins.NumRequeues(node)+1)
			m.joins.AddRateLimited(node)
		} else {
			m.joins.Forget(node)
		}
		m.joins.Done(node)
	}
}

// joinLedger makes sure node's ledger exists and lists this placer (with
// this manager's VMs there recorded), if the node is still selected.
func (m *Manager) joinLedger(ctx context.Context, node string) error {
	n, err := m.cfg.Nodes.Get(node)
	if err != nil || !m.cfg.HostSelector.Matches(labels.Set(n.Labels)) {
		return nil // gone, or no longer selected
	}
	lc := m.cfg.Ledger
	ctx, cancel := context.WithTimeout(ctx, lc.Timeout)
	defer cancel()
	var s entrySync
	// The copy last seen may list this placer in a ledger since deleted.
	lc.Ledgers.Forget(node)
	err = lc.Ledgers.Commit(ctx, node, ledger.Create, func(l *v1alpha1.NodeLedger) error {
		s = m.syncEntries(l)
		return nil
	})
	if err != nil {
		return fmt.Errorf("joining the ledger of node %s as %s: %w", node, lc.Placer, err)
	}
	if s.joined {
		klog.V(2).InfoS("Joined a node's ledger", "node", klog.KRef("", node), "placer", lc.Placer, "vmEntriesPut", s.put)
	}
	return nil
}
