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

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
)

// assumeAndBind takes the capacity of every placement in the cache at once,
// then binds the pods in the background.
func (s *Scheduler) assumeAndBind(ctx context.Context, c *cycle) {
	logger := klog.FromContext(ctx)
	seen := func(node string) *framework.NodeInfo {
		info, _ := s.snapshot.Get(node)
		return info
	}
	if err := s.cache.AssumePods(c.placed, c.placements, seen); err != nil {
		// The cache changed under us: a pod was deleted or bound
		// meanwhile, or a node's capacity shrank since the snapshot (a
		// grant shrank). Nothing was assumed; try again later.
		s.metrics.AssumeConflicts.Inc()
		s.undoPlacements(ctx, c)
		s.requeue(ctx, c, c.qj, fmt.Errorf("committing the placement: %w", err))
		return
	}
	for _, pod := range c.placed {
		s.conditions.forget(pod.UID)
	}
	s.recordAttempt(resultScheduled, c.profile, c.start)
	logger.V(2).Info("Job placed", "pods", len(c.placed), "bound", c.job.Bound, "minAvailable", c.job.MinAvailable)
	var unplaced []*v1.Pod
	for _, pod := range c.job.Pending {
		if _, ok := c.placements[string(pod.UID)]; !ok {
			unplaced = append(unplaced, pod)
		}
	}
	if len(unplaced) == 0 {
		s.queue.Done(c.job.ID)
	} else {
		// Permit let a partial placement through (min-available is met).
		// Done would leave the pods that found no node waiting for a change
		// of their own, which may never come: they say why instead, and
		// their job waits for an event that may help them.
		s.park(ctx, c, unplaced, "", false)
	}

	for _, pod := range c.placed {
		nodeName := c.placements[string(pod.UID)]
		s.bindWG.Add(1)
		s.pendingBinds.Add(1)
		go func() {
			defer s.bindWG.Done()
			defer s.bindFinished()
			s.bind(ctx, c, pod, nodeName)
		}()
	}
}

// bindCallTimeout bounds one bind call, which is not cancelled with the
// scheduler's context.
const bindCallTimeout = 30 * time.Second

// bind binds one pod, retrying with backoff; on final failure it rolls the
// assumption back and requeues the job. A Bind plugin's
// framework.BindNotReadyError is waited out, holding no bind slot, and
// does not count as a failed attempt.
func (s *Scheduler) bind(ctx context.Context, c *cycle, pod *v1.Pod, nodeName string) {
	logger := klog.FromContext(ctx)
	backoff := s.opts.BindBackoff
	var st *framework.Status
	for attempt := 1; attempt <= s.opts.BindAttempts; attempt++ {
		// A bind call in flight finishes even when the scheduler stops (on
		// SIGTERM or a lost lease): abandoning it would leave the API's
		// answer unknown. No new attempt starts after ctx ends.
		ticket := s.binds.acquire()
		callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bindCallTimeout)
		st = c.fwk.RunBindPlugins(callCtx, c.state, pod, nodeName)
		cancel()
		var notReady *framework.BindNotReadyError
		if errors.As(st.AsError(), &notReady) {
			// Not an overload, nor a failed attempt: wait, holding no
			// bind slot, and call the Bind plugins again. The plugin
			// says when waiting has lasted too long.
			s.binds.release(ticket, nil)
			logger.V(4).Info("Pod not ready to bind yet; waiting", "pod", klog.KObj(pod), "node", nodeName,
				"reason", notReady.Reason, "retryAfter", notReady.RetryAfter)
			select {
			case <-time.After(max(notReady.RetryAfter, framework.MinBindRetry)):
			case <-ctx.Done():
			}
			if ctx.Err() == nil {
				attempt--
				continue
			}
			break
		}
		s.binds.release(ticket, st.AsError())
		if st.IsSuccess() {
			if err := s.cache.FinishBinding(pod); err != nil {
				logger.Error(err, "Finishing the binding of a pod", "pod", klog.KObj(pod))
			}
			s.metrics.PodsBound.Inc()
			s.metrics.E2ELatency.Observe(time.Since(c.qj.InitialTimestamp).Seconds())
			if bf, ok := framework.BackfillOn(c.state, nodeName); ok {
				s.metrics.BackfilledPods.Inc()
				s.opts.Recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding",
					"Successfully assigned %s to %s, backfilling room job %s reserves there until %s", podKey(pod), nodeName, bf.Job, bf.Start.UTC().Format(time.RFC3339))
				logger.V(2).Info("Bound pod", "pod", klog.KObj(pod), "node", nodeName, "backfilledInto", bf.Job.String(), "reservationStart", bf.Start)
				return
			}
			s.opts.Recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding",
				"Successfully assigned %s to %s", podKey(pod), nodeName)
			logger.V(2).Info("Bound pod", "pod", klog.KObj(pod), "node", nodeName)
			return
		}
		s.metrics.BindErrors.Inc()
		if err := st.AsError(); apierrors.IsNotFound(err) || apierrors.IsConflict(err) || ctx.Err() != nil {
			// The pod is gone, bound by someone else, or we are stopping:
			// retrying cannot help.
			break
		}
		if attempt < s.opts.BindAttempts {
			logger.V(2).Info("Bind failed; retrying", "pod", klog.KObj(pod), "node", nodeName, "attempt", attempt, "err", st.AsError())
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				// Stopping: another attempt could only fail.
				break
			}
			backoff *= 2
		}
	}
	err := st.AsError()
	logger.Error(err, "Binding failed; rolling back", "pod", klog.KObj(pod), "node", nodeName)
	if ferr := s.cache.ForgetPod(pod); ferr != nil {
		logger.V(2).Info("Forgetting the pod after a failed bind", "pod", klog.KObj(pod), "err", ferr)
	}
	// The capacity the pod held is free again: jobs it kept out may fit.
	s.queue.MoveAllToActiveOrBackoffQueue(framework.EventAssignedPodDelete, pod, nil)
	c.fwk.RunUnreservePlugins(ctx, c.state, pod, nodeName)
	if apierrors.IsNotFound(err) {
		// Deleted while its bind was in flight: nothing to report.
		return
	}
	s.opts.Recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Binding", "Binding rejected: %v", err)
	if qerr := s.queue.AddUnschedulable(c.qj, cacheAttemptForBindError(err)); errors.Is(qerr, schedulingqueue.ErrAlreadyQueued) {
		logger.V(4).Info("Job of a pod whose bind failed is already waiting", "pod", klog.KObj(pod))
	} else if qerr != nil {
		logger.Error(qerr, "Requeueing a job after a failed bind")
	}
}

// minBindBacklog is the fewest pods waiting for their bind that make the
// loop wait (see waitForBindRoom).
const minBindBacklog = 32

// waitForBindRoom waits, before the loop pops its next job, while more
// pods wait for their bind than twice the binds allowed in flight (at
// least minBindBacklog): decisions made far ahead of the binds only wait
// in memory, and on a busy machine the loop running flat out starves the
// binds of CPU (the first quarter of a backlog then binds markedly slower
// than the rest). A job's pods are all handed to the binds at once, so a
// gang larger than the backlog still goes through. It returns false when
// ctx ends.
func (s *Scheduler) waitForBindRoom(ctx context.Context) bool {
	for {
		limit, _ := s.binds.current()
		if s.pendingBinds.Load() < int64(max(2*limit, minBindBacklog)) {
			return true
		}
		select {
		case <-s.bindDone:
		case <-ctx.Done():
			return false
		}
	}
}

// bindFinished counts a pod's bind as finished and wakes the loop if it
// waits for room.
func (s *Scheduler) bindFinished() {
	s.pendingBinds.Add(-1)
	select {
	case s.bindDone <- struct{}{}:
	default:
	}
}
