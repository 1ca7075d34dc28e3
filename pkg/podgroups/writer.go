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
	ReasonScheduled             = "Scheduled"
	ReasonUnschedulable         = "Unschedulable"
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
	queue  workqueue.TypedRateLimitingInterface[Key]

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

// Writes reports whether the Writer writes the status of objects of
// kind: the native, scheduler-plugins and Volcano PodGroups. Other kinds
// (Jobs and the owners gangs are inferred from) are never written.
func Writes(kind framework.GroupKind) bool {
	switch kind {
	case framework.GroupKindNative, framework.GroupKindCoscheduling, framework.GroupKindVolcano:
		return true
	}
	return false
}

// New returns a Writer that writes the status of the group objects it is
// given (see Writes) through client and reads jobs from jobs.
func New(client dynamic.Interface, jobs JobSource) *Writer {
	return &Writer{
		client: client, jobs: jobs,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[Key](),
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: "podgroup-status"}),
		objects: map[Key]groupObject{},
		written: map[Key]string{},
	}
}

// ObjectChanged records the group object u of kind, read from the
// resource gvr (deleted: it is gone). Objects of kinds the Writer does not
// write are ignored.
func (w *Writer) ObjectChanged(kind framework.GroupKind, gvr schema.GroupVersionResource, u *unstructured.Unstructured, deleted bool) {
	if !Writes(kind) {
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
	if !Writes(kind) {
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

// sync writes the status of k's object if it should change.
func (w *Writer) sync(ctx context.Context, k Key) error {
	w.mu.Lock()
	g := w.objects[k]
	w.mu.Unlock()
	obj := g.u
	if obj == nil {
		return nil
	}
	job, ok := w.jobs.Job(framework.JobID{Namespace: k.Namespace, Name: k.Name, Gang: true})
	if !ok || job.GroupKind() != k.Kind || job.MinAvailable() < 1 {
		return nil
	}
	s := stateOf(job, job.MinAvailable())
	updated := obj.DeepCopy()
	var summary string
	switch k.Kind {
	case framework.GroupKindNative:
		cond, ok := nativeCondition(s)
		if !ok || !setCondition(updated, cond) {
			return nil
		}
		summary = string(cond.Status) + "/" + cond.Reason + "/" + cond.Message
	case framework.GroupKindCoscheduling, framework.GroupKindVolcano:
		phase := coschedulingPhase(s)
		changed := false
		if k.Kind == framework.GroupKindVolcano {
			phase = volcanoPhase(s)
			if status, reason, msg, ok := volcanoCondition(s); ok && setVolcanoCondition(updated, status, reason, msg, time.Now()) {
				changed = true
				summary = "/" + status + "/" + reason + "/" + msg
			}
		}
		if phase != currentPhase(obj) {
			if err := unstructured.SetNestedField(updated.Object, phase, "status", "phase"); err != nil {
				return fmt.Errorf("setting status.phase of %s %s/%s: %w", k.Kind, k.Namespace, k.Name, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
		summary = phase + summary
	default:
		return nil
	}
	w.mu.Lock()
	same := w.written[k] == summary+"@"+obj.GetResourceVersion()
	w.mu.Unlock()
	if same {
		return nil
	}
	_, err := w.client.Resource(g.gvr).Namespace(k.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
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

// nativeCondition is the PodGroupInitiallyScheduled condition for s: True
// once the quorum holds nodes, False with the scheduler's message while a
// pod is unschedulable; ok is false when there is nothing to say yet.
func nativeCondition(s gangState) (metav1.Condition, bool) {
	if s.onNode+s.succeeded >= int(s.min) {
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
