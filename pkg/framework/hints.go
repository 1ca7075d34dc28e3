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

package framework

import "k8s.io/klog/v2"

// QueueingHint is a plugin's verdict on whether a cluster event may make a
// job it rejected schedulable.
type QueueingHint int

const (
	// QueueSkip: the event cannot help; the job keeps waiting.
	QueueSkip QueueingHint = iota
	// Queue: the event may help; the job is retried (after its backoff).
	Queue
)

func (h QueueingHint) String() string {
	if h == Queue {
		return "Queue"
	}
	return "QueueSkip"
}

// QueueingHintFn tells whether one occurrence of a registered event may let
// a job the plugin rejected fit. job holds the job's pending pods. oldObj
// and newObj are the event's objects as the handler raised them: nil and
// the new object for an Add, both for an update, the old object and nil
// for a Delete (see the well-known events for what each carries). Objects
// may be of any type, or nil: check before use, and answer Queue when in
// doubt.
//
// A hint is the plugin's own rule applied to the change: it must answer
// Queue whenever the plugin's Filter could pass after the event where it
// rejected before; answering Queue needlessly only costs an attempt. It
// runs under the scheduling queue's lock for every waiting job the plugin
// rejected: it must be fast, must not block, must not modify its
// arguments, must not keep them past the call (the default handler lends
// a pod made of a bound pod's record for the event, then reuses it), and
// must not call the cache or the queue. An error counts as Queue.
type QueueingHintFn func(logger klog.Logger, job *QueuedJob, oldObj, newObj any) (QueueingHint, error)

// ClusterEventWithHint is an event a plugin registers (EnqueueExtensions),
// with the hint that decides whether an occurrence may help a job the
// plugin rejected. A nil QueueingHintFn always answers Queue.
type ClusterEventWithHint struct {
	Event          ClusterEvent
	QueueingHintFn QueueingHintFn
}

// PluginEvent is an event registered by the named plugin. The scheduler
// records, for a job it could not place, the events of the plugins that
// rejected it; the queue retries the job when one of them occurs and its
// plugin's hint says Queue.
type PluginEvent struct {
	Plugin string
	ClusterEventWithHint
}

// Hint runs the plugin's hint for an occurrence of event with the given
// objects, if event matches the registered one; matched is false when it
// does not. A nil hint, or one that fails, answers Queue; the error is
// returned for the caller to log.
func (p PluginEvent) Hint(logger klog.Logger, event ClusterEvent, job *QueuedJob, oldObj, newObj any) (hint QueueingHint, matched bool, err error) {
	if !event.Matches(p.Event) {
		return QueueSkip, false, nil
	}
	if p.QueueingHintFn == nil {
		return Queue, true, nil
	}
	hint, err = p.QueueingHintFn(logger, job, oldObj, newObj)
	if err != nil {
		return Queue, true, err
	}
	return hint, true, nil
}
