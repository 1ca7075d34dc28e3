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
	"errors"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// noGrant is the cap of a node without one under RequireNodeCaps. Caps are
// shared, never modified (see framework.NodeInfo.Cap).
var noGrant = &resources.Resource{}

// SetNodeCap implements eventhandlers.NodeCapCache.
func (c *SchedulerCache) SetNodeCap(nodeName string, limit resources.Resource) error {
	if nodeName == "" {
		return errors.New("setting a node cap: empty node name")
	}
	limit = limit.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.caps[nodeName] = &limit
	c.applyCapLocked(nodeName)
	return nil
}

// RemoveNodeCap implements eventhandlers.NodeCapCache.
func (c *SchedulerCache) RemoveNodeCap(nodeName string) error {
	if nodeName == "" {
		return errors.New("removing a node cap: empty node name")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.caps[nodeName]; !ok {
		return nil
	}
	delete(c.caps, nodeName)
	c.applyCapLocked(nodeName)
	return nil
}

// RequireNodeCaps implements eventhandlers.NodeCapCache.
func (c *SchedulerCache) RequireNodeCaps() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.requireCaps {
		return
	}
	c.requireCaps = true
	for name := range c.nodes {
		c.applyCapLocked(name)
	}
}

// capOfLocked is the cap of the node name: its own, no grant under
// RequireNodeCaps, or nil.
func (c *SchedulerCache) capOfLocked(name string) *resources.Resource {
	if limit, ok := c.caps[name]; ok {
		return limit
	}
	if c.requireCaps {
		return noGrant
	}
	return nil
}

// applyCapLocked gives the listed node name its current cap.
func (c *SchedulerCache) applyCapLocked(name string) {
	item, ok := c.nodes[name]
	if !ok {
		return
	}
	item.info.Cap = c.capOfLocked(name)
	c.touchLocked(item)
}

// noteCapLocked keeps the set of nodes whose cap is exceeded, and its
// gauge, up to date after a change of info (touchLocked calls it).
func (c *SchedulerCache) noteCapLocked(info *framework.NodeInfo) {
	exceeded := !info.Placeholder && info.CapExceeded()
	if exceeded == c.capExceeded[info.Name()] {
		return
	}
	if exceeded {
		c.capExceeded[info.Name()] = true
	} else {
		delete(c.capExceeded, info.Name())
	}
	c.metrics.GrantOvercommittedNodes.Set(float64(len(c.capExceeded)))
}

// CapExceededNodes implements eventhandlers.NodeCapCache.
func (c *SchedulerCache) CapExceededNodes() []eventhandlers.CapExceeded {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]eventhandlers.CapExceeded, 0, len(c.capExceeded))
	for name := range c.capExceeded {
		item, ok := c.nodes[name]
		if !ok || item.info.Cap == nil {
			continue
		}
		info := item.info
		e := eventhandlers.CapExceeded{Node: info.Node, Cap: info.Cap.Clone(), Used: info.OwnRequested.Clone()}
		for _, t := range info.Pods {
			if t.Own && t.Counted {
				e.Pods = append(e.Pods, t.PodObject())
				e.Tasks = append(e.Tasks, t)
			}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node.Name < out[j].Node.Name })
	return out
}

// ownTask returns the task of pod as an informer reports it, in the job
// the cache's rule gives it (see resolverLocked), marked own when pod is
// this scheduler's. The caller holds mu: when the cache has a
// task of the same pod whose requests cannot have changed, its requests
// are reused instead of computed again (most updates are of status); so
// are its claim devices (see claimDevicesFor).
func (c *SchedulerCache) ownTask(pod *v1.Pod) *framework.TaskInfo {
	return c.ownTaskOf(pod, nil)
}

// ownTaskOf is ownTask for a bound pod made from rec, the informers'
// record of it (nil: none): the task keeps rec.
func (c *SchedulerCache) ownTaskOf(pod *v1.Pod, rec *framework.PodRecord) *framework.TaskInfo {
	m := c.membershipLocked(pod)
	old := c.tasks[pod.UID]
	var requests resources.Resource
	if old != nil && old.Status != framework.TaskAssumed && sameTaskRequestInputs(old, pod) {
		requests = old.Requests.Clone()
	} else {
		requests = podRequests(pod)
	}
	var t *framework.TaskInfo
	if rec != nil {
		t = framework.NewTaskInfoOfRecord(rec, pod, requests, m)
	} else {
		t = framework.NewTaskInfoInGroup(pod, requests, m)
	}
	t.ClaimDevices = c.claimDevicesFor(old, pod)
	t.Own = c.schedulers[pod.Spec.SchedulerName]
	t.RuntimeBounds = c.runtimeBounds
	return t
}

// podRequests is resources.PodRequests(pod). For the common pod, without
// init containers, pod-level requests or overhead, it sums the container
// requests itself, exactly as the Kubernetes helper does (in quantities,
// converted once), but without the helper's copy of every container: a
// few KB of garbage per pod, which at 150,000 pods made the initial sync
// spend its time collecting it.
func podRequests(pod *v1.Pod) resources.Resource {
	s := &pod.Spec
	if len(s.InitContainers) > 0 || s.Resources != nil || s.Overhead != nil {
		return resources.PodRequests(pod)
	}
	sum := make(v1.ResourceList, 2)
	for i := range s.Containers {
		for name, q := range s.Containers[i].Resources.Requests {
			if v, ok := sum[name]; ok {
				v.Add(q)
				sum[name] = v
			} else {
				sum[name] = q.DeepCopy()
			}
		}
	}
	r := resources.FromList(sum)
	r.Pods = 1
	return r
}

// sameRequestInputs reports whether a and b agree on everything
// resources.PodRequests reads: the requests of every container and init
// container, the restart policy of init containers (sidecars), the
// pod-level requests and the overhead.
func sameRequestInputs(a, b *v1.Pod) bool {
	return a == b || requestInputsOfPod(a).same(requestInputsOfPod(b))
}

// requestInputs are what resources.PodRequests reads of a pod.
type requestInputs struct {
	containers, initContainers []v1.Container
	overhead                   v1.ResourceList
	resources                  *v1.ResourceRequirements
}

func requestInputsOfPod(p *v1.Pod) requestInputs {
	return requestInputs{p.Spec.Containers, p.Spec.InitContainers, p.Spec.Overhead, p.Spec.Resources}
}

func (a requestInputs) same(b requestInputs) bool {
	if len(a.containers) != len(b.containers) || len(a.initContainers) != len(b.initContainers) ||
		!sameResourceList(a.overhead, b.overhead) || (a.resources == nil) != (b.resources == nil) {
		return false
	}
	if a.resources != nil && !sameResourceList(a.resources.Requests, b.resources.Requests) {
		return false
	}
	for i := range a.containers {
		if !sameResourceList(a.containers[i].Resources.Requests, b.containers[i].Resources.Requests) {
			return false
		}
	}
	for i := range a.initContainers {
		ai, bi := &a.initContainers[i], &b.initContainers[i]
		if (ai.RestartPolicy == nil) != (bi.RestartPolicy == nil) ||
			ai.RestartPolicy != nil && *ai.RestartPolicy != *bi.RestartPolicy ||
			!sameResourceList(ai.Resources.Requests, bi.Resources.Requests) {
			return false
		}
	}
	return true
}

// sameResourceList reports whether a and b hold the same quantities.
func sameResourceList(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

// sameTaskRequestInputs is sameRequestInputs of old's pod and pod,
// reading a bound task's record without making a pod of it.
func sameTaskRequestInputs(old *framework.TaskInfo, pod *v1.Pod) bool {
	r := old.Record()
	if r == nil {
		return sameRequestInputs(old.Pod, pod)
	}
	return requestInputs{r.Containers(), r.InitContainers(), r.Overhead(), r.Resources()}.same(requestInputsOfPod(pod))
}
