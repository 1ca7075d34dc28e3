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

package cache

import (
	"hash/maphash"
	"iter"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// joblessKey is the namespace and name of the pod of a task without a job
// record: the job's ID, which for a single pod says no more.
type joblessKey struct{ namespace, name string }

// joblessIndex finds the task without a job record (see KeepsJobRecord)
// of a pod by its namespace and name. Most of a large cluster's pods are
// such tasks, so the index is keyed by a 64-bit hash of the pair, an
// eight-byte key where the pair's two string headers take 32 (150,000
// bound pods: about 4 MB against 11.5). The task itself says which pod
// it is, so a lookup compares the names before it answers; the rare task
// whose hash another pod's task already holds goes to collided, keyed by
// the names.
//
// It has no lock of its own: SchedulerCache.mu guards it like the maps
// beside it.
type joblessIndex struct {
	// hash is hashKey but in the tests that make every key collide.
	hash     func(namespace, name string) uint64
	seed     maphash.Seed
	byHash   map[uint64]*framework.TaskInfo
	collided map[joblessKey]*framework.TaskInfo
}

func newJoblessIndex() *joblessIndex {
	x := &joblessIndex{seed: maphash.MakeSeed(), byHash: map[uint64]*framework.TaskInfo{}}
	x.hash = x.hashKey
	return x
}

func (x *joblessIndex) hashKey(namespace, name string) uint64 {
	var h maphash.Hash
	h.SetSeed(x.seed)
	h.WriteString(namespace)
	// The separator keeps ("ab", "c") and ("a", "bc") apart; neither
	// a namespace nor a name may hold a zero byte.
	h.WriteByte(0)
	h.WriteString(name)
	return h.Sum64()
}

// names reports whether t is the task of the pod namespace/name.
func names(t *framework.TaskInfo, namespace, name string) bool {
	return t.Job.Name == name && t.Job.Namespace == namespace
}

// get returns the task indexed for the pod namespace/name.
func (x *joblessIndex) get(namespace, name string) (*framework.TaskInfo, bool) {
	if t, ok := x.byHash[x.hash(namespace, name)]; ok && names(t, namespace, name) {
		return t, true
	}
	t, ok := x.collided[joblessKey{namespace: namespace, name: name}]
	return t, ok
}

// set indexes t under its job, in place of any task indexed there.
func (x *joblessIndex) set(t *framework.TaskInfo) {
	key := joblessKey{namespace: t.Job.Namespace, name: t.Job.Name}
	if _, ok := x.collided[key]; ok {
		x.collided[key] = t
		return
	}
	h := x.hash(key.namespace, key.name)
	if cur, ok := x.byHash[h]; ok && !names(cur, key.namespace, key.name) {
		if x.collided == nil {
			x.collided = map[joblessKey]*framework.TaskInfo{}
		}
		x.collided[key] = t
		return
	}
	x.byHash[h] = t
}

// replace puts t in the place of the task indexed under its job, if that
// one is of the same pod (UID); it reports whether it did.
func (x *joblessIndex) replace(t *framework.TaskInfo) bool {
	return x.swap(t, t)
}

// remove takes t out of the index, if the task indexed under its job is of
// the same pod (a pod deleted and created again under its name, whose
// events crossed, is left alone); it reports whether it did.
func (x *joblessIndex) remove(t *framework.TaskInfo) bool {
	return x.swap(t, nil)
}

// swap puts with (nil: nothing) in the place of the task indexed under
// old's job, if that one has old's UID.
func (x *joblessIndex) swap(old, with *framework.TaskInfo) bool {
	key := joblessKey{namespace: old.Job.Namespace, name: old.Job.Name}
	uid := old.GetUID()
	h := x.hash(key.namespace, key.name)
	if cur, ok := x.byHash[h]; ok && names(cur, key.namespace, key.name) {
		if cur.GetUID() != uid {
			return false
		}
		setOrDelete(x.byHash, h, with)
		return true
	}
	cur, ok := x.collided[key]
	if !ok || cur.GetUID() != uid {
		return false
	}
	setOrDelete(x.collided, key, with)
	return true
}

// setOrDelete sets m[k] to t, or deletes k when t is nil.
func setOrDelete[K comparable](m map[K]*framework.TaskInfo, k K, t *framework.TaskInfo) {
	if t == nil {
		delete(m, k)
		return
	}
	m[k] = t
}

func (x *joblessIndex) len() int { return len(x.byHash) + len(x.collided) }

// all yields every indexed task once.
func (x *joblessIndex) all() iter.Seq[*framework.TaskInfo] {
	return func(yield func(*framework.TaskInfo) bool) {
		for _, t := range x.byHash {
			if !yield(t) {
				return
			}
		}
		for _, t := range x.collided {
			if !yield(t) {
				return
			}
		}
	}
}
