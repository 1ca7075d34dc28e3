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

package crds

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// The NodeLedger CRD and ValidateNodeLedger agree on what a ledger may
// hold, and the API server refuses an update with a stale resourceVersion:
// the compare-and-swap every placer's commit relies on.
func TestNodeLedgerVerdictsAndConflict(t *testing.T) {
	ledgers := client.BatchSchedulerV1alpha1().NodeLedgers()
	sample := func(name string) *bsv1.NodeLedger {
		return &bsv1.NodeLedger{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: bsv1.NodeLedgerSpec{
				Placers: []bsv1.LedgerPlacer{{Name: "batch-scheduler", JoinedAt: metav1.Now()}},
				Entries: []bsv1.LedgerEntry{{Placer: "batch-scheduler", Kind: bsv1.LedgerEntryKindPod, Namespace: "ns", Name: "p", UID: "u1",
					Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}},
			},
		}
	}
	tests := []struct {
		name   string
		mutate func(*bsv1.NodeLedger)
		valid  bool
	}{
		{name: "a valid ledger", valid: true},
		{name: "an entry without a placer", mutate: func(l *bsv1.NodeLedger) { l.Spec.Entries[0].Placer = "" }},
		{name: "an entry without a name", mutate: func(l *bsv1.NodeLedger) { l.Spec.Entries[0].Name = "" }},
		{name: "an entry without a kind", mutate: func(l *bsv1.NodeLedger) { l.Spec.Entries[0].Kind = "" }},
		{name: "a placer listed twice", mutate: func(l *bsv1.NodeLedger) { l.Spec.Placers = append(l.Spec.Placers, l.Spec.Placers[0]) }},
		{name: "a placer without a name", mutate: func(l *bsv1.NodeLedger) { l.Spec.Placers[0].Name = "" }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := sample("ledger-verdict-" + string(rune('a'+i)))
			if tt.mutate != nil {
				tt.mutate(l)
			}
			goErrs := bsv1.ValidateNodeLedger(l)
			created, err := ledgers.Create(t.Context(), l, metav1.CreateOptions{})
			if err == nil {
				t.Cleanup(func() { _ = ledgers.Delete(context.Background(), created.Name, metav1.DeleteOptions{}) })
			}
			if tt.valid != (err == nil) || tt.valid != (len(goErrs) == 0) {
				t.Errorf("want valid=%v: the API server says %v, ValidateNodeLedger says %v", tt.valid, err, goErrs.ToAggregate())
			}
		})
	}

	// Compare-and-swap: of two updates from the same read, the second
	// is refused with a conflict.
	l, err := ledgers.Create(t.Context(), sample("ledger-cas"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ledgers.Delete(context.Background(), l.Name, metav1.DeleteOptions{}) })
	first, second := l.DeepCopy(), l.DeepCopy()
	first.Spec.Entries[0].Resources[v1.ResourceCPU] = resource.MustParse("2")
	if _, err := ledgers.Update(t.Context(), first, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the first update: %v", err)
	}
	second.Spec.Entries = append(second.Spec.Entries, bsv1.LedgerEntry{Placer: "vm-manager", Kind: "vm", Name: "vm-1",
		Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}})
	if _, err := ledgers.Update(t.Context(), second, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("an update from a stale read = %v, want a conflict", err)
	}
}
