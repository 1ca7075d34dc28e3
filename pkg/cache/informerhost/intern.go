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

package informerhost

import (
	"slices"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxInterned bounds each table of an interner; a full table is emptied
// and refilled. The replicas of one workload share their labels,
// requests and owner, so a few thousand entries cover a large cluster.
const maxInterned = 8192

// maxInternedStrings bounds the table of strings: node names, namespaces
// and the generate names of workloads are many more than their maps, and
// an entry costs little.
const maxInternedStrings = 1 << 16

// interner makes equal maps and slices of the pods the informers store
// one shared value: the replicas of a Deployment or a Job carry the same
// labels, annotations, owner references and container requests and
// limits, and at 150,000 pods these small maps are a large part of the
// memory (a map of two quantities takes about 600 bytes). Objects in an
// informer's store are read-only for everyone (client-go's contract, and
// the cache never modifies pods), so sharing is safe; a copy (DeepCopy)
// is independent again.
type interner struct {
	mu      sync.Mutex
	strMaps map[string]map[string]string
	lists   map[string]v1.ResourceList
	owners  map[string][]metav1.OwnerReference
	// containers are slices of containers slimmed by stripPod.
	containers  map[string][]v1.Container
	tolerations map[string][]v1.Toleration
	// conditions are pod conditions without their times (see stripPod).
	conditions map[string][]v1.PodCondition
	// strs are the strings pods repeat: namespaces, node names, generate
	// names, scheduler names, enumerations.
	strs map[string]string
	// priorities, grace periods, preemption policies and flags are the
	// values of pointer fields that the API server defaults on every pod.
	int32s      map[int32]*int32
	int64s      map[int64]*int64
	bools       map[bool]*bool
	preemptions map[v1.PreemptionPolicy]*v1.PreemptionPolicy
	// sharedContainers are the first elements of the values of
	// containers, to recognize a pod interned already.
	sharedContainers map[*v1.Container]struct{}
	// key, containerKey, mapKeys and quantity are reused under mu to
	// build lookup keys: a lookup that finds a shared value allocates
	// nothing (the transform runs on every pod of a watch-list, and a
	// fresh builder per key was 2.4 KB of garbage a pod).
	key, containerKey, quantity []byte
	mapKeys                     []string
}

// podInterner serves the transform of every informer of the process.
var podInterner = newInterner()

func newInterner() *interner {
	return &interner{
		strMaps:          map[string]map[string]string{},
		lists:            map[string]v1.ResourceList{},
		owners:           map[string][]metav1.OwnerReference{},
		containers:       map[string][]v1.Container{},
		tolerations:      map[string][]v1.Toleration{},
		conditions:       map[string][]v1.PodCondition{},
		strs:             map[string]string{},
		int32s:           map[int32]*int32{},
		int64s:           map[int64]*int64{},
		bools:            map[bool]*bool{},
		preemptions:      map[v1.PreemptionPolicy]*v1.PreemptionPolicy{},
		sharedContainers: map[*v1.Container]struct{}{},
	}
}

// internPod replaces the labels, annotations, node selector, owner
// references, tolerations, containers (once slimmed), container requests
// and limits, conditions (once without their times), the strings pods
// repeat and the defaulted pointer fields of pod by equal shared values.
func (in *interner) internPod(pod *v1.Pod) {
	in.mu.Lock()
	defer in.mu.Unlock()
	// The transform runs twice on the objects of a watch-list: a pod
	// whose containers are already shared was interned (a fresh decode
	// never points into a shared slice, which the set keeps alive).
	if len(pod.Spec.Containers) > 0 {
		if _, done := in.sharedContainers[&pod.Spec.Containers[0]]; done {
			return
		}
	}
	pod.Labels = in.strMapLocked("l", pod.Labels)
	pod.Annotations = in.strMapLocked("a", pod.Annotations)
	pod.Spec.NodeSelector = in.strMapLocked("n", pod.Spec.NodeSelector)
	pod.OwnerReferences = in.ownersLocked(pod.OwnerReferences)
	pod.Spec.InitContainers = in.containersLocked(pod.Spec.InitContainers)
	pod.Spec.Containers = in.containersLocked(pod.Spec.Containers)
	pod.Spec.Tolerations = in.tolerationsLocked(pod.Spec.Tolerations)
	pod.Status.Conditions = in.conditionsLocked(pod.Status.Conditions)
	in.stringsLocked(pod)
	spec := &pod.Spec
	spec.Priority = internPtr(in.int32s, spec.Priority)
	spec.TerminationGracePeriodSeconds = internPtr(in.int64s, spec.TerminationGracePeriodSeconds)
	spec.ActiveDeadlineSeconds = internPtr(in.int64s, spec.ActiveDeadlineSeconds)
	spec.EnableServiceLinks = internPtr(in.bools, spec.EnableServiceLinks)
	spec.AutomountServiceAccountToken = internPtr(in.bools, spec.AutomountServiceAccountToken)
	spec.PreemptionPolicy = internPtr(in.preemptions, spec.PreemptionPolicy)
}

// stringsLocked replaces the strings of pod that its workload's other
// pods, or pods on its node, repeat by shared ones.
func (in *interner) stringsLocked(pod *v1.Pod) {
	s := in.strLocked
	pod.Namespace = s(pod.Namespace)
	pod.GenerateName = s(pod.GenerateName)
	spec := &pod.Spec
	spec.NodeName = s(spec.NodeName)
	spec.SchedulerName = s(spec.SchedulerName)
	spec.PriorityClassName = s(spec.PriorityClassName)
	spec.ServiceAccountName = s(spec.ServiceAccountName)
	spec.DeprecatedServiceAccount = s(spec.DeprecatedServiceAccount)
	spec.RestartPolicy = v1.RestartPolicy(s(string(spec.RestartPolicy)))
	spec.DNSPolicy = v1.DNSPolicy(s(string(spec.DNSPolicy)))
	status := &pod.Status
	status.Phase = v1.PodPhase(s(string(status.Phase)))
	status.QOSClass = v1.PodQOSClass(s(string(status.QOSClass)))
	status.NominatedNodeName = s(status.NominatedNodeName)
	status.Reason = s(status.Reason)
}

// strLocked returns the shared string equal to str.
func (in *interner) strLocked(str string) string {
	if str == "" {
		return str
	}
	if shared, ok := in.strs[str]; ok {
		return shared
	}
	if len(in.strs) >= maxInternedStrings {
		clear(in.strs)
	}
	in.strs[str] = str
	return str
}

// internPtr returns the shared pointer to a value equal to *p, or p, which
// becomes the shared one; nil stays nil.
func internPtr[T comparable](table map[T]*T, p *T) *T {
	if p == nil {
		return nil
	}
	if shared, ok := table[*p]; ok {
		return shared
	}
	if len(table) >= maxInterned {
		clear(table)
	}
	table[*p] = p
	return p
}

// conditionsLocked returns the shared conditions equal to cs, or cs.
// Conditions with a time (those stripPod keeps it for) are not shared.
func (in *interner) conditionsLocked(cs []v1.PodCondition) []v1.PodCondition {
	if len(cs) == 0 {
		return cs
	}
	k := in.key[:0]
	for i := range cs {
		c := &cs[i]
		if !c.LastProbeTime.IsZero() || !c.LastTransitionTime.IsZero() {
			return cs
		}
		k = appendKeyString(k, string(c.Type))
		k = appendKeyString(k, string(c.Status))
		k = appendKeyString(k, c.Reason)
		k = appendKeyString(k, c.Message)
		k = appendKeyInt(k, c.ObservedGeneration)
	}
	in.key = k
	return intern(in.conditions, k, cs)
}

// containersLocked returns the shared slice of containers equal to cs,
// with shared requests and limits, or a copy of cs with them. cs is never
// written: it may already be shared with other pods (an informer's
// transform runs twice on the objects of a watch-list). cs must be
// slimmed by stripPod: the key covers only the fields it keeps
// (containers with restart policy rules or resource claims, rare, are not
// shared whole).
func (in *interner) containersLocked(cs []v1.Container) []v1.Container {
	if len(cs) == 0 {
		return cs
	}
	reqs := make([]v1.ResourceList, len(cs))
	lims := make([]v1.ResourceList, len(cs))
	k := in.containerKey[:0]
	shareable := true
	for i := range cs {
		c := &cs[i]
		// listLocked builds its key in in.key: it is copied into this
		// one before the next call.
		var listKey []byte
		reqs[i], listKey = in.listLocked(c.Resources.Requests)
		k = appendKeyString(k, string(listKey))
		lims[i], listKey = in.listLocked(c.Resources.Limits)
		k = appendKeyString(k, string(listKey))
		if len(c.RestartPolicyRules) > 0 || len(c.Resources.Claims) > 0 {
			shareable = false
			continue
		}
		k = appendKeyString(k, c.Name)
		k = appendKeyString(k, c.Image)
		for _, p := range c.Ports {
			k = appendKeyString(k, p.Name)
			k = appendKeyInt(k, int64(p.HostPort))
			k = appendKeyInt(k, int64(p.ContainerPort))
			k = appendKeyString(k, string(p.Protocol))
			k = appendKeyString(k, p.HostIP)
		}
		k = append(k, '|')
		for _, r := range c.ResizePolicy {
			k = appendKeyString(k, string(r.ResourceName))
			k = appendKeyString(k, string(r.RestartPolicy))
		}
		k = append(k, '|')
		if c.RestartPolicy != nil {
			k = appendKeyString(k, string(*c.RestartPolicy))
		}
		k = append(k, ';')
	}
	in.containerKey = k
	if shareable {
		if shared, ok := in.containers[string(k)]; ok {
			return shared
		}
	}
	out := slices.Clone(cs)
	for i := range out {
		out[i].Resources.Requests, out[i].Resources.Limits = reqs[i], lims[i]
	}
	if !shareable {
		return out
	}
	if len(in.containers) >= maxInterned {
		clear(in.sharedContainers)
	}
	shared := intern(in.containers, k, out)
	in.sharedContainers[&shared[0]] = struct{}{}
	return shared
}

// tolerationsLocked returns the shared tolerations equal to ts, or ts.
func (in *interner) tolerationsLocked(ts []v1.Toleration) []v1.Toleration {
	if len(ts) == 0 {
		return ts
	}
	k := in.key[:0]
	for _, t := range ts {
		k = appendKeyString(k, t.Key)
		k = appendKeyString(k, string(t.Operator))
		k = appendKeyString(k, t.Value)
		k = appendKeyString(k, string(t.Effect))
		if t.TolerationSeconds != nil {
			k = appendKeyInt(k, *t.TolerationSeconds)
		} else {
			k = append(k, '-')
		}
	}
	in.key = k
	return intern(in.tolerations, k, ts)
}

// strMapLocked returns the shared map equal to m (kind separates labels
// from annotations and selectors), or m, which becomes the shared one.
func (in *interner) strMapLocked(kind string, m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	keys := in.mapKeys[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	k := append(in.key[:0], kind...)
	for _, name := range keys {
		// Annotation values may hold any byte: length prefixes keep
		// keys unambiguous.
		k = appendKeyString(k, name)
		k = appendKeyString(k, m[name])
	}
	clear(keys)
	in.mapKeys, in.key = keys, k
	return intern(in.strMaps, k, m)
}

// listLocked returns the shared resource list equal to l, or l, and its
// key, valid until the interner builds another key.
func (in *interner) listLocked(l v1.ResourceList) (v1.ResourceList, []byte) {
	if len(l) == 0 {
		return l, nil
	}
	names := in.mapKeys[:0]
	for name := range l {
		names = append(names, string(name))
	}
	slices.Sort(names)
	k := in.key[:0]
	for _, name := range names {
		q := l[v1.ResourceName(name)]
		k = appendKeyString(k, name)
		// Equal quantities share, however they are written (1000m and
		// 1): whole values by their value, others in canonical form
		// (which allocates for a binary suffix, hence the first case).
		if milli := q.MilliValue(); milli%1000 == 0 && q.CmpInt64(milli/1000) == 0 {
			k = append(k, 'i')
			k = appendKeyInt(k, milli/1000)
			continue
		}
		number, suffix := q.CanonicalizeBytes(in.quantity[:0])
		in.quantity = number
		k = appendKeyString(k, string(number))
		k = appendKeyString(k, string(suffix))
	}
	clear(names)
	in.mapKeys, in.key = names, k
	return intern(in.lists, k, l), k
}

// ownersLocked returns the shared owner references equal to refs, or refs.
func (in *interner) ownersLocked(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return refs
	}
	k := in.key[:0]
	for _, r := range refs {
		k = appendKeyString(k, r.APIVersion)
		k = appendKeyString(k, r.Kind)
		k = appendKeyString(k, r.Name)
		k = appendKeyString(k, string(r.UID))
		k = appendKeyString(k, boolPtrString(r.Controller))
		k = appendKeyString(k, boolPtrString(r.BlockOwnerDeletion))
	}
	in.key = k
	return intern(in.owners, k, refs)
}

// intern returns table[key] if set, else stores v there under a copy of
// key (emptying a full table first) and returns v. A lookup that finds
// its value allocates nothing.
func intern[V any](table map[string]V, key []byte, v V) V {
	if shared, ok := table[string(key)]; ok {
		return shared
	}
	if len(table) >= maxInterned {
		clear(table)
	}
	table[string(key)] = v
	return v
}

// appendKeyString appends s prefixed by its length, so that no two
// sequences of strings give the same key.
func appendKeyString(k []byte, s string) []byte {
	k = strconv.AppendUint(k, uint64(len(s)), 10)
	k = append(k, ':')
	return append(k, s...)
}

// appendKeyInt appends n and a terminator.
func appendKeyInt(k []byte, n int64) []byte {
	k = strconv.AppendInt(k, n, 10)
	return append(k, ',')
}

func boolPtrString(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "t"
	default:
		return "f"
	}
}
