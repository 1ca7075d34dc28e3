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

package preemption

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/eviction"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Event reasons of preemption. ReasonPreempted and the action are
// kube-scheduler's, on the victims.
const (
	// ReasonPreempted is the reason of the event on a victim.
	ReasonPreempted = "Preempted"
	// ReasonPreempting is the reason of the event on a preemptor pod whose
	// victims are being evicted.
	ReasonPreempting = "Preempting"
	// ReasonFailedPreemption is the reason of the Warning event on a
	// preemptor pod when a victim's eviction was refused.
	ReasonFailedPreemption = "FailedPreemption"
	actionPreempting       = "Preempting"
)

// maxParallelEvictions bounds the eviction calls of one preemption in
// flight at once.
const maxParallelEvictions = 16

// executePreemption acts on a simulation's plan in the background (API
// calls do not hold up the scheduling loop): it writes
// status.nominatedNodeName of each placed preemptor pod, then evicts the
// victims through the Eviction API, which honours PodDisruptionBudgets.
//
// Victims a PDB is predicted to protect go first, one by one: when the
// API refuses one (429), nothing else is evicted, the job's nominations
// are dropped and the failure is reported; it will try again when
// something changes. The others are evicted concurrently (at most
// maxParallelEvictions calls at once), as kube-scheduler does, so that a
// victim gang is not left below its quorum for longer than the calls
// take. A refusal among them (the prediction was stale) does not stop
// the rest: a victim gang whose eviction has begun is better finished
// than left below its quorum. plugin is the PostFilter plugin that asked,
// for the victims metric.
func (e *Engine) executePreemption(ctx context.Context, job framework.JobID, plan SimulationResult, plugin string) {
	placed, placements, victims := plan.Placed, plan.Placements, plan.Victims
	e.opts.Background.Go(func() {
		release := e.opts.Background.Acquire()
		defer release()
		logger := klog.FromContext(ctx)
		for _, pod := range placed {
			if err := e.patchNominatedNodeName(ctx, pod, placements[string(pod.UID)]); err != nil {
				logger.Error(err, "Setting the nominated node of a preemptor pod", "pod", klog.KObj(pod))
			}
		}
		var mu sync.Mutex // guards byPreemptor, refused and notGoing
		byPreemptor := map[types.UID][]string{}
		var refused []string
		// notGoing are the victims not evicted: refused, failed or never
		// sent.
		notGoing := map[types.UID]string{}
		evictOne := func(v *Victim) bool {
			victim := v.Task.PodObject()
			err := e.evict(ctx, victim)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused = append(refused, fmt.Sprintf("%s: %v", podKey(victim), err))
				notGoing[victim.UID] = v.Task.NodeName
				logger.Error(err, "Evicting a preemption victim", "victim", klog.KObj(victim), "preemptor", klog.KObj(v.Preemptor))
				return false
			}
			if e.opts.Metrics.Victims != nil {
				e.opts.Metrics.Victims.WithLabelValues(plugin).Inc()
			}
			e.opts.Recorder.Eventf(victim, v.Preemptor, v1.EventTypeNormal, ReasonPreempted, actionPreempting,
				"Preempted by pod %s on node %s", v.Preemptor.UID, v.Node)
			byPreemptor[v.Preemptor.UID] = append(byPreemptor[v.Preemptor.UID], podKey(victim))
			logger.V(2).Info("Preempted a pod", "victim", klog.KObj(victim), "victimNode", v.Task.NodeName,
				"preemptor", klog.KObj(v.Preemptor), "node", v.Node)
			return true
		}
		// The victims a PDB is predicted to protect go one by one, and a
		// refusal stops everything; the others go at once, so that a
		// victim gang spends as little time below its quorum as the API
		// allows.
		ordered := sortedVictims(victims)
		rest := ordered
		for len(rest) > 0 && rest[0].ViolatesPDB {
			if !evictOne(rest[0]) {
				for _, v := range rest[1:] {
					notGoing[v.Task.GetUID()] = v.Task.NodeName
				}
				rest = nil
				break
			}
			rest = rest[1:]
		}
		workqueue.ParallelizeUntil(ctx, min(len(rest), maxParallelEvictions), len(rest), func(i int) { evictOne(rest[i]) })
		for _, pod := range placed {
			if names := byPreemptor[pod.UID]; len(names) > 0 {
				sort.Strings(names)
				e.opts.Recorder.Eventf(pod, nil, v1.EventTypeNormal, ReasonPreempting, actionPreempting,
					"Preempting %d pods of lower priority to make room on node %s: %s", len(names), placements[string(pod.UID)], strings.Join(names, ", "))
			}
		}
		if len(refused) == 0 {
			return
		}
		// Other preemptions may have borrowed their room, or still see
		// them as going: they run on.
		e.opts.Nominator.NotGoing(notGoing)
		e.count(ResultFailed)
		if len(placed) > 0 {
			e.opts.Recorder.Eventf(placed[0], nil, v1.EventTypeWarning, ReasonFailedPreemption, actionPreempting,
				"Preemption for job %s failed: %s", job, strings.Join(refused, "; "))
		}
		e.GiveUp(ctx, job)
	})
}

// evict evicts pod through the Eviction API; a pod already gone (or
// replaced by one of the same name) counts as evicted, a refusal (429) is
// an error.
func (e *Engine) evict(ctx context.Context, pod *v1.Pod) error {
	if err := eviction.Evict(ctx, e.opts.Client, pod); err != nil && !errors.Is(err, eviction.ErrGone) {
		return err
	}
	return nil
}

// patchNominatedNodeName sets (node != "") or clears pod's
// status.nominatedNodeName.
func (e *Engine) patchNominatedNodeName(ctx context.Context, pod *v1.Pod, node string) error {
	value := "null"
	if node != "" {
		value = fmt.Sprintf("%q", node)
	}
	patch := []byte(`{"status":{"nominatedNodeName":` + value + `}}`)
	if _, err := e.opts.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching the nominated node of pod %s: %w", podKey(pod), err)
	}
	return nil
}

// GiveUp drops job's nominations: the room they held is released and
// their pods' status.nominatedNodeName cleared, in the background.
func (e *Engine) GiveUp(ctx context.Context, job framework.JobID) {
	pods := e.opts.Nominator.GiveUp(job)
	if len(pods) == 0 {
		return
	}
	e.opts.Background.Go(func() {
		for _, pod := range pods {
			if err := e.patchNominatedNodeName(ctx, pod, ""); err != nil {
				klog.FromContext(ctx).Error(err, "Clearing the nominated node of a pod", "pod", klog.KObj(pod))
			}
		}
	})
}

// sortedVictims returns victims in the order they are evicted: those a
// PDB is predicted to protect first, so that a refusal stops the
// preemption before anything else goes; then job by job, so that the
// evictions of one victim gang are sent together and the gang spends as
// little time below its quorum as its own evictions take, not as long as
// the whole preemption's (a plan lists its victims node by node, and a
// gang spread over many nodes would otherwise lose its pods from the
// first call to the last); within a job, by node and name.
func sortedVictims(victims []*Victim) []*Victim {
	out := append([]*Victim(nil), victims...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.ViolatesPDB != b.ViolatesPDB {
			return a.ViolatesPDB
		}
		if a.Task.Job != b.Task.Job {
			return a.Task.Job.String() < b.Task.Job.String()
		}
		if a.Task.NodeName != b.Task.NodeName {
			return a.Task.NodeName < b.Task.NodeName
		}
		return a.Task.Key() < b.Task.Key()
	})
	return out
}

func podKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
