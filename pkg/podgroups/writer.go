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

package podgroups

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Condition type and reasons of a native PodGroup, as kube-scheduler
// writes them (k8s.io/api/scheduling/v1beta1).
const (
	ConditionInitiallyScheduled = "PodGroupInitiallyScheduled"
	// CompositeConditionInitiallyScheduled is a CompositePodGroup's
	// condition of the same meaning, for the gang of its children.
	CompositeConditionInitiallyScheduled = "CompositePodGroupInitiallyScheduled"
	ReasonScheduled                      = "Scheduled"
	ReasonUnschedulable                  = "Unschedulable"
)

// JobSource returns a clone of a job of the scheduler cache
// (pkg/cache.SchedulerCache implements it).
type JobSource interface {
	Job(id framework.JobID) (*framework.JobInfo, bool)
}

// Key names a group object.
type Key struct {
	Kind      framework.GroupKind
	Namespace string
	Name      string
}

// Writer writes the status of group objects. Build it with New; feed it
// with ObjectChanged and GangChanged; it writes while Run runs.
type Writer struct {
	client dynamic.Interface
	jobs   JobSource
	// rules are fixed by New.
	rules Rules
	queue workqueue.TypedRateLimitingInterface[Key]

	// mu guards objects and written; it is held only to read or change
	// them, never while writing to the API server.
	mu sync.Mutex
	// objects are the group objects as last seen, with their resource.
	objects map[Key]groupObject
	// written is what was last written per object, so that an object the
	// informer has not yet reported back is not written again.
	written map[Key]string
}

// groupObject is a group object and the resource it was read from, which
// its status is written to.
type groupObject struct {
	u   *unstructured.Unstructured
	gvr schema.GroupVersionResource
}

// StatusRule writes a gang's state into updated, a copy of its group
// object, and returns a summary of what it set (compared with what was
// last written, so that an object is not written twice for one state);
// changed is false when the object already says it. The rules of the
// dialects whose status is written are NativeCondition,
// CoschedulingPhase and VolcanoStatus; the table of dialects
// (pkg/dialects) says which dialect uses which.
type StatusRule func(updated *unstructured.Unstructured, s GangState) (summary string, changed bool, err error)

// GangState summarises a gang's pods for the status of its group object;
// a StatusRule reads it.
type GangState = gangState

// Rules are the status rules by kind of group object: the objects of a
// kind without one are never written.
type Rules map[framework.GroupKind]StatusRule

// New returns a Writer that writes the status of the group objects it is
// given through client, by rules, and reads jobs from jobs.
func New(client dynamic.Interface, jobs JobSource, rules Rules) *Writer {
	return &Writer{
		client: client, jobs: jobs, rules: rules,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[Key](),
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: "podgroup-status"}),
		objects: map[Key]groupObject{},
		written: map[Key]string{},
	}
}

// writes reports whether the Writer writes the status of objects of kind.
func (w *Writer) writes(kind framework.GroupKind) bool { return w.rules[kind] != nil }

// ObjectChanged records the group object u of kind, read from the
// resource gvr (deleted: it is gone). Objects of kinds the Writer does not
// write are ignored.
func (w *Writer) ObjectChanged(kind framework.GroupKind, gvr schema.GroupVersionResource, u *unstructured.Unstructured, deleted bool) {
	if !w.writes(kind) {
		return
	}
	k := Key{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}
	w.mu.Lock()
	if deleted {
		delete(w.objects, k)
		delete(w.written, k)
	} else {
		w.objects[k] = groupObject{u: u, gvr: gvr}
	}
	w.mu.Unlock()
	if !deleted {
		w.queue.Add(k)
	}
}

// GangChanged says that a pod of the gang named name in namespace, defined
// by an object of kind, changed.
func (w *Writer) GangChanged(kind framework.GroupKind, namespace, name string) {
	if !w.writes(kind) {
		return
	}
	w.queue.Add(Key{Kind: kind, Namespace: namespace, Name: name})
}

// Run writes statuses until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for {
		k, shutdown := w.queue.Get()
		if shutdown {
			return
		}
		if err := w.sync(ctx, k); err != nil {
			if ctx.Err() != nil {
				// Shutting down: the write was cancelled, not refused.
				w.queue.Done(k)
				continue
			}
			klog.ErrorS(err, "Writing the status of a gang's group object; retrying", "kind", k.Kind, "object", klog.KRef(k.Namespace, k.Name))
			w.queue.AddRateLimited(k)
		} else {
			w.queue.Forget(k)
		}
		w.queue.Done(k)
	}
}

// compositeChild returns the state of the native PodGroup k, obj,
// whose pods are in the job of its parent CompositePodGroup
// (framework.GroupKindComposite): that of its own pods, the sub-group
// keyed by its name, against its own quorum. ok is false when obj names
// no parent or the composite's job is not (yet) a usable gang of it.
func (w *Writer) compositeChild(obj *unstructured.Unstructured, k Key) (gangState, bool) {
	parent, _, _ := unstructured.NestedString(obj.Object, "spec", "parentCompositePodGroupName")
	if parent == "" {
		return gangState{}, false
	}
	if w.writes(framework.GroupKindComposite) {
		// The child's pods are the composite's: its status follows.
		w.queue.Add(Key{Kind: framework.GroupKindComposite, Namespace: k.Namespace, Name: parent})
	}
	job, ok := w.jobs.Job(framework.JobID{Namespace: k.Namespace, Name: parent, Gang: true, Owner: framework.GroupKindComposite})
	if !ok || job.MinAvailable() < 1 {
		return gangState{}, false
	}
	rules := job.SubGroupRules()
	if len(rules) != 1 || !rules[0].KeyPodGroup || rules[0].Quorums[k.Name] < 1 {
		return gangState{}, false
	}
	return stateOfSome(job, rules[0].Quorums[k.Name], func(t *framework.TaskInfo) bool {
		_, key, ok := framework.SubGroupOf(rules, t)
		return ok && key == k.Name
	}), true
}

// sync writes the status of k's object if it should change.
func (w *Writer) sync(ctx context.Context, k Key) error {
	w.mu.Lock()
	g := w.objects[k]
	w.mu.Unlock()
	obj := g.u
	if obj == nil {
		return nil
	}
	rule := w.rules[k.Kind]
	if rule == nil {
		return nil
	}
	var state gangState
	id := framework.JobID{Namespace: k.Namespace, Name: k.Name, Gang: true}
	if k.Kind == framework.GroupKindComposite {
		id.Owner = framework.GroupKindComposite
	}
	job, ok := w.jobs.Job(id)
	switch {
	case ok && k.Kind == framework.GroupKindComposite && job.MinAvailable() >= 1:
		state = stateOf(job, job.MinAvailable())
	case ok && job.GroupKind() == k.Kind && job.MinAvailable() >= 1:
		state = stateOf(job, job.MinAvailable())
	case !ok && k.Kind == framework.GroupKindNative:
		if state, ok = w.compositeChild(obj, k); !ok {
			return nil
		}
	default:
		return nil
	}
	updated := obj.DeepCopy()
	summary, changed, err := rule(updated, state)
	if err != nil {
		return fmt.Errorf("the status of %s %s/%s: %w", k.Kind, k.Namespace, k.Name, err)
	}
	if !changed {
		return nil
	}
	w.mu.Lock()
	same := w.written[k] == summary+"@"+obj.GetResourceVersion()
	w.mu.Unlock()
	if same {
		return nil
	}
	_, err = w.client.Resource(g.gvr).Namespace(k.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("updating the status of %s %s/%s: %w", k.Kind, k.Namespace, k.Name, err)
	}
	w.mu.Lock()
	w.written[k] = summary + "@" + obj.GetResourceVersion()
	w.mu.Unlock()
	klog.V(2).InfoS("Wrote the status of a gang's group object", "kind", k.Kind, "object", klog.KRef(k.Namespace, k.Name), "status", summary)
	return nil
}

// NativeCondition is the status rule of a native scheduling.k8s.io
// PodGroup: its PodGroupInitiallyScheduled condition, as kube-scheduler
// writes it.
func NativeCondition(updated *unstructured.Unstructured, s GangState) (string, bool, error) {
	return writeInitiallyScheduled(updated, s, ConditionInitiallyScheduled)
}

// CompositeCondition is the status rule of a scheduling.k8s.io
// CompositePodGroup whose policy is a gang: its
// CompositePodGroupInitiallyScheduled condition, True once the whole
// gang of its children holds its quorum (minGroupCount children at
// theirs), as NativeCondition does for a PodGroup.
func CompositeCondition(updated *unstructured.Unstructured, s GangState) (string, bool, error) {
	return writeInitiallyScheduled(updated, s, CompositeConditionInitiallyScheduled)
}

// writeInitiallyScheduled sets the condition of type condType for s on
// updated, see nativeCondition.
func writeInitiallyScheduled(updated *unstructured.Unstructured, s GangState, condType string) (string, bool, error) {
	cond, ok := nativeCondition(s)
	cond.Type = condType
	if !ok || !setCondition(updated, cond) {
		return "", false, nil
	}
	return string(cond.Status) + "/" + cond.Reason + "/" + cond.Message, true, nil
}

// CoschedulingPhase is the status rule of a scheduler-plugins PodGroup:
// its status.phase.
func CoschedulingPhase(updated *unstructured.Unstructured, s GangState) (string, bool, error) {
	return writePhase(updated, coschedulingPhase(s), "", false)
}

// VolcanoStatus is the status rule of a Volcano PodGroup: its
// status.phase and its Unschedulable condition, as Volcano writes them.
func VolcanoStatus(updated *unstructured.Unstructured, s GangState) (string, bool, error) {
	var summary string
	changed := false
	if status, reason, msg, ok := volcanoCondition(s); ok && setVolcanoCondition(updated, status, reason, msg, time.Now()) {
		changed = true
		summary = "/" + status + "/" + reason + "/" + msg
	}
	return writePhase(updated, volcanoPhase(s), summary, changed)
}

// writePhase sets status.phase of updated to phase, and returns the
// summary of the phase and the rest of the status (rest, restChanged).
func writePhase(updated *unstructured.Unstructured, phase, rest string, restChanged bool) (string, bool, error) {
	changed := restChanged
	if phase != currentPhase(updated) {
		if err := unstructured.SetNestedField(updated.Object, phase, "status", "phase"); err != nil {
			return "", false, fmt.Errorf("setting status.phase: %w", err)
		}
		changed = true
	}
	if !changed {
		return "", false, nil
	}
	return phase + rest, true, nil
}

// nativeCondition is the PodGroupInitiallyScheduled condition for s: True
// once the quorum holds nodes, False with the scheduler's message while a
// pod is unschedulable; ok is false when there is nothing to say yet.
func nativeCondition(s gangState) (metav1.Condition, bool) {
	if s.scheduled() {
		return metav1.Condition{Type: ConditionInitiallyScheduled, Status: metav1.ConditionTrue, Reason: ReasonScheduled}, true
	}
	if msg := s.unschedulable; msg != "" {
		// The API limits a condition's message to 32768 bytes.
		if len(msg) > maxMessage {
			msg = msg[:maxMessage]
		}
		return metav1.Condition{Type: ConditionInitiallyScheduled, Status: metav1.ConditionFalse, Reason: ReasonUnschedulable, Message: msg}, true
	}
	return metav1.Condition{}, false
}

const maxMessage = 32 * 1024

// setCondition sets cond on u's status.conditions and reports whether that
// changed anything. Once True, the condition never goes back to False, as
// kube-scheduler keeps it.
func setCondition(u *unstructured.Unstructured, cond metav1.Condition) bool {
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var conds []metav1.Condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		c.Type, _ = m["type"].(string)
		s, _ := m["status"].(string)
		c.Status = metav1.ConditionStatus(s)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		if t, ok := m["lastTransitionTime"].(string); ok {
			_ = c.LastTransitionTime.UnmarshalQueryParameter(t)
		}
		if g, ok := m["observedGeneration"].(int64); ok {
			c.ObservedGeneration = g
		}
		conds = append(conds, c)
	}
	if old := apimeta.FindStatusCondition(conds, cond.Type); old != nil && old.Status == metav1.ConditionTrue && cond.Status != metav1.ConditionTrue {
		return false
	}
	cond.ObservedGeneration = u.GetGeneration()
	if !apimeta.SetStatusCondition(&conds, cond) {
		return false
	}
	out := make([]any, 0, len(conds))
	for _, c := range conds {
		m := map[string]any{"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"lastTransitionTime": c.LastTransitionTime.UTC().Format("2006-01-02T15:04:05Z")}
		if c.ObservedGeneration != 0 {
			m["observedGeneration"] = c.ObservedGeneration
		}
		out = append(out, m)
	}
	return unstructured.SetNestedSlice(u.Object, out, "status", "conditions") == nil
}
