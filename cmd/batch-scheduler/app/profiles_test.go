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

package app

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// orderedSort is a QueueSort plugin whose args choose the order: all
// profiles share one queue, so which profile's instance sorts it must not
// depend on map iteration.
type orderedSort struct{ reverse bool }

func (*orderedSort) Name() string { return "Ordered" }
func (o *orderedSort) Less(a, b *framework.QueuedJob) bool {
	return (a.Priority > b.Priority) != o.reverse
}

func newOrderedSort(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	var a struct {
		Reverse bool `yaml:"reverse"`
	}
	r, err := pluginutil.ArgsReader("Ordered", args)
	if err != nil {
		return nil, err
	}
	if err := config.DecodeStrict(r, &a); err != nil {
		return nil, err
	}
	return &orderedSort{reverse: a.Reverse}, nil
}

func TestQueueSortComesFromTheFirstProfile(t *testing.T) {
	const file = `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: b
  plugins:
    queueSort: [{name: Ordered}]
  pluginConfig:
  - name: Ordered
    args: {reverse: true}
- schedulerName: a
  plugins:
    queueSort: [{name: Ordered}]
`
	cfg, err := config.Parse("profiles.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	reg := plugins.NewInTreeRegistry()
	if err := reg.Register("Ordered", newOrderedSort); err != nil {
		t.Fatal(err)
	}
	high, low := &framework.QueuedJob{Priority: 10}, &framework.QueuedJob{Priority: 1}
	for _, tt := range []struct {
		names    []string
		highLess bool
	}{
		{[]string{"a", "b"}, true},  // a sorts by priority
		{[]string{"b", "a"}, false}, // b reverses it
	} {
		for range 20 {
			profiles, less, err := buildProfiles(t.Context(), tt.names, cfg, reg, testHandle())
			if err != nil {
				t.Fatalf("buildProfiles(%v): %v", tt.names, err)
			}
			if len(profiles) != 2 {
				t.Fatalf("%d profiles, want 2", len(profiles))
			}
			if got := less(high, low); got != tt.highLess {
				t.Fatalf("names %v: Less(high, low) = %v, want %v (the first name's profile)", tt.names, got, tt.highLess)
			}
		}
	}
}

// testHandle is a handle over a fake API with an informer factory, which
// the volume plugins take listers from.
func testHandle() *handle {
	client := fake.NewClientset()
	return &handle{client: client, informers: informers.NewSharedInformerFactory(client, 0)}
}

// Reservation and preemption are the default profile's PostFilter
// plugins; a profile that lists postFilter: [] turns them off, one that
// leaves the key out keeps them.
func TestProfilePostFilter(t *testing.T) {
	file := `apiVersion: batch-scheduler.io/v1alpha1
kind: SchedulerConfiguration
profiles:
- schedulerName: no-preemption
  plugins:
    postFilter: []
- schedulerName: default
`
	cfg, err := config.Parse("profiles.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	profiles, _, err := buildProfiles(t.Context(), []string{"default", "no-preemption"}, cfg, plugins.NewInTreeRegistry(), testHandle())
	if err != nil {
		t.Fatal(err)
	}
	if got := profiles["default"].ListPlugins()[frameworkruntime.PostFilterPoint].Names(); !slices.Equal(got, []string{"Reservation", "Reclaim", "DefaultPreemption"}) {
		t.Errorf("default profile's postFilter = %v, want [Reservation Reclaim DefaultPreemption]", got)
	}
	if profiles["no-preemption"].HasPostFilterPlugins() {
		t.Errorf("postFilter: [] left %v", profiles["no-preemption"].ListPlugins()[frameworkruntime.PostFilterPoint])
	}
}
