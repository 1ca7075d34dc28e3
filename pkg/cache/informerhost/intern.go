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
	"strings"
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
	// key is reused to build lookup keys under mu.
	key strings.Builder
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
	in.key.Reset()
	for i := range cs {
		c := &cs[i]
		if !c.LastProbeTime.IsZero() || !c.LastTransitionTime.IsZero() {
			return cs
		}
		writeLenString(&in.key, string(c.Type))
		writeLenString(&in.key, string(c.Status))
		writeLenString(&in.key, c.Reason)
		writeLenString(&in.key, c.Message)
		writeLenString(&in.key, strconv.FormatInt(c.ObservedGeneration, 10))
	}
	return intern(in.conditions, in.key.String(), cs)
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
	var key strings.Builder
	shareable := true
	for i := range cs {
		c := &cs[i]
		var reqKey, limKey string
		reqs[i], reqKey = in.listLocked(c.Resources.Requests)
		lims[i], limKey = in.listLocked(c.Resources.Limits)
		if len(c.RestartPolicyRules) > 0 || len(c.Resources.Claims) > 0 {
			shareable = false
			continue
		}
		writeLenString(&key, c.Name)
		writeLenString(&key, c.Image)
		writeLenString(&key, reqKey)
		writeLenString(&key, limKey)
		for _, p := range c.Ports {
			writeLenString(&key, p.Name)
			writeLenString(&key, strconv.Itoa(int(p.HostPort)))
			writeLenString(&key, strconv.Itoa(int(p.ContainerPort)))
			writeLenString(&key, string(p.Protocol))
			writeLenString(&key, p.HostIP)
		}
		key.WriteByte('|')
		for _, r := range c.ResizePolicy {
			writeLenString(&key, string(r.ResourceName))
			writeLenString(&key, string(r.RestartPolicy))
		}
		key.WriteByte('|')
		if c.RestartPolicy != nil {
			writeLenString(&key, string(*c.RestartPolicy))
		}
		key.WriteByte(';')
	}
	if shareable {
		if shared, ok := in.containers[key.String()]; ok {
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
	shared := intern(in.containers, key.String(), out)
	in.sharedContainers[&shared[0]] = struct{}{}
	return shared
}

// tolerationsLocked returns the shared tolerations equal to ts, or ts.
func (in *interner) tolerationsLocked(ts []v1.Toleration) []v1.Toleration {
	if len(ts) == 0 {
		return ts
	}
	in.key.Reset()
	for _, t := range ts {
		writeLenString(&in.key, t.Key)
		writeLenString(&in.key, string(t.Operator))
		writeLenString(&in.key, t.Value)
		writeLenString(&in.key, string(t.Effect))
		if t.TolerationSeconds != nil {
			writeLenString(&in.key, strconv.FormatInt(*t.TolerationSeconds, 10))
		} else {
			writeLenString(&in.key, "-")
		}
	}
	return intern(in.tolerations, in.key.String(), ts)
}

// strMapLocked returns the shared map equal to m (kind separates labels
// from annotations and selectors), or m, which becomes the shared one.
func (in *interner) strMapLocked(kind string, m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	in.key.Reset()
	in.key.WriteString(kind)
	for _, k := range keys {
		// Annotation values may hold any byte: length prefixes keep
		// keys unambiguous.
		writeLenString(&in.key, k)
		writeLenString(&in.key, m[k])
	}
	return intern(in.strMaps, in.key.String(), m)
}

// listLocked returns the shared resource list equal to l, or l, and its
// key.
func (in *interner) listLocked(l v1.ResourceList) (v1.ResourceList, string) {
	if len(l) == 0 {
		return l, ""
	}
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, string(name))
	}
	slices.Sort(names)
	in.key.Reset()
	for _, name := range names {
		q := l[v1.ResourceName(name)]
		writeLenString(&in.key, name)
		// The canonical form: 1000m and 1 share, as they are equal.
		writeLenString(&in.key, q.String())
	}
	key := in.key.String()
	return intern(in.lists, key, l), key
}

// ownersLocked returns the shared owner references equal to refs, or refs.
func (in *interner) ownersLocked(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return refs
	}
	in.key.Reset()
	for _, r := range refs {
		writeLenString(&in.key, r.APIVersion)
		writeLenString(&in.key, r.Kind)
		writeLenString(&in.key, r.Name)
		writeLenString(&in.key, string(r.UID))
		writeLenString(&in.key, boolPtrString(r.Controller))
		writeLenString(&in.key, boolPtrString(r.BlockOwnerDeletion))
	}
	return intern(in.owners, in.key.String(), refs)
}

// intern returns table[key] if set, else stores v there (emptying a full
// table first) and returns v.
func intern[V any](table map[string]V, key string, v V) V {
	if shared, ok := table[key]; ok {
		return shared
	}
	if len(table) >= maxInterned {
		clear(table)
	}
	table[key] = v
	return v
}

// writeLenString writes s prefixed by its length, so that no two
// sequences of strings give the same key.
func writeLenString(b *strings.Builder, s string) {
	var n [10]byte
	i := len(n)
	l := uint64(len(s))
	for {
		i--
		n[i] = byte('0' + l%10)
		l /= 10
		if l == 0 {
			break
		}
	}
	b.Write(n[i:])
	b.WriteByte(':')
	b.WriteString(s)
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
