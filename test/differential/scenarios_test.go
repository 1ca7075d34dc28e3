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

package differential

import (
	v1 "k8s.io/api/core/v1"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// Scenarios for the filters batch-scheduler has had from the start. Pods
// that fit come after those that do not in each scenario: the two
// schedulers score nodes differently, so a placed pod may land on
// different nodes, and a later pod's reasons would then differ for that
// reason alone.

// Plugin names, as kube-scheduler and batch-scheduler both call them.
const (
	nodeResourcesFit  = "NodeResourcesFit"
	nodeAffinity      = "NodeAffinity"
	taintToleration   = "TaintToleration"
	nodeUnschedulable = "NodeUnschedulable"
	nodePorts         = "NodePorts"
	schedulingGates   = "SchedulingGates"
)

// node returns a ready node with cpu, memory and 110 pods allocatable.
func node(name, cpu, memory string) *st.NodeWrapper {
	return st.MakeNode().Name(name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: cpu, v1.ResourceMemory: memory, v1.ResourcePods: "110",
	})
}

// pod returns a pod requesting cpu and memory (none if empty).
func pod(name, cpu, memory string) *st.PodWrapper {
	req := map[v1.ResourceName]string{}
	if cpu != "" {
		req[v1.ResourceCPU] = cpu
	}
	if memory != "" {
		req[v1.ResourceMemory] = memory
	}
	w := st.MakePod().Name(name)
	if len(req) > 0 {
		w = w.Req(req)
	}
	return w
}

// hostPort adds a container port with a host port to the pod's first
// container.
func hostPort(p *v1.Pod, port int32, protocol v1.Protocol) *v1.Pod {
	c := &p.Spec.Containers[0]
	c.Ports = append(c.Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: protocol})
	return p
}

// withLimits sets the limits of names to the requests of every container,
// as the API server wants for extended resources.
func withLimits(p *v1.Pod, names ...v1.ResourceName) *v1.Pod {
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		for _, n := range names {
			if q, ok := c.Resources.Requests[n]; ok {
				if c.Resources.Limits == nil {
					c.Resources.Limits = v1.ResourceList{}
				}
				c.Resources.Limits[n] = q
			}
		}
	}
	return p
}

// withGates adds scheduling gates to the pod.
func withGates(p *v1.Pod, gates ...string) *v1.Pod {
	for _, g := range gates {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, v1.PodSchedulingGate{Name: g})
	}
	return p
}

// requiredNodeAffinity sets a required node affinity of one term with one
// expression.
func requiredNodeAffinity(p *v1.Pod, key string, op v1.NodeSelectorOperator, values ...string) *v1.Pod {
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
		}}},
	}}
	return p
}

func baseScenarios() []scenario {
	const gpu v1.ResourceName = "example.com/gpu"
	return []scenario{
		{
			name:    "NodeResourcesFit",
			plugins: []string{nodeResourcesFit},
			nodes: []*v1.Node{
				node("fit-1", "2", "4Gi").Obj(),
				node("fit-2", "1", "2Gi").Obj(),
				st.MakeNode().Name("fit-3").Capacity(map[v1.ResourceName]string{
					v1.ResourceCPU: "4", v1.ResourceMemory: "8Gi", v1.ResourcePods: "1", gpu: "2",
				}).Obj(),
			},
			existing: []*v1.Pod{
				pod("running-1", "1500m", "1Gi").Node("fit-1").Obj(),
				pod("running-3", "100m", "").Node("fit-3").Obj(),
			},
			pods: []*v1.Pod{
				pod("too-much-cpu", "3", "").Obj(),
				pod("too-much-memory", "", "6Gi").Obj(),
				pod("too-much-both", "5", "16Gi").Obj(),
				withLimits(pod("extended", "100m", "").Req(map[v1.ResourceName]string{gpu: "1"}).Obj(), gpu),
				pod("cpu-fits-only-fit-2", "800m", "1Gi").Obj(),
			},
		},
		{
			name:    "NodeAffinity",
			plugins: []string{nodeAffinity},
			nodes: []*v1.Node{
				node("aff-1", "4", "8Gi").Label("zone", "a").Obj(),
				node("aff-2", "4", "8Gi").Label("zone", "b").Label("disk", "ssd").Obj(),
				node("aff-3", "4", "8Gi").Obj(),
			},
			pods: []*v1.Pod{
				pod("selector-nowhere", "100m", "").NodeSelector(map[string]string{"zone": "c"}).Obj(),
				requiredNodeAffinity(pod("affinity-nowhere", "100m", "").Obj(), "zone", v1.NodeSelectorOpNotIn, "a", "b"),
				requiredNodeAffinity(pod("affinity-exists-nowhere", "100m", "").Obj(), "gpu", v1.NodeSelectorOpExists),
				requiredNodeAffinity(pod("affinity-and-selector", "100m", "").NodeSelector(map[string]string{"zone": "a"}).Obj(), "disk", v1.NodeSelectorOpIn, "ssd"),
				pod("selector-fits", "100m", "").NodeSelector(map[string]string{"zone": "b"}).Obj(),
				requiredNodeAffinity(pod("affinity-fits", "100m", "").Obj(), "disk", v1.NodeSelectorOpIn, "ssd"),
			},
		},
		{
			name:    "TaintToleration",
			plugins: []string{taintToleration},
			nodes: []*v1.Node{
				node("taint-1", "4", "8Gi").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
				node("taint-2", "4", "8Gi").Taint("maintenance", "", v1.TaintEffectNoExecute).Obj(),
				node("taint-3", "4", "8Gi").Taint("dedicated", "db", v1.TaintEffectNoSchedule).Taint("soft", "x", v1.TaintEffectPreferNoSchedule).Obj(),
			},
			pods: []*v1.Pod{
				pod("tolerates-nothing", "100m", "").Obj(),
				pod("tolerates-gpu", "100m", "").Toleration("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj(),
				pod("tolerates-maintenance", "100m", "").TolerationExists("maintenance", v1.TaintEffectNoExecute).Obj(),
			},
		},
		{
			name:    "NodeUnschedulable",
			plugins: []string{nodeUnschedulable, taintToleration},
			nodes: []*v1.Node{
				node("cordon-1", "4", "8Gi").Unschedulable(true).Obj(),
				node("cordon-2", "4", "8Gi").Unschedulable(true).Obj(),
				node("cordon-3", "4", "8Gi").Taint("team", "a", v1.TaintEffectNoSchedule).Obj(),
			},
			pods: []*v1.Pod{
				pod("plain", "100m", "").Obj(),
				pod("tolerates-unschedulable", "100m", "").TolerationExists(v1.TaintNodeUnschedulable, v1.TaintEffectNoSchedule).Obj(),
			},
		},
		{
			name:    "NodePorts",
			plugins: []string{nodePorts},
			nodes: []*v1.Node{
				node("ports-1", "4", "8Gi").Obj(),
				node("ports-2", "4", "8Gi").Obj(),
			},
			existing: []*v1.Pod{
				hostPort(pod("web-1", "100m", "").Node("ports-1").Obj(), 8080, v1.ProtocolTCP),
				hostPort(pod("web-2", "100m", "").Node("ports-2").Obj(), 8080, v1.ProtocolTCP),
				hostPort(pod("dns-1", "100m", "").Node("ports-1").Obj(), 53, v1.ProtocolUDP),
			},
			pods: []*v1.Pod{
				hostPort(pod("wants-8080", "100m", "").Obj(), 8080, v1.ProtocolTCP),
				hostPort(pod("wants-53-udp", "100m", "").Obj(), 53, v1.ProtocolUDP),
				hostPort(pod("wants-8080-udp", "100m", "").Obj(), 8080, v1.ProtocolUDP),
				hostPort(pod("wants-9090", "100m", "").Obj(), 9090, v1.ProtocolTCP),
			},
		},
		{
			name:    "SchedulingGates",
			plugins: []string{schedulingGates},
			nodes:   []*v1.Node{node("gates-1", "4", "8Gi").Obj()},
			pods: []*v1.Pod{
				withGates(pod("gated", "100m", "").Obj(), "example.com/wait"),
				pod("not-gated", "100m", "").Obj(),
			},
		},
		{
			// kube-scheduler stops at a node's first failing filter, in its
			// order: NodeUnschedulable, TaintToleration, NodeAffinity,
			// NodePorts, NodeResourcesFit. A node failing several shows
			// only the first.
			name:    "FilterOrder",
			plugins: []string{nodeUnschedulable, taintToleration, nodeAffinity, nodePorts, nodeResourcesFit},
			nodes: []*v1.Node{
				node("order-1", "1", "1Gi").Unschedulable(true).Taint("t", "v", v1.TaintEffectNoSchedule).Obj(),
				node("order-2", "1", "1Gi").Taint("t", "v", v1.TaintEffectNoSchedule).Obj(),
				node("order-3", "1", "1Gi").Label("zone", "b").Obj(),
				node("order-4", "1", "1Gi").Label("zone", "a").Obj(),
				node("order-5", "1", "8Gi").Label("zone", "a").Obj(),
			},
			existing: []*v1.Pod{
				hostPort(pod("port-holder", "100m", "").Node("order-4").Obj(), 7000, v1.ProtocolTCP),
			},
			pods: []*v1.Pod{
				hostPort(pod("fails-everywhere", "2", "").NodeSelector(map[string]string{"zone": "a"}).Obj(), 7000, v1.ProtocolTCP),
			},
		},
	}
}
