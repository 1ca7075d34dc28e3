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

package testutil

import (
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// RegisteredHint is what plugin's registrations (events, the result of
// its EventsToRegister) answer for event on job, as the queue asks them:
// Queue if any registration matching the event queues, else QueueSkip.
// registered is false when no registration matches the event; the error
// is the first a hint returned.
func RegisteredHint(plugin string, events []framework.ClusterEventWithHint, event framework.ClusterEvent, job *framework.QueuedJob,
	oldObj, newObj any) (hint framework.QueueingHint, registered bool, err error) {
	hint = framework.QueueSkip
	for _, e := range events {
		h, ok, herr := framework.PluginEvent{Plugin: plugin, ClusterEventWithHint: e}.Hint(klog.Background(), event, job, oldObj, newObj)
		if !ok {
			continue
		}
		if herr != nil && err == nil {
			err = herr
		}
		registered = true
		if h == framework.Queue {
			hint = h
		}
	}
	return hint, registered, err
}
