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

package nodeports

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "NodePorts"

// ErrReason is the rejection reason of a node where a wanted host port is
// taken, worded as kube-scheduler words it.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

// wildcardIP is the host IP that binds every address of the node; an
// empty host IP means it too.
const wildcardIP = "0.0.0.0"

// stateKey is where PreFilter keeps the pending pods' host ports.
const stateKey framework.StateKey = Name + "/ports"

// NodePorts filters out nodes where a host port the pod wants is in use.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin   = &NodePorts{}
	_ framework.FilterPlugin      = &NodePorts{}
	_ framework.EnqueueExtensions = &NodePorts{}
)

// New is the plugin's framework.PluginFactory. The plugin takes no args.
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeNoArgs(Name, args); err != nil {
		return nil, err
	}
	return &NodePorts{}, nil
}

// Name implements framework.Plugin.
func (*NodePorts) Name() string { return Name }

// hostPort is one host port a container asks for, normalised: the host IP
// is never empty (wildcardIP instead) and the protocol never empty (TCP).
type hostPort struct {
	ip       string
	protocol v1.Protocol
	port     int32
}

// normalise returns p's host port with the API's defaults applied.
func normalise(p *v1.ContainerPort) hostPort {
	h := hostPort{ip: p.HostIP, protocol: p.Protocol, port: p.HostPort}
	if h.ip == "" {
		h.ip = wildcardIP
	}
	if h.protocol == "" {
		h.protocol = v1.ProtocolTCP
	}
	return h
}

// conflicts reports whether h and the container port p cannot both be
// bound on one node: same port and protocol, and host IPs that are equal
// or of which one is the wildcard. p need not be normalised.
func (h hostPort) conflicts(p *v1.ContainerPort) bool {
	if p.HostPort != h.port {
		return false
	}
	protocol := p.Protocol
	if protocol == "" {
		protocol = v1.ProtocolTCP
	}
	if protocol != h.protocol {
		return false
	}
	ip := p.HostIP
	if ip == "" {
		ip = wildcardIP
	}
	return ip == h.ip || ip == wildcardIP || h.ip == wildcardIP
}

// runsWithPod reports whether the init container c keeps running while
// the pod runs (a sidecar), so that its ports are held like a container's.
func runsWithPod(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// eachHostPort calls f for every host port pod holds while it runs (see the
// package documentation) until f returns true, and reports whether it did.
// It allocates nothing: Filter calls it for every pod on every node.
func eachHostPort(pod *v1.Pod, f func(p *v1.ContainerPort) bool) bool {
	return eachContainerHostPort(pod.Spec.InitContainers, pod.Spec.Containers, f)
}

// eachContainerHostPort is eachHostPort over a pod's init containers and
// containers.
func eachContainerHostPort(initContainers, containers []v1.Container, f func(p *v1.ContainerPort) bool) bool {
	for i := range initContainers {
		c := &initContainers[i]
		if !runsWithPod(c) {
			continue
		}
		for j := range c.Ports {
			if c.Ports[j].HostPort > 0 && f(&c.Ports[j]) {
				return true
			}
		}
	}
	for i := range containers {
		c := &containers[i]
		for j := range c.Ports {
			if c.Ports[j].HostPort > 0 && f(&c.Ports[j]) {
				return true
			}
		}
	}
	return false
}

// hasHostPorts reports whether pod asks for any host port.
func hasHostPorts(pod *v1.Pod) bool {
	return eachHostPort(pod, func(*v1.ContainerPort) bool { return true })
}

// hostPortsOf returns pod's host ports, normalised; nil when it has none.
func hostPortsOf(pod *v1.Pod) []hostPort {
	var out []hostPort
	eachHostPort(pod, func(p *v1.ContainerPort) bool {
		out = append(out, normalise(p))
		return false
	})
	return out
}

// conflictsWith reports whether some port of wanted conflicts with a host
// port held by a pod of these init containers and containers.
func conflictsWith(wanted []hostPort, initContainers, containers []v1.Container) bool {
	return eachContainerHostPort(initContainers, containers, func(p *v1.ContainerPort) bool {
		for _, w := range wanted {
			if w.conflicts(p) {
				return true
			}
		}
		return false
	})
}

// preFilterState holds the host ports of the job's pending pods that ask
// for any, by pod object: an updated copy of a pod (same UID) is not the
// object PreFilter saw, and a pointer is hashed far faster than a UID, for
// every node. It is never changed after PreFilter writes it, so Clone
// shares it.
type preFilterState map[*v1.Pod][]hostPort

// Clone implements framework.StateData.
func (s preFilterState) Clone() framework.StateData { return s }

// PreFilter implements framework.PreFilterPlugin: it computes the host
// ports of the job's pending pods once for the cycle, and returns Skip
// when none asks for one.
func (*NodePorts) PreFilter(_ context.Context, state *framework.CycleState, job *framework.Job) *framework.Status {
	var s preFilterState
	for _, pod := range job.Pending {
		ports := hostPortsOf(pod)
		if len(ports) == 0 {
			continue
		}
		if s == nil {
			s = make(preFilterState)
		}
		s[pod] = ports
	}
	if s == nil {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, s)
	return nil
}

// wantedPorts returns pod's host ports from state, or computes them when
// PreFilter did not run for pod.
func wantedPorts(state *framework.CycleState, pod *v1.Pod) []hostPort {
	if state != nil {
		if d, ok := state.Read(stateKey); ok {
			if s, ok := d.(preFilterState); ok {
				if ports, ok := s[pod]; ok {
					return ports
				}
			}
		}
	}
	return hostPortsOf(pod)
}

// Filter implements framework.FilterPlugin.
func (*NodePorts) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if node.Node == nil || node.Placeholder {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pluginutil.ErrReasonNodeNotFound)
	}
	if node.PodsWithHostPorts == 0 || !hasHostPorts(pod) {
		// No pod on the node holds a host port, or the pod wants none.
		return nil
	}
	wanted := wantedPorts(state, pod)
	for _, t := range node.Pods {
		// A finished pod holds no port any more.
		if !t.Counted || !conflictsWith(wanted, t.InitContainers(), t.Containers()) {
			continue
		}
		if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
			logger.Info("Host port in use on node", "pod", klog.KObj(pod), "node", node.Name(), "holder", klog.KObj(t))
		}
		return framework.NewStatus(framework.Unschedulable, ErrReason)
	}
	return nil
}

// EventsToRegister implements framework.EnqueueExtensions. A pod that
// goes away from a node frees its host ports, which helps only a job that
// wants one of them (see podDeletedHint); a new node has every port free.
// Pod updates cannot change ports: container ports are immutable.
func (*NodePorts) EventsToRegister() []framework.ClusterEventWithHint {
	return []framework.ClusterEventWithHint{
		{Event: framework.EventAssignedPodDelete, QueueingHintFn: podDeletedHint},
		{Event: framework.EventNodeAdd},
	}
}

// podDeletedHint is the queueing hint of framework.EventAssignedPodDelete,
// raised with the pod that went away as oldObj: Queue when that pod held a
// host port conflicting with one a pending pod of the job wants.
func podDeletedHint(logger klog.Logger, job *framework.QueuedJob, oldObj, _ any) (framework.QueueingHint, error) {
	gone, err := pluginutil.PodOf(oldObj, "deleted")
	if err != nil {
		return framework.Queue, err
	}
	if !hasHostPorts(gone) {
		return framework.QueueSkip, nil
	}
	freed := hostPortsOf(gone)
	for _, pod := range job.Pods {
		if conflictsWith(freed, pod.Spec.InitContainers, pod.Spec.Containers) {
			logger.V(5).Info("A deleted pod freed a host port a pending pod wants", "pod", klog.KObj(pod), "deletedPod", klog.KObj(gone))
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// JudgesBySpec implements framework.SpecJudge: the plugin reads of a pod
// its namespace, labels and spec only.
func (*NodePorts) JudgesBySpec(*v1.Pod) bool { return true }

// NodeLocal implements framework.NodeLocal: its Filter reads the host ports taken on
// the node.
func (*NodePorts) NodeLocal() {}
