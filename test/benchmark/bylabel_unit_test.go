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

package benchmark

import "testing"

func TestByLabel(t *testing.T) {
	const name = "batch_scheduler_preemption_victims_total"
	m := map[string]float64{
		name + `{plugin="Reservation"}`:       3,
		name + `{plugin="Reclaim"}`:           12,
		name + `{plugin="DefaultPreemption"}`: 0,
		name + "_other":                       5,
		"batch_scheduler_pods_bound_total":    9,
	}
	if got, want := byLabel(m, name), " (plugin=Reclaim 12, plugin=Reservation 3)"; got != want {
		t.Errorf("byLabel = %q, want %q", got, want)
	}
	if got := byLabel(map[string]float64{name: 4}, name); got != "" {
		t.Errorf("byLabel of an unlabelled series = %q, want \"\"", got)
	}
}
