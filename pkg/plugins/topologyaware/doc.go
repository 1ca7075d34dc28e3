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

// Package topologyaware implements the TopologyAware plugin, which places
// a gang within one network domain: one rack, one block, one NVLink
// domain, named by a node label.
//
// It is a framework.PlacementPlugin, enabled at preFilter. For a gang
// with a topology constraint (framework.Job.Topology: a native PodGroup's
// spec.schedulingConstraints.topology, a Volcano PodGroup's
// spec.networkTopology, or the annotations framework.TopologyRequired-
// Annotation and TopologyPreferredAnnotation and their Kueue aliases) it
// groups the nodes by the value of each level's label and proposes the
// domains whose free resources can hold the gang's quorum, in this order:
//
//   - the levels narrower than the constraint's, narrowest first, at most
//     MaxNarrowerPlacements domains each: a gang that asked for a block
//     and fits in one rack gets that rack;
//   - the constraint's level, at most MaxPlacements domains;
//   - for a preferred constraint only, the wider levels, then anywhere.
//
// Within a level the domain the quorum fills most comes first (best fit),
// so that small gangs fill the racks already in use and large gangs later
// still find a whole free rack. The scheduler tries the proposals in turn,
// each with all of the gang's pods; the first the Permit plugins admit is
// bound. A gang that already runs somewhere (an elastic gang placing more
// pods) stays in the domain it runs in.
//
// A required constraint that no domain fits leaves the gang waiting, with
// a message naming the level and its largest free domain; preemption then
// looks for victims in the domains that could hold the quorum if empty,
// the most free first.
//
// Args (all optional):
//
//	levels: [topology.kubernetes.io/block, topology.kubernetes.io/rack, kubernetes.io/hostname]
//	maxPlacements: 8
//	maxNarrowerPlacements: 2   # -1: do not look at narrower levels
//
// Levels are node labels, widest first. A Volcano network tier t is the
// t-th level counted from the narrowest, the hostname not counted; a tier
// above every level is no constraint (the narrowest level that fits is
// still preferred). A constraint on a label that is not a level is
// searched on that label alone.
//
// Events: room freed (a pod deleted or resized down, external usage that
// shrank, a grant that grew), nodes added, relabelled or allocating more,
// and a change of a gang's group object.
package topologyaware
