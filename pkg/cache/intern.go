package cache

import (
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxInterned bounds each table of an interner; a full table is emptied
// and refilled. The replicas of one workload share their labels,
// requests and owner, so a few thousand entries cover a large cluster.
const maxInterned = 8192

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
	// key is reused to build lookup keys under mu.
	key strings.Builder
}

// podInterner serves the transform of every informer of the process.
var podInterner = newInterner()

func newInterner() *interner {
	return &interner{
		strMaps: map[string]map[string]string{},
		lists:   map[string]v1.ResourceList{},
		owners:  map[string][]metav1.OwnerReference{},
	}
}

// internPod replaces the labels, annotations, node selector, owner
// references and container requests and limits of pod by equal shared
// values.
func (in *interner) internPod(pod *v1.Pod) {
	in.mu.Lock()
	defer in.mu.Unlock()
	pod.Labels = in.strMapLocked("l", pod.Labels)
	pod.Annotations = in.strMapLocked("a", pod.Annotations)
	pod.Spec.NodeSelector = in.strMapLocked("n", pod.Spec.NodeSelector)
	pod.OwnerReferences = in.ownersLocked(pod.OwnerReferences)
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			r.Requests = in.listLocked(r.Requests)
			r.Limits = in.listLocked(r.Limits)
		}
	}
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

// listLocked returns the shared resource list equal to l, or l.
func (in *interner) listLocked(l v1.ResourceList) v1.ResourceList {
	if len(l) == 0 {
		return l
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
	return intern(in.lists, in.key.String(), l)
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
