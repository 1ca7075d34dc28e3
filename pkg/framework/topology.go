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

package framework

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Pod annotations that ask for a gang to be placed within one network
// domain, for the dialects whose group objects cannot say it (and for
// single pods, which is then a no-op). The value is a node label key, e.g.
// topology.kubernetes.io/rack. See docs/scheduling.md, "Topology-aware
// gangs".
const (
	// TopologyRequiredAnnotation: every pod of the gang must land on
	// nodes with the same value of this label, or the gang waits.
	TopologyRequiredAnnotation = "batch-scheduler.io/topology-required"
	// TopologyPreferredAnnotation: one domain of this label (or a
	// narrower one) if any fits, else the narrowest wider level that
	// fits, else anywhere.
	TopologyPreferredAnnotation = "batch-scheduler.io/topology-preferred"
	// KueueRequiredTopologyAnnotation and KueuePreferredTopologyAnnotation
	// are Kueue's pod template annotations of the same meaning; they are
	// read as aliases so that manifests written for Kueue's
	// Topology-Aware Scheduling keep their placement without Kueue.
	KueueRequiredTopologyAnnotation  = "kueue.x-k8s.io/podset-required-topology"
	KueuePreferredTopologyAnnotation = "kueue.x-k8s.io/podset-preferred-topology"
)

// TopologyConstraint asks for the pods of a job to share one domain of a
// topology level: a node label whose nodes with one value form a domain
// (a rack, a block, an NVLink domain).
type TopologyConstraint struct {
	// Key is the node label of the level. Empty when Tier names it.
	Key string
	// Tier is a Volcano network tier (1 the narrowest above a node), for
	// a constraint that names no Key; the plugin that places gangs maps
	// tiers onto its configured levels.
	Tier int32
	// Required: the job waits rather than spread over several domains.
	// Otherwise the domain is preferred.
	Required bool
	// Source says where the constraint was declared, for messages, e.g.
	// "PodGroup.scheduling.k8s.io ml/train spec.schedulingConstraints".
	Source string
}

// String describes the constraint for messages and logs.
func (t *TopologyConstraint) String() string {
	mode := "preferred"
	if t.Required {
		mode = "required"
	}
	level := t.Key
	if level == "" {
		level = "tier " + strconv.Itoa(int(t.Tier))
	}
	return fmt.Sprintf("%s %s (%s)", mode, level, t.Source)
}

// PodTopology returns the topology constraint pod's annotations declare
// (see TopologyRequiredAnnotation), nil for none, or an error naming the
// annotation whose value is not a label key. The project's own
// annotations win over Kueue's; required wins over preferred.
func PodTopology(pod *v1.Pod) (*TopologyConstraint, error) {
	return annotatedTopology(pod, podTopologyAnnotations)
}

// topologyAnnotation is a pod annotation that declares a topology
// constraint, and whether the constraint is required.
type topologyAnnotation struct {
	key      string
	required bool
}

// podTopologyAnnotations are the annotations PodTopology reads, in order
// of precedence.
var podTopologyAnnotations = []topologyAnnotation{
	{TopologyRequiredAnnotation, true},
	{TopologyPreferredAnnotation, false},
	{KueueRequiredTopologyAnnotation, true},
	{KueuePreferredTopologyAnnotation, false},
}

// annotatedTopology returns the constraint of the first of annotations pod
// carries, nil for none, or an error naming the annotation whose value is
// not a label key.
func annotatedTopology(pod *v1.Pod, annotations []topologyAnnotation) (*TopologyConstraint, error) {
	for _, a := range annotations {
		v, ok := pod.Annotations[a.key]
		if !ok {
			continue
		}
		if errs := validation.IsQualifiedName(v); len(errs) > 0 {
			return nil, fmt.Errorf("annotation %s=%s of pod %s/%s is not a node label key: %s", a.key, QuoteValue(v), pod.Namespace, pod.Name, errs[0])
		}
		return &TopologyConstraint{Key: v, Required: a.required, Source: "annotation " + a.key}, nil
	}
	return nil, nil
}

// GroupTopology returns the topology constraint the job's group object
// declares, nil for none.
func (j *JobInfo) GroupTopology() *TopologyConstraint {
	if p := j.policies[j.GroupKind()]; p != nil {
		return p.Topology
	}
	return nil
}

// Disruption returns how preemption may take the job's running pods: as
// its group object says (GroupPolicy.Disruption) for a gang of one level;
// a multi-level gang (sub-groups, or a child of a composite) and every
// job without a group object go whole. A pod of no gang is its own
// whole, so the answer does not matter for it.
func (j *JobInfo) Disruption() Disruption {
	p := j.policies[j.GroupKind()]
	if p == nil || p.Err != nil || p.Parent != "" || len(p.SubGroups) > 0 {
		return DisruptWhole
	}
	return p.Disruption
}

// JobTopology returns a job's topology constraint: group's (see
// GroupTopology) when not nil, else the one the first of pods declares
// (see PodTopology). pods are the job's pending pods, in a stable order.
func JobTopology(group *TopologyConstraint, pods []*v1.Pod) (*TopologyConstraint, error) {
	if group != nil || len(pods) == 0 {
		return group, nil
	}
	return PodTopology(pods[0])
}

// Placement is a set of nodes within which all of a job's pods are to be
// placed, as a PlacementPlugin proposes it.
type Placement struct {
	// Name names it in messages and logs, e.g.
	// "topology.kubernetes.io/rack=rack-3".
	Name string
	// Nodes are the nodes the job's pods are filtered against. Node
	// infos are the cycle's snapshot's.
	Nodes []*NodeInfo
}

// PlacementPlan is what a PlacementPlugin proposes for a job.
type PlacementPlan struct {
	// Placements are tried in order, each with all of the job's pending
	// pods; the first one that Permit admits is bound.
	Placements []Placement
	// Anywhere: when no placement is admitted, the pods are placed over
	// all nodes, as without the plugin (a preferred constraint).
	Anywhere bool
	// Room are the placements preemption may make room in, best first
	// (nil: over all nodes, only when Anywhere).
	Room []Placement
	// Unplaced says why the job could not be placed when no placement
	// was admitted, e.g. naming the level and its largest free domain. It
	// is the job's message, with the plugin's name.
	Unplaced string
}

// PlacementPlugin proposes where a job's pods must or should be placed
// together (in one rack, say). It is enabled at preFilter and runs once
// per job, after the PreFilter plugins, with every node of the snapshot;
// the first plugin that does not return Skip decides, and Skip from all
// places the job over all nodes. A plan with no placements and not
// Anywhere leaves the job unplaced (preemption is still tried in its
// Room). A rejection rejects the job as a PreFilter rejection does, for a
// constraint no change of the cluster meets as it is written.
type PlacementPlugin interface {
	Plugin
	Placements(ctx context.Context, state *CycleState, job *Job, nodes []*NodeInfo) (*PlacementPlan, *Status)
}
