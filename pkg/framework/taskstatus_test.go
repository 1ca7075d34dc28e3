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

import (
	"encoding/json"
	"strings"
	"testing"
)

// A task status renders as its name in JSON (the cache's dumps) and in
// logs, reads back from it, and an unknown name or number is an error
// naming it, not a silent Pending.
func TestTaskStatusText(t *testing.T) {
	for _, s := range []TaskStatus{TaskPending, TaskAssumed, TaskBound} {
		b, err := json.Marshal(struct {
			S TaskStatus `json:"status"`
		}{s})
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		if want := `{"status":"` + s.String() + `"}`; string(b) != want {
			t.Errorf("%v renders as %s, want %s", s, b, want)
		}
		var back struct {
			S TaskStatus `json:"status"`
		}
		back.S = TaskStatus(7)
		if err := json.Unmarshal(b, &back); err != nil || back.S != s {
			t.Errorf("%s reads back as %v, %v", b, back.S, err)
		}
	}
	if got := TaskBound.String(); got != "Bound" {
		t.Errorf("TaskBound.String() = %q", got)
	}
	var s TaskStatus
	if err := json.Unmarshal([]byte(`"Running"`), &s); err == nil || !strings.Contains(err.Error(), `"Running"`) {
		t.Errorf("an unknown status name reads as %v, error %v; want an error naming it", s, err)
	}
	if _, err := json.Marshal(TaskStatus(9)); err == nil || !strings.Contains(err.Error(), "9") {
		t.Errorf("an unknown status renders without an error naming it: %v", err)
	}
}
