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

package ledger

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Key identifies a placement in a ledger: what it is, and its namespace
// and name.
type Key struct {
	Kind, Namespace, Name string
}

// KeyOf is e's key.
func KeyOf(e *v1alpha1.LedgerEntry) Key {
	return Key{Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
}

// PodEntry is the entry recording pod, placed by placer, using requests.
// The pod count is left out: the ledger bounds what placers share, and
// only pods take pod slots.
func PodEntry(placer string, pod *v1.Pod, requests resources.Resource) v1alpha1.LedgerEntry {
	requests = requests.Clone()
	requests.Pods = 0
	return v1alpha1.LedgerEntry{Placer: placer, Kind: v1alpha1.LedgerEntryKindPod, Namespace: pod.Namespace,
		Name: pod.Name, UID: pod.UID, Resources: requests.ToList()}
}

// Put adds e to l, replacing the entry with the same key.
func Put(l *v1alpha1.NodeLedger, e v1alpha1.LedgerEntry) {
	k := KeyOf(&e)
	for i := range l.Spec.Entries {
		if KeyOf(&l.Spec.Entries[i]) == k {
			l.Spec.Entries[i] = e
			return
		}
	}
	l.Spec.Entries = append(l.Spec.Entries, e)
}

// Find returns l's entry with key k, or nil.
func Find(l *v1alpha1.NodeLedger, k Key) *v1alpha1.LedgerEntry {
	for i := range l.Spec.Entries {
		if KeyOf(&l.Spec.Entries[i]) == k {
			return &l.Spec.Entries[i]
		}
	}
	return nil
}

// RemoveIf takes out of l the entries drop returns true for, and returns
// how many it took.
func RemoveIf(l *v1alpha1.NodeLedger, drop func(*v1alpha1.LedgerEntry) bool) int {
	kept := l.Spec.Entries[:0]
	n := 0
	for i := range l.Spec.Entries {
		if drop(&l.Spec.Entries[i]) {
			n++
			continue
		}
		kept = append(kept, l.Spec.Entries[i])
	}
	clear(l.Spec.Entries[len(kept):])
	l.Spec.Entries = kept
	return n
}

// Remove takes the entry with key k out of l and reports whether it was
// there.
func Remove(l *v1alpha1.NodeLedger, k Key) bool {
	return RemoveIf(l, func(e *v1alpha1.LedgerEntry) bool { return KeyOf(e) == k }) > 0
}

// Usage is what l's entries use together.
func Usage(l *v1alpha1.NodeLedger) resources.Resource {
	var u resources.Resource
	if l == nil {
		return u
	}
	for i := range l.Spec.Entries {
		u.Add(resources.FromList(l.Spec.Entries[i].Resources))
	}
	return u
}

// PodUIDs are the UIDs of l's pod entries.
func PodUIDs(l *v1alpha1.NodeLedger) map[types.UID]bool {
	out := map[types.UID]bool{}
	if l == nil {
		return out
	}
	for i := range l.Spec.Entries {
		if e := &l.Spec.Entries[i]; e.Kind == v1alpha1.LedgerEntryKindPod && e.UID != "" {
			out[e.UID] = true
		}
	}
	return out
}

// Joined reports whether placer has joined l.
func Joined(l *v1alpha1.NodeLedger, placer string) bool {
	if l == nil {
		return false
	}
	for _, p := range l.Spec.Placers {
		if p.Name == placer {
			return true
		}
	}
	return false
}

// Missing returns the placers of want that have not joined l.
func Missing(l *v1alpha1.NodeLedger, want []string) []string {
	var out []string
	for _, p := range want {
		if !Joined(l, p) {
			out = append(out, p)
		}
	}
	return out
}

// Join adds placer to l's placers, joined at now, and reports whether it
// was missing.
func Join(l *v1alpha1.NodeLedger, placer string, now time.Time) bool {
	if Joined(l, placer) {
		return false
	}
	l.Spec.Placers = append(l.Spec.Placers, v1alpha1.LedgerPlacer{Name: placer, JoinedAt: metav1.NewTime(now)})
	return true
}

// Short lists the resources of add that do not fit in allocatable once
// used is taken; empty when add fits. The pod count is not checked (see
// PodEntry), and a resource add does not ask for is never short, so a
// placement that uses no memory fits on a node whose memory is full.
func Short(allocatable, used, add resources.Resource) []v1.ResourceName {
	free := allocatable.Clone()
	free.Sub(used)
	add = add.Clone()
	add.Pods = 0
	free.Pods = 0
	return free.Insufficient(add)
}
