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

package defaulthandler_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// ew builds the ExternalWorkload "vm1" on node with cpu CPUs.
func ew(rv, node, cpu string, phase v1alpha1.ExternalWorkloadPhase, labels ...string) *v1alpha1.ExternalWorkload {
	w := &v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: "vm1", ResourceVersion: rv},
		Spec: v1alpha1.ExternalWorkloadSpec{NodeName: node, WorkloadKind: "vm",
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}},
		Status: v1alpha1.ExternalWorkloadStatus{Phase: phase},
	}
	for i := 0; i+1 < len(labels); i += 2 {
		if w.Labels == nil {
			w.Labels = map[string]string{}
		}
		w.Labels[labels[i]] = labels[i+1]
	}
	return w
}

const (
	running = v1alpha1.ExternalWorkloadRunning
	stopped = v1alpha1.ExternalWorkloadStopped
	setN1   = "SetExternalUsage externalworkload/vm1 n1 cpu=2000m memory=0 pods=0"
	remove  = "RemoveExternalUsage externalworkload/vm1"
	moveDec = "MoveAll ExternalUsageDecrease"
)

func TestExternalWorkloadEvents(t *testing.T) {
	tests := []struct {
		name  string
		label string // Args.ExternalWorkloadNodeLabel
		do    func(h *defaulthandler.Handler)
		want  []string
	}{
		{name: "add accounts", do: func(h *defaulthandler.Handler) { h.AddExternalWorkload(ew("1", "n1", "2", running)) },
			want: []string{setN1}},
		{name: "add without phase accounts", do: func(h *defaulthandler.Handler) { h.AddExternalWorkload(ew("1", "n1", "2", "")) },
			want: []string{setN1}},
		{name: "add stopped is ignored", do: func(h *defaulthandler.Handler) { h.AddExternalWorkload(ew("1", "n1", "2", stopped)) }},
		{name: "add without node is ignored", do: func(h *defaulthandler.Handler) { h.AddExternalWorkload(ew("1", "", "2", running)) }},
		{name: "add of wrong type is ignored", do: func(h *defaulthandler.Handler) { h.AddExternalWorkload(&v1.Pod{}) }},
		{name: "nil is ignored", do: func(h *defaulthandler.Handler) { h.AddExternalWorkload((*v1alpha1.ExternalWorkload)(nil)) }},
		{name: "update growing raises nothing",
			do: func(h *defaulthandler.Handler) {
				h.UpdateExternalWorkload(ew("1", "n1", "1", running), ew("2", "n1", "2", running))
			},
			want: []string{setN1}},
		{name: "update shrinking raises the event",
			do: func(h *defaulthandler.Handler) {
				h.UpdateExternalWorkload(ew("1", "n1", "3", running), ew("2", "n1", "2", running))
			},
			want: []string{setN1, moveDec}},
		{name: "update moving raises the event",
			do: func(h *defaulthandler.Handler) {
				h.UpdateExternalWorkload(ew("1", "n0", "2", running), ew("2", "n1", "2", running))
			},
			want: []string{setN1, moveDec}},
		{name: "update to stopped removes and raises",
			do: func(h *defaulthandler.Handler) {
				h.UpdateExternalWorkload(ew("1", "n1", "2", running), ew("2", "n1", "2", stopped))
			},
			want: []string{remove, moveDec}},
		{name: "update from stopped accounts",
			do: func(h *defaulthandler.Handler) {
				h.UpdateExternalWorkload(ew("1", "n1", "2", stopped), ew("2", "n1", "2", running))
			},
			want: []string{setN1}},
		{name: "update stopped to stopped does nothing",
			do: func(h *defaulthandler.Handler) {
				h.UpdateExternalWorkload(ew("1", "n1", "2", stopped), ew("2", "n1", "3", stopped))
			}},
		{name: "resync with the same resourceVersion is skipped",
			do: func(h *defaulthandler.Handler) {
				h.UpdateExternalWorkload(ew("1", "n1", "3", running), ew("1", "n1", "2", running))
			}},
		{name: "update with a wrong type is ignored",
			do: func(h *defaulthandler.Handler) { h.UpdateExternalWorkload(&v1.Node{}, ew("2", "n1", "2", running)) }},
		{name: "delete removes and raises", do: func(h *defaulthandler.Handler) { h.DeleteExternalWorkload(ew("1", "n1", "2", running)) },
			want: []string{remove, moveDec}},
		{name: "delete of a tombstone removes and raises", do: func(h *defaulthandler.Handler) { h.DeleteExternalWorkload(tombstone(ew("1", "n1", "2", running))) },
			want: []string{remove, moveDec}},
		{name: "delete of a stopped workload removes, raises nothing", do: func(h *defaulthandler.Handler) { h.DeleteExternalWorkload(ew("1", "n1", "2", stopped)) },
			want: []string{remove}},
		{name: "delete of a tombstone of the wrong type is ignored", do: func(h *defaulthandler.Handler) { h.DeleteExternalWorkload(tombstone(&v1.Pod{})) }},
		{name: "label maps the node", label: "example.com/host",
			do: func(h *defaulthandler.Handler) {
				h.AddExternalWorkload(ew("1", "n0", "2", running, "example.com/host", "n1"))
			},
			want: []string{setN1}},
		{name: "without the label, spec.nodeName", label: "example.com/host",
			do:   func(h *defaulthandler.Handler) { h.AddExternalWorkload(ew("1", "n1", "2", running, "other", "n0")) },
			want: []string{setN1}},
		{name: "label change moves and raises", label: "example.com/host",
			do: func(h *defaulthandler.Handler) {
				h.UpdateExternalWorkload(ew("1", "n1", "2", running, "example.com/host", "n0"), ew("2", "n1", "2", running, "example.com/host", "n1"))
			},
			want: []string{setN1, moveDec}},
		{name: "grants are ignored", do: func(h *defaulthandler.Handler) {
			g := &v1alpha1.Grant{ObjectMeta: metav1.ObjectMeta{Name: "g"}}
			h.AddGrant(g)
			h.UpdateGrant(g, g)
			h.DeleteGrant(g)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCache(t)
			h, err := defaulthandler.NewWithArgs(fc, defaulthandler.Args{ExternalWorkloadNodeLabel: tt.label})
			if err != nil {
				t.Fatalf("NewWithArgs: %v", err)
			}
			tt.do(h)
			if d := diffCalls(fc.Effects(), tt.want); d != "" {
				t.Error(d)
			}
			for _, m := range fc.Moves() {
				if m.Event != framework.EventExternalUsageDecrease || (m.OldObj == nil && m.NewObj == nil) {
					t.Errorf("move %+v, want EventExternalUsageDecrease with the workload", m)
				}
			}
		})
	}
}

func TestExternalWorkloadNodeLabelValidated(t *testing.T) {
	_, err := defaulthandler.New(t.Context(), newFakeCache(t), strings.NewReader("externalWorkloadNodeLabel: \"not a label!\"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "externalWorkloadNodeLabel") {
		t.Errorf("New with a bad label: err %v", err)
	}
	h, err := defaulthandler.New(t.Context(), newFakeCache(t), strings.NewReader("externalWorkloadNodeLabel: example.com/host\n"), nil)
	if err != nil || h == nil {
		t.Errorf("New with a good label: %v", err)
	}
}
