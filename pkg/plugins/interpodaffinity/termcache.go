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

package interpodaffinity

import (
	"sync"
	"weak"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// maxCachedPods bounds termCache: when it holds more pods, it starts
// over. Each entry is a few hundred bytes.
const maxCachedPods = 16384

// existingTerms are the terms of a pod already on a node, parsed once.
// Each error is that kind's parse error; the callers skip the pod's terms
// from the first kind that failed on, as they did when they parsed them
// on every cycle.
type existingTerms struct {
	required, requiredAnti    []term
	preferred, preferredAnti  []weightedTerm
	errRequired, errAnti      error
	errPreferred, errPrefAnti error
}

// termCache keeps the parsed terms of existing pods across cycles, by the
// object a task holds of its pod: the record of a bound pod, the pod of an
// assumed one. Neither is changed once the cache (and so the snapshot)
// holds it: an update is a new object, hence a new key. The keys are weak
// pointers, so a cached entry does not keep a deleted pod's object alive;
// the entries of dead pods are dropped when the cache starts over.
//
// The parsed terms are shared by every cycle and must not be changed; the
// incoming pod's terms, whose namespace selectors PreFilterPod resolves in
// place, are never taken from here.
type termCache struct {
	// mu guards pods: the lookup and insertion of one pod's entry.
	mu   sync.Mutex
	pods map[termKey]*existingTerms
}

// termKey is a task's pod object: its record, or its pod when it has no
// record.
type termKey struct {
	rec weak.Pointer[framework.PodRecord]
	pod weak.Pointer[v1.Pod]
}

func keyOf(t *framework.TaskInfo) termKey {
	if r := t.Record(); r != nil {
		return termKey{rec: weak.Make(r)}
	}
	return termKey{pod: weak.Make(t.Pod)}
}

// get returns the parsed terms of t's pod, parsing them on first use.
func (c *termCache) get(t *framework.TaskInfo) *existingTerms {
	key := keyOf(t)
	c.mu.Lock()
	terms, ok := c.pods[key]
	c.mu.Unlock()
	if ok {
		return terms
	}
	terms = parseExisting(t)
	c.mu.Lock()
	if c.pods == nil || len(c.pods) >= maxCachedPods {
		c.pods = make(map[termKey]*existingTerms)
	}
	c.pods[key] = terms
	c.mu.Unlock()
	return terms
}

// parseExisting parses the terms of task's pod.
func parseExisting(task *framework.TaskInfo) *existingTerms {
	ns, a := task.GetNamespace(), task.Affinity()
	t := &existingTerms{}
	t.required, t.errRequired = parseTerms(ns, "podAffinity", requiredAffinity(a))
	t.requiredAnti, t.errAnti = parseTerms(ns, "podAntiAffinity", requiredAntiAffinity(a))
	rawAff, rawAnti := preferredTerms(a)
	t.preferred, t.errPreferred = parseWeighted(ns, "podAffinity", rawAff)
	t.preferredAnti, t.errPrefAnti = parseWeighted(ns, "podAntiAffinity", rawAnti)
	return t
}
