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

package defaulthandler_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// schedulerName is the scheduler the fake cache is responsible for, the one
// MakePod uses by default.
const schedulerName = "batch-scheduler"

// fakeCache is an eventhandlers.Cache that records every call, in order,
// as "<Method> <key>" strings (e.g. "AddPendingPod default/p",
// "MoveAll NodeAdd"), and the objects each raised event carried.
type fakeCache struct {
	t *testing.T

	// responsible decides IsResponsibleFor; by default, pods of
	// schedulerName.
	responsible func(*v1.Pod) bool
	// freed decides what DeletePod reports; by default, whether the pod
	// is bound and not finished, as the cache would for a pod it had
	// bound.
	freed func(*v1.Pod) bool
	// err is returned by every method that returns an error.
	err error

	mu     sync.Mutex
	calls  []string
	moves  []move
	queues []queueCall
}

// queueCall is one SetTenantQueue call.
type queueCall struct {
	Source, Name string
	// Spec is nil for a queue the cache is to forget.
	Spec *framework.QueueSpec
}

// move is one MoveAllToActiveOrBackoffQueue call.
type move struct {
	Event          framework.ClusterEvent
	OldObj, NewObj any
}

var (
	_ eventhandlers.Cache            = (*fakeCache)(nil)
	_ eventhandlers.TenantQueueCache = (*fakeCache)(nil)
)

func newFakeCache(t *testing.T) *fakeCache {
	return &fakeCache{
		t:           t,
		responsible: func(p *v1.Pod) bool { return p.Spec.SchedulerName == schedulerName },
		freed: func(p *v1.Pod) bool {
			return p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
		},
	}
}

func (f *fakeCache) record(method, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method+" "+key)
}

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func (f *fakeCache) IsResponsibleFor(pod *v1.Pod) bool {
	f.record("IsResponsibleFor", podKey(pod))
	return f.responsible(pod)
}

func (f *fakeCache) AddOrUpdateNode(node *v1.Node) error {
	f.record("AddOrUpdateNode", node.Name)
	return f.err
}

func (f *fakeCache) RemoveNode(node *v1.Node) error {
	f.record("RemoveNode", node.Name)
	return f.err
}

func (f *fakeCache) SetExternalUsage(key, nodeName string, usage resources.Resource) error {
	f.record("SetExternalUsage", key+" "+nodeName+" "+usage.String())
	return f.err
}

func (f *fakeCache) RemoveExternalUsage(key string) error {
	f.record("RemoveExternalUsage", key)
	return f.err
}

func (f *fakeCache) SetNodeCap(nodeName string, limit resources.Resource) error {
	f.record("SetNodeCap", nodeName+" "+limit.String())
	return f.err
}

func (f *fakeCache) RemoveNodeCap(nodeName string) error {
	f.record("RemoveNodeCap", nodeName)
	return f.err
}

func (f *fakeCache) RequireNodeCaps() { f.record("RequireNodeCaps", "") }

func (f *fakeCache) CapExceededNodes() []eventhandlers.CapExceeded { return nil }

func (f *fakeCache) AddPod(pod *v1.Pod) error {
	f.record("AddPod", podKey(pod))
	return f.err
}

func (f *fakeCache) UpdatePod(oldPod, newPod *v1.Pod) error {
	f.record("UpdatePod", podKey(newPod))
	if podKey(oldPod) != podKey(newPod) {
		f.t.Errorf("UpdatePod(%s, %s): different pods", podKey(oldPod), podKey(newPod))
	}
	return f.err
}

func (f *fakeCache) DeletePod(pod *v1.Pod) (bool, error) {
	f.record("DeletePod", podKey(pod))
	if f.err != nil {
		return false, f.err
	}
	return f.freed(pod), nil
}

func (f *fakeCache) AddPendingPod(pod *v1.Pod) error {
	f.record("AddPendingPod", podKey(pod))
	return f.err
}

func (f *fakeCache) UpdatePendingPod(oldPod, newPod *v1.Pod) error {
	f.record("UpdatePendingPod", podKey(newPod))
	if podKey(oldPod) != podKey(newPod) {
		f.t.Errorf("UpdatePendingPod(%s, %s): different pods", podKey(oldPod), podKey(newPod))
	}
	return f.err
}

func (f *fakeCache) RemovePendingPod(pod *v1.Pod) error {
	f.record("RemovePendingPod", podKey(pod))
	return f.err
}

func (f *fakeCache) MoveAllToActiveOrBackoffQueue(event framework.ClusterEvent, oldObj, newObj any) {
	f.record("MoveAll", event.String())
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moves = append(f.moves, move{Event: event, OldObj: oldObj, NewObj: newObj})
}

// WatchTenantQueues implements eventhandlers.TenantQueueCache.
func (f *fakeCache) WatchTenantQueues() {}

// SetTenantQueue records the call as "SetQueue <source>/<name>" and keeps
// spec.
func (f *fakeCache) SetTenantQueue(source, name string, spec *framework.QueueSpec) {
	f.record("SetQueue", source+"/"+name)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queues = append(f.queues, queueCall{Source: source, Name: name, Spec: spec})
}

// QueueCalls returns the recorded SetTenantQueue calls.
func (f *fakeCache) QueueCalls() []queueCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queues)
}

// Calls returns every recorded call, in order.
func (f *fakeCache) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Effects returns the recorded calls that change state or raise events,
// leaving out the query IsResponsibleFor.
func (f *fakeCache) Effects() []string {
	var out []string
	for _, c := range f.Calls() {
		if !strings.HasPrefix(c, "IsResponsibleFor ") {
			out = append(out, c)
		}
	}
	return out
}

// Moves returns the recorded MoveAll calls.
func (f *fakeCache) Moves() []move {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.moves)
}

// Reset forgets the recorded calls.
func (f *fakeCache) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.moves, f.queues = nil, nil, nil
}

// diffCalls describes how got differs from want, or returns "".
func diffCalls(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	return fmt.Sprintf("calls:\n  got:  %q\n  want: %q", got, want)
}
