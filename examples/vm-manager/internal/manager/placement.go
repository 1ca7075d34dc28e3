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
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// PodNodeNameIndex names the index of the pod indexer by spec.nodeName.
// The pod informer handed to New must have it (see PodIndexers).
const PodNodeNameIndex = "spec.nodeName"

// PodIndexers returns the indexers the pod informer needs: pods by the
// node they are bound to.
func PodIndexers() cache.Indexers {
	return cache.Indexers{PodNodeNameIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{pod.Spec.NodeName}, nil
	}}
}

// Reasons a VM is refused (hybrid mode) or waits (two-level mode); the
// reason label of the refusal metric and the "reason" of an API error.
const (
	// ReasonInsufficientCapacity: the host's allocatable minus its pods
	// and VMs is short of the VM.
	ReasonInsufficientCapacity = "InsufficientCapacity"
	// ReasonGrantExhausted: the framework's grants on the host minus its
	// VMs there are short of the VM.
	ReasonGrantExhausted = "GrantExhausted"
	// ReasonNoGrant: the framework has no live grant on the host.
	ReasonNoGrant = "NoGrant"
	// ReasonUnknownHost: the requested host is not a known Node.
	ReasonUnknownHost = "UnknownHost"
	// ReasonHostUnusable: the host is unschedulable or not Ready.
	ReasonHostUnusable = "HostUnusable"
	// ReasonNoHosts: there is no node at all.
	ReasonNoHosts = "NoHosts"
	// ReasonNoHostFits: no host fits the VM, for the reasons listed in
	// the message.
	ReasonNoHostFits = "NoHostFits"
	// ReasonLedgerNotJoined (ledger mode): a placer that must have joined
	// the host's ledger (LedgerConfig.Require) has not.
	ReasonLedgerNotJoined = "LedgerNotJoined"
	// ReasonLedgerUnavailable (ledger mode): the placement could not be
	// committed to the host's ledger (the API server is unreachable, say);
	// the admin API answers 503.
	ReasonLedgerUnavailable = "LedgerUnavailable"
)

// vmResources is what a VM of that cpu and memory uses on its host.
func vmResources(cpu, memory resource.Quantity) resources.Resource {
	return resources.FromList(v1.ResourceList{v1.ResourceCPU: cpu, v1.ResourceMemory: memory})
}

// cpuMemory keeps only the CPU and memory of r, the resources a VM uses.
func cpuMemory(r resources.Resource) resources.Resource {
	return resources.Resource{MilliCPU: r.MilliCPU, Memory: r.Memory}
}

// capacity is what the manager knows of the cluster at one moment, read
// under the manager's lock for one round of placements.
type capacity struct {
	m *Manager
	// granted is, in two-level mode, the framework's live grants per host;
	// nil in hybrid mode.
	granted map[string]resources.Resource
	// vms is what this manager's VMs use, per host: the Running ones and
	// those being placed there. own lists them.
	vms map[string]resources.Resource
	own map[string][]*vm
	// rejected holds, in ledger mode, the hosts whose ledger refused the
	// VM being placed, with why: place skips them and lists why.
	rejected map[string]string
}

// snapshot reads the grants and the VMs' usage; m.mu is held.
func (m *Manager) snapshot(now time.Time) *capacity {
	c := &capacity{m: m, vms: map[string]resources.Resource{}, own: map[string][]*vm{}}
	for _, vm := range m.vms {
		host := vm.Host
		if vm.placing {
			host = vm.target
		}
		if host == "" {
			continue
		}
		u := c.vms[host]
		u.Add(vm.res)
		c.vms[host] = u
		c.own[host] = append(c.own[host], vm)
	}
	if m.cfg.Grants != nil {
		c.granted = m.liveGrants(now)
	}
	return c
}

// liveGrants sums the framework's live grants by host.
func (m *Manager) liveGrants(now time.Time) map[string]resources.Resource {
	out := map[string]resources.Resource{}
	for _, obj := range m.cfg.Grants.List() {
		g, ok := obj.(*v1alpha1.Grant)
		if !ok || !grantLive(g, m.cfg.Framework, now) {
			continue
		}
		sum := out[g.Spec.NodeName]
		sum.Add(cpuMemory(resources.FromList(g.Spec.Resources)))
		out[g.Spec.NodeName] = sum
	}
	return out
}

// grantLive reports whether g gives framework capacity at now: it is the
// framework's, Active (or not yet observed) and not expired.
func grantLive(g *v1alpha1.Grant, framework string, now time.Time) bool {
	if g.Spec.Framework != framework {
		return false
	}
	if g.Status.Phase != "" && g.Status.Phase != v1alpha1.GrantActive {
		return false
	}
	return g.Spec.ExpiresAt == nil || now.Before(g.Spec.ExpiresAt.Time)
}

// hostUse is one host's accounting.
type hostUse struct {
	allocatable, pods, vms resources.Resource
}

// free is what is left for VMs on the host. Pod slots are not counted: a
// VM takes none.
func (h hostUse) free() resources.Resource {
	f := h.allocatable.Clone()
	f.Sub(h.pods)
	f.Sub(h.vms)
	return cpuMemory(f)
}

// use returns the host's accounting; node is the host's Node.
func (c *capacity) use(node *v1.Node) (hostUse, error) {
	h := hostUse{allocatable: cpuMemory(resources.FromList(node.Status.Allocatable)), vms: c.vms[node.Name]}
	objs, err := c.m.cfg.Pods.ByIndex(PodNodeNameIndex, node.Name)
	if err != nil {
		return h, fmt.Errorf("listing the pods bound to node %s: %w", node.Name, err)
	}
	for _, obj := range objs {
		pod, ok := obj.(*v1.Pod)
		if !ok || podFinished(pod) {
			continue
		}
		h.pods.Add(cpuMemory(resources.PodRequests(pod)))
	}
	return h, nil
}

// refusal says why a VM was not placed.
type refusal struct {
	reason  string
	message string
}

func (r *refusal) Error() string { return r.message }

// nodeUnusable returns why node cannot take VMs, or "".
func nodeUnusable(node *v1.Node) string {
	if node.Spec.Unschedulable {
		return "unschedulable"
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			if c.Status == v1.ConditionTrue {
				return ""
			}
			return fmt.Sprintf("not Ready (Ready is %s)", c.Status)
		}
	}
	return "not Ready (no Ready condition)"
}

// unusable returns why node cannot take VMs, or "": it is unschedulable,
// not Ready, or not selected by the host selector.
func (m *Manager) unusable(node *v1.Node) string {
	if why := nodeUnusable(node); why != "" {
		return why
	}
	if !m.cfg.HostSelector.Matches(labels.Set(node.Labels)) {
		return fmt.Sprintf("not selected by the host selector %q", m.cfg.HostSelector.String())
	}
	return ""
}

// fitHost reports whether a VM using req fits on node, and if not, why.
func (c *capacity) fitHost(node *v1.Node, req resources.Resource) (*refusal, error) {
	if why := c.m.unusable(node); why != "" {
		return &refusal{ReasonHostUnusable, node.Name + ": " + why}, nil
	}
	if c.m.cfg.Ledger != nil {
		return c.m.fitLedgerView(node, req, c.own[node.Name])
	}
	if c.granted != nil {
		granted, ok := c.granted[node.Name]
		if !ok {
			return &refusal{ReasonNoGrant, fmt.Sprintf("%s: no live grant for framework %s", node.Name, c.m.cfg.Framework)}, nil
		}
		vms := c.vms[node.Name]
		left := granted.Clone()
		left.Sub(vms)
		if short := left.Insufficient(req); len(short) > 0 {
			parts := make([]string, len(short))
			for i, name := range short {
				parts[i] = fmt.Sprintf("%s %s requested, %s left in the grants (VMs use %s of %s granted)", name,
					amount(name, req), amount(name, left), amount(name, vms), amount(name, granted))
			}
			return &refusal{ReasonGrantExhausted, node.Name + ": " + strings.Join(parts, "; ")}, nil
		}
	}
	h, err := c.use(node)
	if err != nil {
		return nil, err
	}
	free := h.free()
	if short := free.Insufficient(req); len(short) > 0 {
		parts := make([]string, len(short))
		for i, name := range short {
			parts[i] = fmt.Sprintf("%s %s requested, %s free (pods use %s, VMs use %s of %s)", name,
				amount(name, req), amount(name, free), amount(name, h.pods), amount(name, h.vms), amount(name, h.allocatable))
		}
		return &refusal{ReasonInsufficientCapacity, node.Name + ": " + strings.Join(parts, "; ")}, nil
	}
	return nil, nil
}

// place chooses a host for a VM using req: host if it is not empty, else
// the first host by name that fits. It returns the host, or why none fits.
func (c *capacity) place(host string, req resources.Resource) (string, *refusal, error) {
	if host != "" {
		node, err := c.m.cfg.Nodes.Get(host)
		if err != nil {
			return "", &refusal{ReasonUnknownHost, host + ": no such node"}, nil
		}
		r, err := c.fitHost(node, req)
		if err != nil || r != nil {
			return "", r, err
		}
		return host, nil, nil
	}
	nodes, missing, err := c.candidates()
	if err != nil {
		return "", nil, err
	}
	if len(nodes) == 0 && len(missing) == 0 {
		switch {
		case c.granted != nil:
			return "", &refusal{ReasonNoGrant, "no live grant for framework " + c.m.cfg.Framework + " on any host"}, nil
		case !c.m.cfg.HostSelector.Empty():
			return "", &refusal{ReasonNoHosts, fmt.Sprintf("no nodes selected by the host selector %q", c.m.cfg.HostSelector.String())}, nil
		}
		return "", &refusal{ReasonNoHosts, "no nodes"}, nil
	}
	why := make([]string, 0, len(nodes)+len(missing))
	for _, name := range missing {
		why = append(why, name+": granted, but no such node")
	}
	for _, node := range nodes {
		if msg, ok := c.rejected[node.Name]; ok {
			why = append(why, msg)
			continue
		}
		r, err := c.fitHost(node, req)
		if err != nil {
			return "", nil, err
		}
		if r == nil {
			return node.Name, nil, nil
		}
		why = append(why, r.message)
	}
	const maxListed = 10
	if len(why) > maxListed {
		why = append(why[:maxListed], fmt.Sprintf("and %d more", len(why)-maxListed))
	}
	return "", &refusal{ReasonNoHostFits, fmt.Sprintf("no host fits cpu %s, memory %s: %s",
		amount(v1.ResourceCPU, req), amount(v1.ResourceMemory, req), strings.Join(why, "; "))}, nil
}

// candidates returns the hosts first fit tries, sorted by name: the nodes
// the host selector selects in hybrid mode; in two-level mode only the
// nodes with a live grant, and the granted names that are not nodes.
func (c *capacity) candidates() (nodes []*v1.Node, missing []string, err error) {
	if c.granted == nil {
		nodes, err = c.m.cfg.Nodes.List(c.m.cfg.HostSelector)
		if err != nil {
			return nil, nil, fmt.Errorf("listing nodes: %w", err)
		}
	} else {
		for name := range c.granted {
			node, err := c.m.cfg.Nodes.Get(name)
			if err != nil {
				missing = append(missing, name)
				continue
			}
			nodes = append(nodes, node)
		}
		sort.Strings(missing)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, missing, nil
}

// amount renders r's amount of name for people: CPU in cores ("0.5"),
// memory in binary units ("4Gi").
func amount(name v1.ResourceName, r resources.Resource) string {
	switch name {
	case v1.ResourceCPU:
		return strconv.FormatFloat(float64(r.MilliCPU)/1000, 'f', -1, 64)
	case v1.ResourceMemory:
		return resource.NewQuantity(r.Memory, resource.BinarySI).String()
	default:
		return strconv.FormatInt(r.Scalar[name], 10)
	}
}

// Host is one host's accounting as the admin API shows it (GET /hosts):
// what the manager believes is there, from its informers and its VMs.
type Host struct {
	Name string `json:"name"`
	// Allocatable is the node's allocatable CPU and memory.
	Allocatable v1.ResourceList `json:"allocatable"`
	// Pods is what the bound, unfinished pods request; VMs is what the
	// manager's VMs use there (Running, or being placed).
	Pods v1.ResourceList `json:"pods"`
	VMs  v1.ResourceList `json:"vms"`
	// Free is what is left for VMs: in ledger mode by the ledger rule
	// (allocatable less the ledger's entries, the pods it does not record
	// and the VMs it does not record).
	Free v1.ResourceList `json:"free"`
	// Unusable says why the host takes no VM (unschedulable, not Ready,
	// not selected by the host selector); empty if it does.
	Unusable string `json:"unusable,omitempty"`
	// Ledger is the node's ledger as last seen, in ledger mode.
	Ledger *HostLedger `json:"ledger,omitempty"`
}

// HostLedger is a node's ledger as GET /hosts shows it.
type HostLedger struct {
	// Exists is false while the node has no ledger.
	Exists bool `json:"exists"`
	// Placers have joined the ledger; Missing are the required placers
	// that have not: no VM goes to the node while any is missing.
	Placers []string `json:"placers"`
	Missing []string `json:"missing,omitempty"`
	// Entries counts the entries; PodEntries and VMEntries are what the
	// pod entries and the other entries record.
	Entries    int             `json:"entries"`
	PodEntries v1.ResourceList `json:"podEntries"`
	VMEntries  v1.ResourceList `json:"vmEntries"`
	// PodsOutside is what the bound pods the ledger does not record
	// request; VMsOutside what the manager's VMs it does not record use.
	PodsOutside v1.ResourceList `json:"podsOutside"`
	VMsOutside  v1.ResourceList `json:"vmsOutside"`
}

// Hosts returns the accounting of every node, sorted by name.
func (m *Manager) Hosts() ([]Host, error) {
	nodes, err := m.cfg.Nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing the nodes: %w", err)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.snapshot(m.clock.Now())
	out := make([]Host, 0, len(nodes))
	for _, node := range nodes {
		h, err := c.use(node)
		if err != nil {
			return nil, err
		}
		host := Host{Name: node.Name, Allocatable: h.allocatable.ToList(), Pods: h.pods.ToList(),
			VMs: h.vms.ToList(), Free: h.free().ToList(), Unusable: m.unusable(node)}
		if m.cfg.Ledger != nil {
			l, err := m.viewLedger(node.Name)
			if err != nil {
				return nil, err
			}
			u, err := m.useOnLedger(node, l, c.own[node.Name])
			if err != nil {
				return nil, err
			}
			hl := &HostLedger{Exists: l != nil, Placers: []string{}, Missing: ledger.Missing(l, m.cfg.Ledger.Require),
				PodEntries: u.podEntries.ToList(), VMEntries: u.otherEntries.ToList(),
				PodsOutside: u.podsOutside.ToList(), VMsOutside: u.vmsOutside.ToList()}
			if l != nil {
				hl.Entries = len(l.Spec.Entries)
				for _, p := range l.Spec.Placers {
					hl.Placers = append(hl.Placers, p.Name)
				}
			}
			host.Ledger = hl
			host.Free = u.free().ToList()
		}
		out = append(out, host)
	}
	return out, nil
}

// checkOvercommit finds the hosts where this manager's VMs exceed its
// grants, or pods and VMs exceed allocatable (in ledger mode, where a
// ledger exists: what the ledger records and the pods and VMs it does not
// record); it logs each host when it goes over and when it clears, and
// sets the gauge. m.mu is held.
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
		if why := m.overLedger(node, c.own[host]); why != "" {
			now[host] = why
			byLimit[LimitAllocatable]++
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

// overLedger says, in ledger mode, how node is over its allocatable by
// the ledger rule; "" when it is not, or when the node has no ledger
// (the plain rule then applies). own are the manager's VMs there.
func (m *Manager) overLedger(node *v1.Node, own []*vm) string {
	if m.cfg.Ledger == nil {
		return ""
	}
	l, err := m.viewLedger(node.Name)
	if err != nil || l == nil {
		return ""
	}
	u, err := m.useOnLedger(node, l, own)
	if err != nil {
		return ""
	}
	if f := u.free(); f.MilliCPU >= 0 && f.Memory >= 0 {
		return ""
	}
	return fmt.Sprintf("ledger entries use %s (pods %s, VMs %s), pods not in the ledger %s, VMs not in the ledger %s, of %s allocatable",
		sumOf(u.podEntries, u.otherEntries).String(), u.podEntries.String(), u.otherEntries.String(),
		u.podsOutside.String(), u.vmsOutside.String(), u.allocatable.String())
}

// sumOf adds rs up.
func sumOf(rs ...resources.Resource) resources.Resource {
	var t resources.Resource
	for _, r := range rs {
		t.Add(r)
	}
	return t
}
