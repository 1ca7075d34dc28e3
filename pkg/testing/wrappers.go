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

// Package testing holds builders for test objects, in the style of
// kube-scheduler's wrappers: MakePod().Namespace("ns").Name("p").Req(...).Obj().
// Builders never fail; they produce exactly what they are told, so tests can
// also build odd objects on purpose.
package testing

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotation keys of gang jobs, repeated here so tests read like manifests.
const (
	GroupNameAnnotation    = "scheduling.k8s.io/group-name"
	MinAvailableAnnotation = "scheduling.k8s.io/min-available"
)

// PodWrapper builds a Pod.
type PodWrapper struct{ v1.Pod }

// MakePod returns a pod in namespace "default" with scheduler
// "batch-scheduler", phase Pending and one container without requests.
func MakePod() *PodWrapper {
	return &PodWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", ResourceVersion: "1"},
		Spec: v1.PodSpec{
			SchedulerName: "batch-scheduler",
			Containers:    []v1.Container{{Name: "main", Image: "busybox"}},
		},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}}
}

// Obj returns the built pod. Later builder calls do not change it.
func (p *PodWrapper) Obj() *v1.Pod { return p.Pod.DeepCopy() }

// Name sets the name and, unless set already, a UID derived from it.
func (p *PodWrapper) Name(name string) *PodWrapper {
	p.Pod.Name = name
	if p.Pod.UID == "" {
		p.Pod.UID = types.UID("uid-" + name)
	}
	return p
}

func (p *PodWrapper) Namespace(ns string) *PodWrapper   { p.Pod.Namespace = ns; return p }
func (p *PodWrapper) UID(uid string) *PodWrapper        { p.Pod.UID = types.UID(uid); return p }
func (p *PodWrapper) RV(rv string) *PodWrapper          { p.ResourceVersion = rv; return p }
func (p *PodWrapper) Node(node string) *PodWrapper      { p.Spec.NodeName = node; return p }
func (p *PodWrapper) Scheduler(name string) *PodWrapper { p.Spec.SchedulerName = name; return p }
func (p *PodWrapper) Phase(ph v1.PodPhase) *PodWrapper  { p.Status.Phase = ph; return p }
func (p *PodWrapper) Priority(v int32) *PodWrapper      { p.Spec.Priority = &v; return p }

// Terminating sets a deletion timestamp.
func (p *PodWrapper) Terminating() *PodWrapper {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

// Created sets the creation timestamp.
func (p *PodWrapper) Created(t metav1.Time) *PodWrapper { p.CreationTimestamp = t; return p }

// Group puts the pod in gang group name.
func (p *PodWrapper) Group(name string) *PodWrapper {
	return p.Annotation(GroupNameAnnotation, name)
}

// MinAvailable sets the gang's min-available annotation verbatim (so tests
// can also set garbage).
func (p *PodWrapper) MinAvailable(v string) *PodWrapper {
	return p.Annotation(MinAvailableAnnotation, v)
}

func (p *PodWrapper) Annotation(k, v string) *PodWrapper {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}

func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Hostname sets spec.hostname, as an indexed Job does for each pod.
func (p *PodWrapper) Hostname(name string) *PodWrapper {
	p.Spec.Hostname = name
	return p
}

// ControlledBy adds a controller owner reference to the object of kind
// named name, of apiVersion (e.g. "ray.io/v1", "RayCluster"), with uid.
func (p *PodWrapper) ControlledBy(apiVersion, kind, name, uid string) *PodWrapper {
	yes := true
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name,
		UID: types.UID(uid), Controller: &yes, BlockOwnerDeletion: &yes})
	return p
}

// Req sets the requests of the first container, e.g.
// Req(map[v1.ResourceName]string{v1.ResourceCPU: "500m"}).
func (p *PodWrapper) Req(req map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Containers[0].Resources.Requests = resourceList(req)
	return p
}

// Container appends a container with the given requests.
func (p *PodWrapper) Container(name string, req map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: name, Image: "busybox",
		Resources: v1.ResourceRequirements{Requests: resourceList(req)}})
	return p
}

// InitReq appends an init container with the given requests.
func (p *PodWrapper) InitReq(req map[v1.ResourceName]string) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "init", Image: "busybox",
		Resources: v1.ResourceRequirements{Requests: resourceList(req)}})
	return p
}

// SidecarReq appends a restartable (sidecar) init container.
func (p *PodWrapper) SidecarReq(req map[v1.ResourceName]string) *PodWrapper {
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "sidecar", Image: "busybox",
		RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: resourceList(req)}})
	return p
}

// Overhead sets the pod overhead.
func (p *PodWrapper) Overhead(req map[v1.ResourceName]string) *PodWrapper {
	p.Spec.Overhead = resourceList(req)
	return p
}

// NodeSelector sets spec.nodeSelector.
func (p *PodWrapper) NodeSelector(sel map[string]string) *PodWrapper {
	p.Spec.NodeSelector = sel
	return p
}

// Toleration adds a toleration of key=value:effect (operator Equal).
func (p *PodWrapper) Toleration(key, value string, effect v1.TaintEffect) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpEqual, Value: value, Effect: effect})
	return p
}

// NodeAffinityIn adds a required node affinity term "key In values". Terms
// are ORed, so calling it twice lets either match.
func (p *PodWrapper) NodeAffinityIn(key string, values ...string) *PodWrapper {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	req.NodeSelectorTerms = append(req.NodeSelectorTerms, v1.NodeSelectorTerm{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}},
	})
	return p
}

// PreferredNodeAffinityIn adds a preferred node affinity term "key In
// values" with weight.
func (p *PodWrapper) PreferredNodeAffinityIn(weight int32, key string, values ...string) *PodWrapper {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, v1.PreferredSchedulingTerm{
		Weight: weight,
		Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}},
		},
	})
	return p
}

// TolerationExists adds a toleration of every taint with key and effect
// (operator Exists); an empty effect tolerates every effect.
func (p *PodWrapper) TolerationExists(key string, effect v1.TaintEffect) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: effect})
	return p
}

// NodeWrapper builds a Node.
type NodeWrapper struct{ v1.Node }

// MakeNode returns a Ready node without capacity.
func MakeNode() *NodeWrapper {
	return &NodeWrapper{v1.Node{
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1"},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionTrue},
		}},
	}}
}

// Obj returns the built node. Later builder calls do not change it.
func (n *NodeWrapper) Obj() *v1.Node { return n.Node.DeepCopy() }

func (n *NodeWrapper) Name(name string) *NodeWrapper {
	n.Node.Name = name
	if n.Node.UID == "" {
		n.Node.UID = types.UID("uid-node-" + name)
	}
	return n
}

func (n *NodeWrapper) RV(rv string) *NodeWrapper { n.ResourceVersion = rv; return n }

// Capacity sets both capacity and allocatable.
func (n *NodeWrapper) Capacity(res map[v1.ResourceName]string) *NodeWrapper {
	n.Status.Capacity = resourceList(res)
	n.Status.Allocatable = resourceList(res)
	return n
}

// Allocatable sets allocatable only.
func (n *NodeWrapper) Allocatable(res map[v1.ResourceName]string) *NodeWrapper {
	n.Status.Allocatable = resourceList(res)
	return n
}

func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[k] = v
	return n
}

func (n *NodeWrapper) Annotation(k, v string) *NodeWrapper {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[k] = v
	return n
}

func (n *NodeWrapper) Taint(key, value string, effect v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

func (n *NodeWrapper) Unschedulable(u bool) *NodeWrapper { n.Spec.Unschedulable = u; return n }

// Condition sets (or adds) a condition of type t.
func (n *NodeWrapper) Condition(t v1.NodeConditionType, s v1.ConditionStatus) *NodeWrapper {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			n.Status.Conditions[i].Status = s
			return n
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: t, Status: s})
	return n
}

// Heartbeat sets the heartbeat time of every condition, as the kubelet's
// status updates do, and sets reason and message of the Ready condition.
func (n *NodeWrapper) Heartbeat(t metav1.Time, reason, message string) *NodeWrapper {
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.LastHeartbeatTime = t
		if c.Type == v1.NodeReady {
			c.Reason, c.Message = reason, message
		}
	}
	return n
}

// ConditionTransition sets the transition time of the condition of type t,
// if the node has one.
func (n *NodeWrapper) ConditionTransition(t v1.NodeConditionType, at metav1.Time) *NodeWrapper {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			n.Status.Conditions[i].LastTransitionTime = at
		}
	}
	return n
}

func resourceList(m map[v1.ResourceName]string) v1.ResourceList {
	rl := v1.ResourceList{}
	for k, v := range m {
		rl[k] = resource.MustParse(v)
	}
	return rl
}
