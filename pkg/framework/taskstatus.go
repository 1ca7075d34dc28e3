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

import "fmt"

// TaskStatus says where a task of a job is. It is a byte, not a string,
// so that it shares a word of TaskInfo with the flags beside it (see
// TestPodRecordSize); it renders as its name in logs and JSON.
type TaskStatus uint8

const (
	// TaskPending: the pod waits in the scheduling queue.
	TaskPending TaskStatus = iota
	// TaskAssumed: the scheduler placed the pod on a node and is binding it
	// (the cache's AssumePod); the informer has not yet reported it
	// bound. It is accounted on that node like a bound pod.
	TaskAssumed
	// TaskBound: the pod is bound to a node (spec.nodeName is set).
	TaskBound
)

var taskStatusNames = [...]string{TaskPending: "Pending", TaskAssumed: "Assumed", TaskBound: "Bound"}

// String returns the status's name: Pending, Assumed or Bound.
func (s TaskStatus) String() string {
	if int(s) < len(taskStatusNames) {
		return taskStatusNames[s]
	}
	return fmt.Sprintf("TaskStatus(%d)", uint8(s))
}

// MarshalText renders the status as its name.
func (s TaskStatus) MarshalText() ([]byte, error) {
	if int(s) >= len(taskStatusNames) {
		return nil, fmt.Errorf("unknown task status %d", uint8(s))
	}
	return []byte(taskStatusNames[s]), nil
}

// UnmarshalText reads a status's name.
func (s *TaskStatus) UnmarshalText(b []byte) error {
	for i, name := range taskStatusNames {
		if string(b) == name {
			*s = TaskStatus(i)
			return nil
		}
	}
	return fmt.Errorf("unknown task status %q: want Pending, Assumed or Bound", b)
}
