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
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The interfaces here are optional: a plugin implements them to spare the
// scheduling cycle work whose outcome it can tell in advance.

// SpecJudge is implemented by a PodPreFilterPlugin or FilterPlugin whose
// verdicts on a pod read, of the pod, no more than its namespace, labels
// and spec less spec.nodeName, spec.hostname and spec.subdomain: two pods
// alike in these get the same verdicts on the same snapshot and cycle
// state. The scheduling cycle relies on it to give a pod that is alike to
// the one before it in its job, which fit nowhere, that pod's verdict
// without filtering every node again (a gang whose pods wait for their
// victims to leave). A plugin that reads more of some pods (their own
// ResourceClaims, the claims of their generic ephemeral volumes) returns
// false for those. A profile with a PreFilterPod or Filter plugin that is
// not a SpecJudge filters every pod.
type SpecJudge interface {
	JudgesBySpec(pod *v1.Pod) bool
}

// NodeNamer is implemented by a FilterPlugin or PodPreFilterPlugin that
// can name the only nodes a pod may take: a required node affinity to
// nodes by name, as every DaemonSet pod has. NodeNames returns those
// names and true, or false when the plugin names none for pod (an empty
// set: no node). The framework then filters only the named nodes among
// the pod's candidates; the others are not filtered and count in its
// message as "node(s) didn't satisfy plugin(s) [<plugin>]",
// UnschedulableAndUnresolvable, as kube-scheduler's PreFilterResult
// does. The plugin's Filter must reject every node it does not name.
type NodeNamer interface {
	NodeNames(pod *v1.Pod) (sets.Set[string], bool)
}

// QuorumPermit is a PermitPlugin that can tell before every pod is tried
// that it will reject the job: OutOfReach reports whether Permit must
// reject job, with placed of its pending pods placed and left still to
// try, however those turn out. The cycle asks it each time a pod fits
// nowhere and, on true, stops placing (the pods left are counted in
// job.Untried) and runs Permit at once. A job waiting for 100 pods of
// which one fits nowhere is not filtered 99 times more.
type QuorumPermit interface {
	PermitPlugin
	OutOfReach(job *Job, placed, left int) bool
}

// SameNodes reports whether a and b are the same slice of nodes (the
// same backing array and length), as the cycle and preemption's
// simulation compare the candidate nodes of two pods.
func SameNodes(a, b []*NodeInfo) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// NodeLocal is implemented by a FilterPlugin or ScorePlugin whose verdict
// on, or raw score of, a node for a pod reads of the cluster that node's
// NodeInfo only (with what its own PreFilter, PreFilterPod or PreScore
// wrote to the cycle state from the pod): a pod placed on one node
// changes no other node's verdict or raw score. A plugin that reads
// several nodes (spread over a domain) or state outside the snapshot
// (volumes, claims) must not implement it. The scheduling loop relies on
// it to rank the nodes for a pod alike to the one it placed last
// (SpecJudge) by the ranking it computed then, filtering and scoring
// again only the nodes that changed since; a pod for which any Filter or
// Score plugin that runs is not NodeLocal is ranked afresh.
type NodeLocal interface {
	NodeLocal()
}

// AffinityCensus tells whether some node of the scheduling cycle's
// snapshot may hold a counted pod with pod affinity or anti-affinity
// (MayHoldAffinity) or with required pod anti-affinity
// (MayHoldRequiredAntiAffinity). False is certain: no node holds one.
// True may be stale (such a pod was taken off since). A plugin that would
// walk every node to learn that no such pod exists (InterPodAffinity, for
// the many pods without terms of their own) asks it first; the
// scheduling loop puts the snapshot's census in the cycle state under
// AffinityCensusKey.
type AffinityCensus interface {
	MayHoldAffinity() bool
	MayHoldRequiredAntiAffinity() bool
}

// AffinityCensusKey is the cycle state key of the cycle's AffinityCensus.
const AffinityCensusKey StateKey = "framework.batch-scheduler.io/affinity-census"

// censusData holds an AffinityCensus in a cycle state. The census is a
// live view of the snapshot, so a clone of the state shares it.
type censusData struct{ AffinityCensus }

func (d censusData) Clone() StateData { return d }

// WriteAffinityCensus puts census in state under AffinityCensusKey.
func WriteAffinityCensus(state *CycleState, census AffinityCensus) {
	state.Write(AffinityCensusKey, censusData{census})
}

// AffinityCensusOf returns the AffinityCensus of state, or nil when it
// holds none (then every node must be looked at).
func AffinityCensusOf(state *CycleState) AffinityCensus {
	d, ok := state.Read(AffinityCensusKey)
	if !ok {
		return nil
	}
	c, ok := d.(censusData)
	if !ok {
		return nil
	}
	return c.AffinityCensus
}
