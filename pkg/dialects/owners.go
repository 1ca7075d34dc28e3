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

package dialects

import (
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The quorum policies of the owner kinds gangs are inferred from (see
// docs/scheduling.md, "Gangs inferred from the owner"), with the
// sub-group rules of the kinds whose gangs are multi-level (a JobSet's
// Jobs, a LeaderWorkerSet's groups), and the fields of each kind that
// its informer keeps (Dialect.Fields, see Slimmer). A policy never
// panics: a field that is missing takes its kind's default, and one of
// the wrong type or out of range is an error in the policy naming the
// object and the field.

// policyBuilder collects a policy's problem.
type policyBuilder struct {
	p *framework.GroupPolicy
}

func newPolicy(kind framework.GroupKind, u *unstructured.Unstructured) policyBuilder {
	return policyBuilder{p: &framework.GroupPolicy{Source: source(kind, u)}}
}

// fail makes the policy unusable because of err, which names the field.
func (b policyBuilder) fail(err error) *framework.GroupPolicy {
	b.p.MinMember, b.p.SubGroups = 0, nil
	b.p.Err = fmt.Errorf("%s: %w", b.p.Source, err)
	return b.p
}

// quorum makes n the policy's quorum (n >= 1 and fits an int32, which
// the readers ensure).
func (b policyBuilder) quorum(n int64) *framework.GroupPolicy {
	b.p.MinMember = int32(n)
	return b.p
}

// Labels and annotations of the owner kinds that split an inferred gang
// into sub-gangs (see framework.SubGroupRule). The pod labels the
// framework names are those that put a pod in its owner's gang
// (framework.JobSetNameLabel and the like).
const (
	// JobSetReplicatedJobNameLabel names the replicated Job of a JobSet
	// pod.
	JobSetReplicatedJobNameLabel = "jobset.sigs.k8s.io/replicatedjob-name"
	// JobSetJobIndexLabel is the index of a JobSet pod's Job among the
	// Jobs of its replicated Job.
	JobSetJobIndexLabel = "jobset.sigs.k8s.io/job-index"
	// JobSetExclusiveTopologyAnnotation, on a JobSet or on the template
	// of one of its replicated Jobs, names the node label each Job's pods
	// must share a domain of (the JobSet controller also keeps other Jobs
	// out of that domain, which the scheduler does not).
	JobSetExclusiveTopologyAnnotation = "alpha.jobset.sigs.k8s.io/exclusive-topology"
	// LeaderWorkerSetExclusiveTopologyAnnotation, on a LeaderWorkerSet,
	// names the node label each of its groups must share a domain of
	// (the LeaderWorkerSet also keeps other groups out of that domain,
	// which the scheduler does not).
	LeaderWorkerSetExclusiveTopologyAnnotation = "leaderworkerset.sigs.k8s.io/exclusive-topology"
)

// exclusiveTopology reads the annotation key of obj, an owner object or
// a template within one, as a required topology constraint on the node
// label it names; nil when absent. at is the path of obj within the
// owner src ("" for the owner itself), for errors and the constraint's
// Source.
func exclusiveTopology(obj map[string]any, at, key, src string) (*framework.TopologyConstraint, error) {
	where, meta := "annotation "+key, "metadata"
	if at != "" {
		where, meta = at+" "+where, at+".metadata"
	}
	m, err := objectAt(obj, meta, "metadata")
	if err != nil || m == nil {
		return nil, err
	}
	annotations, err := objectAt(m, meta+".annotations", "annotations")
	if err != nil || annotations == nil {
		return nil, err
	}
	v, found, _ := Lookup(annotations, key)
	if !found {
		return nil, nil
	}
	label, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not a string", where, TypeName(v))
	}
	if errs := validation.IsQualifiedName(label); len(errs) > 0 {
		return nil, fmt.Errorf("%s=%s is not a node label key: %s", where, framework.QuoteValue(label), errs[0])
	}
	return &framework.TopologyConstraint{Key: label, Required: true, Source: src + " " + where}, nil
}

// Job fields the job policy reads.
var jobFields = [][]string{
	{"spec", "parallelism"}, {"spec", "completions"}, {"spec", "completionMode"}, {"status", "succeeded"},
	{"spec", "template", "metadata", "annotations", framework.JobGangAnnotation},
}

// jobPolicy reads a batch/v1 Job. With infer unset, only a Job whose pod
// template opts in with framework.JobGangAnnotation has a policy (the
// Job dialect); with it set, every Job has one (the Job is an owner kind
// gangs are inferred from).
//
// The quorum is spec.parallelism (default 1), at most the completions
// left: spec.completions minus status.succeeded, at least 1. A finished
// pod no longer holds a node and does not count towards the quorum
// (framework.TaskCounts.Running), so without the subtraction a Job that
// has fewer completions left than its parallelism would wait for pods
// the Job controller never creates. A Job that is not indexed and runs
// one pod at a time is Independent: its pods are not an inferred gang.
func jobPolicy(infer bool) func(u *unstructured.Unstructured) *framework.GroupPolicy {
	return func(u *unstructured.Unstructured) *framework.GroupPolicy {
		optIn, _ := StringField(u.Object, "", "spec", "template", "metadata", "annotations", framework.JobGangAnnotation)
		if optIn != "true" && !infer {
			return nil
		}
		b := newPolicy(framework.GroupKindJob, u)
		parallelism, found, err := IntField(u.Object, "", "spec", "parallelism")
		if err != nil {
			return b.fail(err)
		}
		if !found {
			parallelism = 1
		}
		completions, hasCompletions, err := IntField(u.Object, "", "spec", "completions")
		if err != nil {
			return b.fail(err)
		}
		mode, err := StringField(u.Object, "", "spec", "completionMode")
		if err != nil {
			return b.fail(err)
		}
		succeeded, _, err := IntField(u.Object, "", "status", "succeeded")
		if err != nil {
			return b.fail(err)
		}
		switch {
		case parallelism == 0:
			return b.fail(errors.New("runs no pods at once (spec.parallelism is 0)"))
		case hasCompletions && completions == 0:
			return b.fail(errors.New("runs no pods at once (spec.completions is 0)"))
		}
		quorum := parallelism
		if hasCompletions {
			quorum = min(quorum, max(completions-succeeded, 1))
		}
		b.p.Independent = mode != "Indexed" && parallelism <= 1
		return b.quorum(quorum)
	}
}

// RayCluster fields the RayCluster policy reads.
var rayClusterFields = [][]string{
	{"spec", "workerGroupSpecs", EachItem, "minReplicas"},
	{"spec", "workerGroupSpecs", EachItem, "numOfHosts"},
	{"spec", "workerGroupSpecs", EachItem, "suspend"},
}

// rayClusterPolicy reads a KubeRay RayCluster: the head and, of each
// worker group that is not suspended, minReplicas (default 0) replicas of
// numOfHosts (default 1) pods each.
func rayClusterPolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	b := newPolicy(framework.GroupKindRayCluster, u)
	groups, err := ListField(u.Object, "spec", "workerGroupSpecs")
	if err != nil {
		return b.fail(err)
	}
	quorum := int64(1)
	for i, g := range groups {
		at := "spec.workerGroupSpecs" + Index(i)
		m, ok := g.(map[string]any)
		if !ok {
			return b.fail(fmt.Errorf("%s is %s, not an object", at, TypeName(g)))
		}
		suspended, err := BoolField(m, at+".suspend", "suspend")
		if err != nil {
			return b.fail(err)
		}
		if suspended {
			continue
		}
		minReplicas, _, err := IntField(m, at+".minReplicas", "minReplicas")
		if err != nil {
			return b.fail(err)
		}
		hosts, found, err := IntField(m, at+".numOfHosts", "numOfHosts")
		if err != nil {
			return b.fail(err)
		}
		if !found || hosts == 0 {
			hosts = 1
		}
		if quorum, err = quorumSum(quorum, minReplicas*hosts, "the head and the worker groups' minReplicas × numOfHosts"); err != nil {
			return b.fail(err)
		}
	}
	return b.quorum(quorum)
}

// JobSet fields the JobSet policy reads.
var jobSetFields = [][]string{
	{"metadata", "annotations", JobSetExclusiveTopologyAnnotation},
	{"spec", "replicatedJobs", EachItem, "name"},
	{"spec", "replicatedJobs", EachItem, "replicas"},
	{"spec", "replicatedJobs", EachItem, "template", "metadata", "annotations", JobSetExclusiveTopologyAnnotation},
	{"spec", "replicatedJobs", EachItem, "template", "spec", "parallelism"},
	{"spec", "replicatedJobs", EachItem, "template", "spec", "completions"},
	{"spec", "startupPolicy", "startupPolicyOrder"},
	{"status", "replicatedJobsStatus", EachItem, "name"},
	{"status", "replicatedJobsStatus", EachItem, "succeeded"},
}

// jobSetPolicy reads a JobSet: the sum over spec.replicatedJobs of
// replicas (default 1) × min(parallelism, completions) of its Job
// template (parallelism defaults to 1), less the Jobs of each that
// succeeded (status.replicatedJobsStatus), whose pods no longer count.
// With startupPolicyOrder InOrder the JobSet starts its replicated Jobs
// one after the other, each once the one before is ready, so only the
// first is all or nothing: the quorum is its share.
//
// Each Job is a sub-gang: one rule per replicated Job, named after it,
// takes its pods (label JobSetReplicatedJobNameLabel) and keys them by
// their Job (JobSetJobIndexLabel); each Job's quorum is its share,
// min(parallelism, completions), and the Jobs the whole quorum counts
// (replicas less succeeded; none of the replicated Jobs InOrder starts
// later) must each reach theirs. The annotation
// JobSetExclusiveTopologyAnnotation of the replicated Job's template, or
// else of the JobSet, asks for each Job to be within one domain of the
// label it names. A replicated Job that runs no pods has no rule.
func jobSetPolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	b := newPolicy(framework.GroupKindJobSet, u)
	jobs, err := ListField(u.Object, "spec", "replicatedJobs")
	if err != nil {
		return b.fail(err)
	}
	order, err := StringField(u.Object, "", "spec", "startupPolicy", "startupPolicyOrder")
	if err != nil {
		return b.fail(err)
	}
	succeeded, err := succeededJobs(u.Object)
	if err != nil {
		return b.fail(err)
	}
	// The JobSet's own exclusive topology, for the replicated Jobs whose
	// template names none.
	jobSetTopology, err := exclusiveTopology(u.Object, "", JobSetExclusiveTopologyAnnotation, b.p.Source)
	if err != nil {
		return b.fail(err)
	}
	var quorum, configured int64
	named := map[string]string{}
	for i, rj := range jobs {
		at := "spec.replicatedJobs" + Index(i)
		m, ok := rj.(map[string]any)
		if !ok {
			return b.fail(fmt.Errorf("%s is %s, not an object", at, TypeName(rj)))
		}
		name, err := StringField(m, at+".name", "name")
		if err != nil {
			return b.fail(err)
		}
		replicas, found, err := IntField(m, at+".replicas", "replicas")
		if err != nil {
			return b.fail(err)
		}
		if !found {
			replicas = 1
		}
		template, err := objectAt(m, at+".template", "template")
		if err != nil {
			return b.fail(err)
		}
		parallelism, found, err := IntField(m, at+".template.spec.parallelism", "template", "spec", "parallelism")
		if err != nil {
			return b.fail(err)
		}
		if !found {
			parallelism = 1
		}
		completions, hasCompletions, err := IntField(m, at+".template.spec.completions", "template", "spec", "completions")
		if err != nil {
			return b.fail(err)
		}
		perJob := parallelism
		if hasCompletions {
			perJob = min(perJob, completions)
		}
		if configured, err = quorumSum(configured, replicas*perJob, "the pods of spec.replicatedJobs"); err != nil {
			return b.fail(err)
		}
		counted := max(replicas-succeeded[name], 0)
		if order == "InOrder" && i > 0 {
			counted = 0
		}
		if quorum, err = quorumSum(quorum, counted*perJob, "the pods of spec.replicatedJobs"); err != nil {
			return b.fail(err)
		}
		// The sub-gang of each of its Jobs.
		if first, dup := named[name]; dup {
			return b.fail(fmt.Errorf("%s.name %s is also %s.name: replicated Jobs must have distinct names", at, framework.QuoteValue(name), first))
		}
		named[name] = at
		if perJob == 0 {
			continue
		}
		selector, err := labels.ValidatedSelectorFromSet(labels.Set{JobSetReplicatedJobNameLabel: name})
		if err != nil {
			return b.fail(fmt.Errorf("%s.name %s is not a label value: %w", at, framework.QuoteValue(name), err))
		}
		topology, err := exclusiveTopology(template, at+".template", JobSetExclusiveTopologyAnnotation, b.p.Source)
		if err != nil {
			return b.fail(err)
		}
		if topology == nil {
			topology = jobSetTopology
		}
		b.p.SubGroups = append(b.p.SubGroups, framework.SubGroupRule{
			Name:         name,
			Selector:     selector,
			KeyLabels:    []string{JobSetJobIndexLabel},
			MinMember:    int32(perJob),
			MinSubGroups: int32(counted),
			Topology:     topology,
			Source:       b.p.Source + " " + at,
		})
	}
	if configured == 0 {
		return b.fail(errors.New("runs no pods (spec.replicatedJobs asks for none)"))
	}
	return b.quorum(max(quorum, 1))
}

// succeededJobs reads status.replicatedJobsStatus: the Jobs that
// succeeded, by replicated Job name.
func succeededJobs(obj map[string]any) (map[string]int64, error) {
	statuses, err := ListField(obj, "status", "replicatedJobsStatus")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for i, s := range statuses {
		at := "status.replicatedJobsStatus" + Index(i)
		m, ok := s.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is %s, not an object", at, TypeName(s))
		}
		name, err := StringField(m, at+".name", "name")
		if err != nil {
			return nil, err
		}
		n, _, err := IntField(m, at+".succeeded", "succeeded")
		if err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, nil
}

// LeaderWorkerSet fields the LeaderWorkerSet policy reads.
var leaderWorkerSetFields = [][]string{
	{"metadata", "annotations", LeaderWorkerSetExclusiveTopologyAnnotation},
	{"spec", "leaderWorkerTemplate", "size"}, {"spec", "startupPolicy"},
}

// leaderWorkerSetPolicy reads a LeaderWorkerSet, one multi-level gang:
// each of its groups (the pods of one value of
// framework.LeaderWorkerSetGroupIndexLabel) is a sub-gang of
// spec.leaderWorkerTemplate.size pods (default 1), its leader and
// workers. With startupPolicy LeaderReady the workers are created only
// once the leader is ready, so a gang of all of them would never start:
// a group's quorum is 1, the leader. The whole's quorum is one group's:
// one group is enough to start, unless the pods' annotation
// framework.MinSubGroupsAnnotation asks for more groups. The annotation
// LeaderWorkerSetExclusiveTopologyAnnotation asks for each group to be
// within one domain of the node label it names.
func leaderWorkerSetPolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	b := newPolicy(framework.GroupKindLeaderWorkerSet, u)
	size, found, err := IntField(u.Object, "", "spec", "leaderWorkerTemplate", "size")
	if err != nil {
		return b.fail(err)
	}
	if !found {
		size = 1
	}
	if size == 0 {
		return b.fail(errors.New("spec.leaderWorkerTemplate.size is 0"))
	}
	startup, err := StringField(u.Object, "", "spec", "startupPolicy")
	if err != nil {
		return b.fail(err)
	}
	topology, err := exclusiveTopology(u.Object, "", LeaderWorkerSetExclusiveTopologyAnnotation, b.p.Source)
	if err != nil {
		return b.fail(err)
	}
	if startup == "LeaderReady" {
		size = 1
	}
	b.p.SubGroups = []framework.SubGroupRule{{
		KeyLabels: []string{framework.LeaderWorkerSetGroupIndexLabel},
		MinMember: int32(size),
		Topology:  topology,
		Source:    b.p.Source + " spec.leaderWorkerTemplate",
	}}
	return b.quorum(size)
}

// Kubeflow job fields the MPIJob and PyTorchJob policies read.
var (
	mpiJobFields = [][]string{
		{"spec", "runPolicy", "schedulingPolicy", "minAvailable"},
		{"spec", "mpiReplicaSpecs", EachValue, "replicas"},
		{"spec", "launcherCreationPolicy"},
	}
	pyTorchJobFields = [][]string{
		{"spec", "runPolicy", "schedulingPolicy", "minAvailable"},
		{"spec", "pytorchReplicaSpecs", EachValue, "replicas"},
	}
)

// mpiJobPolicy reads a Kubeflow MPIJob (v2beta1):
// spec.runPolicy.schedulingPolicy.minAvailable if set, else the replicas
// of spec.mpiReplicaSpecs (the Launcher's default 1, the others' 0). With
// launcherCreationPolicy WaitForWorkersReady the launcher is created only
// once the workers are ready, so it is not counted.
func mpiJobPolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	b := newPolicy(framework.GroupKindMPIJob, u)
	policy, err := StringField(u.Object, "", "spec", "launcherCreationPolicy")
	if err != nil {
		return b.fail(err)
	}
	return kubeflowPolicy(b, u, "mpiReplicaSpecs", func(replicaType string) (def int64, counted bool) {
		if replicaType == "Launcher" {
			return 1, policy != "WaitForWorkersReady"
		}
		return 0, true
	})
}

// pyTorchJobPolicy reads a Kubeflow PyTorchJob (v1):
// spec.runPolicy.schedulingPolicy.minAvailable if set, else the replicas
// of spec.pytorchReplicaSpecs (default 1 each).
func pyTorchJobPolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	b := newPolicy(framework.GroupKindPyTorchJob, u)
	return kubeflowPolicy(b, u, "pytorchReplicaSpecs", func(string) (int64, bool) { return 1, true })
}

// kubeflowPolicy is the policy of a Kubeflow job whose replica specs are
// the map spec.<specs>: minAvailable if set, else the sum of the replicas
// of the replica types that count (replicaType says each one's default
// and whether it counts).
func kubeflowPolicy(b policyBuilder, u *unstructured.Unstructured, specs string,
	replicaType func(string) (def int64, counted bool)) *framework.GroupPolicy {
	minAvailable, found, err := IntField(u.Object, "", "spec", "runPolicy", "schedulingPolicy", "minAvailable")
	switch {
	case err != nil:
		return b.fail(err)
	case found && minAvailable == 0:
		return b.fail(errors.New("spec.runPolicy.schedulingPolicy.minAvailable is 0"))
	case found:
		return b.quorum(minAvailable)
	}
	replicaSpecs, err := MapField(u.Object, "spec", specs)
	if err != nil {
		return b.fail(err)
	}
	types := make([]string, 0, len(replicaSpecs))
	for t := range replicaSpecs {
		types = append(types, t)
	}
	sort.Strings(types)
	var quorum int64
	for _, t := range types {
		at := "spec." + specs + "." + t
		m, ok := replicaSpecs[t].(map[string]any)
		if !ok {
			return b.fail(fmt.Errorf("%s is %s, not an object", at, TypeName(replicaSpecs[t])))
		}
		def, counted := replicaType(t)
		replicas, found, err := IntField(m, at+".replicas", "replicas")
		if err != nil {
			return b.fail(err)
		}
		if !found {
			replicas = def
		}
		if !counted {
			continue
		}
		if quorum, err = quorumSum(quorum, replicas, "the replicas of spec."+specs); err != nil {
			return b.fail(err)
		}
	}
	if quorum == 0 {
		return b.fail(fmt.Errorf("runs no pods (spec.%s asks for none)", specs))
	}
	return b.quorum(quorum)
}
