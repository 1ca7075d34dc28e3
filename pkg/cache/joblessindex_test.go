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

package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// The index answers as a map keyed by namespace and name would, whether
// the hashes of those keys are all distinct, all equal or collide in a
// few buckets: a random run of sets, replaces and removes is checked
// against such a map after every step.
func TestJoblessIndexAgreesWithAMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func(x *joblessIndex) func(namespace, name string) uint64
	}{
		{"seeded hash", func(x *joblessIndex) func(string, string) uint64 { return x.hashKey }},
		{"every key collides", func(*joblessIndex) func(string, string) uint64 {
			return func(string, string) uint64 { return 7 }
		}},
		{"keys share 3 hashes", func(x *joblessIndex) func(string, string) uint64 {
			return func(namespace, name string) uint64 { return x.hashKey(namespace, name) % 3 }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newJoblessIndex()
			x.hash = tc.hash(x)
			want := map[joblessKey]*framework.TaskInfo{}
			rng := rand.New(rand.NewPCG(1, 2))
			// Names repeat across namespaces and pods are made again under
			// a name with another UID, as deleted and recreated pods are.
			task := func() *framework.TaskInfo {
				ns, name := fmt.Sprintf("ns%d", rng.IntN(3)), fmt.Sprintf("p%d", rng.IntN(8))
				uid := fmt.Sprintf("%s-%s-%d", ns, name, rng.IntN(2))
				return framework.NewTaskInfo(st.MakePod().Namespace(ns).Name(name).UID(uid).Node("n1").Obj(), framework.GroupResolver{})
			}
			for step := range 3000 {
				tk := task()
				key := joblessKey{namespace: tk.Job.Namespace, name: tk.Job.Name}
				cur, had := want[key]
				sameUID := had && cur.GetUID() == tk.GetUID()
				var op string
				switch rng.IntN(3) {
				case 0:
					op = "set"
					x.set(tk)
					want[key] = tk
				case 1:
					op = "replace"
					if got := x.replace(tk); got != sameUID {
						t.Fatalf("step %d: replace(%s, %s) = %v, want %v", step, tk.Job, tk.GetUID(), got, sameUID)
					}
					if sameUID {
						want[key] = tk
					}
				default:
					op = "remove"
					if got := x.remove(tk); got != sameUID {
						t.Fatalf("step %d: remove(%s, %s) = %v, want %v", step, tk.Job, tk.GetUID(), got, sameUID)
					}
					if sameUID {
						delete(want, key)
					}
				}
				if x.len() != len(want) {
					t.Fatalf("step %d (%s %s): len %d, want %d", step, op, tk.Job, x.len(), len(want))
				}
				for k, w := range want {
					if got, ok := x.get(k.namespace, k.name); !ok || got != w {
						t.Fatalf("step %d (%s %s): get(%s/%s) = %v, %v; want its task", step, op, tk.Job, k.namespace, k.name, got, ok)
					}
				}
				if _, ok := want[key]; !ok {
					if got, ok := x.get(key.namespace, key.name); ok {
						t.Fatalf("step %d (%s %s): get finds %s, want nothing", step, op, tk.Job, got.GetUID())
					}
				}
				seen := map[*framework.TaskInfo]bool{}
				for got := range x.all() {
					k := joblessKey{namespace: got.Job.Namespace, name: got.Job.Name}
					if want[k] != got || seen[got] {
						t.Fatalf("step %d (%s %s): all yields %s (%s), not once the task indexed", step, op, tk.Job, got.Job, got.GetUID())
					}
					seen[got] = true
				}
			}
		})
	}
}
