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

package differential

import (
	"testing"
)

// TestDifferential runs every scenario through kube-scheduler and
// batch-scheduler and fails on any pod whose verdict differs.
func TestDifferential(t *testing.T) {
	all := append(append(baseScenarios(), pendingScenarios()...), draScenarios()...)
	seen := map[string]bool{}
	for _, sc := range all {
		if seen[sc.name] {
			t.Fatalf("two scenarios are named %q", sc.name)
		}
		seen[sc.name] = true
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

// TestNormalizeMessage checks the normalisation the comparison relies on.
func TestNormalizeMessage(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "kube-scheduler with preemption suffix",
			in:   "0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
			want: "0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu",
		},
		{
			name: "batch-scheduler order differs",
			in:   "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {a: b}.",
			want: "0/3 nodes are available: 1 node(s) had untolerated taint {a: b}, 2 Insufficient cpu",
		},
		{
			name: "prefilter message without counts",
			in:   "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
			want: "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims",
		},
		{
			name: "prefilter message and a postfilter message that is not about preemption",
			in:   `0/2 nodes are available: persistentvolumeclaim "nope" not found. not found`,
			want: `0/2 nodes are available: persistentvolumeclaim "nope" not found`,
		},
		{
			name: "reason with a comma stays whole",
			in:   "0/2 nodes are available: 1 node(s) had x, y and z, 1 Too many pods.",
			want: "0/2 nodes are available: 1 Too many pods, 1 node(s) had x, y and z",
		},
		{
			name: "no reasons",
			in:   "0/0 nodes are available.",
			want: "0/0 nodes are available",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := normalizeMessage(tt.in); got != tt.want {
				t.Errorf("normalizeMessage(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}
