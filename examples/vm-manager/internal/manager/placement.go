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

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
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
	// vms is what this manager's placed VMs use, per host.
	vms map[string]resources.Resource
}

// snapshot reads the grants and the VMs' usage; m.mu is held.
func (m *Manager) snapshot(now time.Time) *capacity {
	c := &capacity{m: m, vms: map[string]resources.Resource{}}
	for _, vm := range m.vms {
		if vm.Phase != PhaseRunning {
			continue
		}
		u := c.vms[vm.Host]
		u.Add(vm.res)
		c.vms[vm.Host] = u
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
		if !ok || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
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

// fitHost reports whether a VM using req fits on node, and if not, why.
func (c *capacity) fitHost(node *v1.Node, req resources.Resource) (*refusal, error) {
	if why := nodeUnusable(node); why != "" {
		return &refusal{ReasonHostUnusable, node.Name + ": " + why}, nil
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
		if c.granted != nil {
			return "", &refusal{ReasonNoGrant, "no live grant for framework " + c.m.cfg.Framework + " on any host"}, nil
		}
		return "", &refusal{ReasonNoHosts, "no nodes"}, nil
	}
	why := make([]string, 0, len(nodes)+len(missing))
	for _, name := range missing {
		why = append(why, name+": granted, but no such node")
	}
	for _, node := range nodes {
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

// candidates returns the hosts first fit tries, sorted by name: every
// node in hybrid mode; in two-level mode only the nodes with a live grant,
// and the granted names that are not nodes.
func (c *capacity) candidates() (nodes []*v1.Node, missing []string, err error) {
	if c.granted == nil {
		nodes, err = c.m.cfg.Nodes.List(everything)
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
	// running VMs use.
	Pods v1.ResourceList `json:"pods"`
	VMs  v1.ResourceList `json:"vms"`
	// Free is what is left for VMs.
	Free v1.ResourceList `json:"free"`
	// Unusable says why the host takes no VM (unschedulable, not Ready);
	// empty if it does.
	Unusable string `json:"unusable,omitempty"`
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
		out = append(out, Host{Name: node.Name, Allocatable: h.allocatable.ToList(), Pods: h.pods.ToList(),
			VMs: h.vms.ToList(), Free: h.free().ToList(), Unusable: nodeUnusable(node)})
	}
	return out, nil
}
