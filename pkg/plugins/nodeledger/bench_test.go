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

package nodeledger

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger/ledgertest"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
)

// BenchmarkBind is the plugin's own cost of one pod's Reserve and Bind on
// a node that is not shared (the baseline: no API call) and on a shared
// node whose ledger already records 40 pods (a commit to an in-memory
// store: the API call itself is not measured, see docs/performance.md for
// the cost on a real API server). Each iteration binds a new pod and
// releases the oldest, so the ledger stays at 40 entries.
func BenchmarkBind(b *testing.B) {
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%t", shared), func(b *testing.B) {
			h := testutil.NewHandle(node("n1", true), node("n2", false))
			store := ledgertest.NewClient()
			a := Args{NodeSelector: sharedLabel + "=vms", Placer: DefaultPlacer, ReleaseInterval: metav1.Duration{Duration: time.Hour}}
			sel, _ := labels.Parse(a.NodeSelector)
			pl, err := build(b.Context(), a, sel, h, func() (ledger.Client, error) { return store, nil }, false)
			if err != nil {
				b.Fatal(err)
			}
			target := "n2"
			if shared {
				target = "n1"
			}
			indexer := pl.p.pods
			h.SharedInformerFactory().Start(b.Context().Done())
			h.SharedInformerFactory().WaitForCacheSync(b.Context().Done())
			// 40 pods bound on the node, straight into the informer's
			// store (the fake clientset is not what is measured).
			for i := range 40 {
				p := pod(fmt.Sprintf("bound-%d", i), "batch-scheduler", target, "100m")
				if err := indexer.Add(p); err != nil {
					b.Fatal(err)
				}
				if shared {
					if st := pl.Bind(context.Background(), nil, p, target); st.Code() != framework.Skip {
						b.Fatal(st)
					}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				p := pod(fmt.Sprintf("p-%d", i), "batch-scheduler", "", "100m")
				_ = indexer.Add(p)
				pl.Reserve(context.Background(), nil, p, target)
				if st := pl.Bind(context.Background(), nil, p, target); st.Code() != framework.Skip {
					b.Fatal(st)
				}
				// The pod is seen bound; the oldest leaves.
				bound := p.DeepCopy()
				bound.Spec.NodeName = target
				_ = indexer.Update(bound)
				old := fmt.Sprintf("ns/bound-%d", i)
				if i >= 40 {
					old = fmt.Sprintf("ns/p-%d", i-40)
				}
				if obj, ok, _ := indexer.GetByKey(old); ok {
					_ = indexer.Delete(obj)
				}
				if i%50 == 0 {
					// The release loop's own work, every
					// ReleaseInterval in a running scheduler.
					pl.p.forgetSeen()
				}
			}
			b.StopTimer()
			if shared {
				l, err := store.Get(context.Background(), "n1", metav1.GetOptions{})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(len(l.Spec.Entries)), "entries")
			}
		})
	}
}
