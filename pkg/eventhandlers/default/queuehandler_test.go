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

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// queueResources are the queue resources a handler asks the cache to
// discover, as resourceNames renders them.
const queueResources = "queues.v1alpha1.batch-scheduler.io queues.v1beta1.scheduling.volcano.sh"

var (
	ownQueueGVR     = schema.GroupVersionResource{Group: "batch-scheduler.io", Version: "v1alpha1", Resource: "queues"}
	volcanoQueueGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}
)

// noQueueCache records gang groups but not queues.
type noQueueCache struct {
	eventhandlers.Cache
	eventhandlers.GroupPolicyCache
}

// newQueueHandler builds a handler on c with args (YAML, "" for none),
// with an API server (that it never reaches) when withServer.
func newQueueHandler(t *testing.T, c eventhandlers.Cache, args string, withServer bool) *defaulthandler.Handler {
	t.Helper()
	var rc *rest.Config
	if withServer {
		rc = &rest.Config{Host: "https://127.0.0.1:1"}
	}
	var h *defaulthandler.Handler
	var err error
	if args != "" {
		h, err = defaulthandler.New(t.Context(), c, config.NewSection("config.yaml", []byte(args)), rc)
	} else {
		h, err = defaulthandler.New(t.Context(), c, nil, rc)
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// queueObject is a queue of gvr named name with spec.weight weight.
func queueObject(gvr schema.GroupVersionResource, name, rv string, weight int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "Queue",
		"metadata": map[string]any{"name": name, "resourceVersion": rv},
		"spec":     map[string]any{"weight": weight},
	}}
}

// The handler watches queues only where it has an API server, a cache
// that records queues, and queues are not disabled.
func TestDiscoveredQueueResources(t *testing.T) {
	tests := []struct {
		name       string
		cache      func(t *testing.T) eventhandlers.Cache
		args       string
		withServer bool
		want       bool
	}{
		{name: "defaults", withServer: true, want: true},
		{name: "disabled", args: "disableQueues: true", withServer: true},
		{name: "no API server"},
		{name: "a cache that records no queues", withServer: true, cache: func(t *testing.T) eventhandlers.Cache {
			gc := newGroupCache(t)
			return noQueueCache{Cache: gc, GroupPolicyCache: gc}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c eventhandlers.Cache = newGroupCache(t)
			if tt.cache != nil {
				c = tt.cache(t)
			}
			got := resourceNames(newQueueHandler(t, c, tt.args, tt.withServer).DiscoveredResources())
			if has := strings.Contains(got, queueResources); has != tt.want {
				t.Errorf("DiscoveredResources %s: queues listed %v, want %v", got, has, tt.want)
			}
			if !tt.want && strings.Contains(got, "queues.") {
				t.Errorf("DiscoveredResources %s lists a queue resource", got)
			}
		})
	}
}

// A queue's add, update and delete, also as a tombstone, reach the cache
// as SetQueue of its source, nil on delete, and raise no cluster event of
// their own (the cache raises QueueChange).
func TestQueueObjectsReachTheCache(t *testing.T) {
	for _, tt := range []struct {
		gvr    schema.GroupVersionResource
		source string
	}{
		{gvr: ownQueueGVR, source: "batch-scheduler.io"},
		{gvr: volcanoQueueGVR, source: "scheduling.volcano.sh"},
	} {
		t.Run(tt.source, func(t *testing.T) {
			c := newGroupCache(t)
			h := newQueueHandler(t, c, "", true)
			q1 := queueObject(tt.gvr, "team-a", "1", 3)
			q2 := queueObject(tt.gvr, "team-a", "2", 4)
			bad := queueObject(tt.gvr, "team-b", "1", -1)
			h.AddDynamic(tt.gvr, q1)
			h.UpdateDynamic(tt.gvr, q1, q2)
			h.AddDynamic(tt.gvr, bad)
			h.DeleteDynamic(tt.gvr, q2)
			h.DeleteDynamic(tt.gvr, toolscache.DeletedFinalStateUnknown{Key: "team-b", Obj: bad})

			key := "SetQueue " + tt.source + "/"
			want := []string{key + "team-a", key + "team-a", key + "team-b", key + "team-a", key + "team-b"}
			if d := diffCalls(c.Effects(), want); d != "" {
				t.Error(d)
			}
			calls := c.QueueCalls()
			if len(calls) != len(want) {
				t.Fatalf("%d SetQueue calls, want %d", len(calls), len(want))
			}
			for i, wantWeight := range []int64{3, 4} {
				if s := calls[i].Spec; s == nil || s.Err != nil || s.Weight != wantWeight || s.Name != "team-a" {
					t.Errorf("SetQueue #%d spec %+v, want team-a of weight %d", i, s, wantWeight)
				}
			}
			if s := calls[2].Spec; s == nil || s.Err == nil || !strings.Contains(s.Err.Error(), "spec.weight") {
				t.Errorf("SetQueue of an invalid queue: spec %+v, want one with an error naming spec.weight", s)
			}
			for _, i := range []int{3, 4} {
				if calls[i].Spec != nil {
					t.Errorf("SetQueue #%d on delete: spec %+v, want nil", i, calls[i].Spec)
				}
			}
		})
	}
}

// Volcano's Queue "root" is the root its queues hang from (spec.parent:
// root), not a queue: it never reaches the cache. A Queue of this project
// of that name is an ordinary queue.
func TestVolcanoRootQueueIsNoQueue(t *testing.T) {
	c := newGroupCache(t)
	h := newQueueHandler(t, c, "", true)
	root := queueObject(volcanoQueueGVR, "root", "1", 1)
	h.AddDynamic(volcanoQueueGVR, root)
	h.UpdateDynamic(volcanoQueueGVR, root, queueObject(volcanoQueueGVR, "root", "2", 1))
	h.DeleteDynamic(volcanoQueueGVR, root)
	h.AddDynamic(ownQueueGVR, queueObject(ownQueueGVR, "root", "1", 1))
	if d := diffCalls(c.Effects(), []string{"SetQueue batch-scheduler.io/root"}); d != "" {
		t.Error(d)
	}
}

// With queues disabled, or a cache that records none, a queue is just an
// object of a dynamic resource.
func TestQueueObjectsWithoutQueues(t *testing.T) {
	for _, tt := range []struct {
		name  string
		args  string
		plain bool
	}{
		{name: "disabled", args: "disableQueues: true"},
		{name: "a cache that records no queues", plain: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gc := newGroupCache(t)
			var c eventhandlers.Cache = gc
			if tt.plain {
				c = noQueueCache{Cache: gc, GroupPolicyCache: gc}
			}
			h := newQueueHandler(t, c, tt.args, true)
			for _, gvr := range []schema.GroupVersionResource{ownQueueGVR, volcanoQueueGVR} {
				h.AddDynamic(gvr, queueObject(gvr, "team-a", "1", 3))
				h.DeleteDynamic(gvr, queueObject(gvr, "team-a", "1", 3))
			}
			if calls := gc.QueueCalls(); len(calls) != 0 {
				t.Errorf("SetQueue calls %+v, want none", calls)
			}
			if moves := gc.Moves(); len(moves) != 4 {
				t.Errorf("%d cluster events raised, want 4 (an add and a delete of each queue resource)", len(moves))
			}
		})
	}
}

// The queue a Volcano PodGroup names in spec.queue becomes its policy's
// queue, which the job's queue follows.
func TestVolcanoPodGroupNamesTheQueue(t *testing.T) {
	c := newGroupCache(t)
	h := newQueueHandler(t, c, "", true)
	gvr := schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	h.AddDynamic(gvr, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "train", "namespace": "ns", "resourceVersion": "1"},
		"spec":     map[string]any{"minMember": int64(2), "queue": "team-a"},
	}})
	p, ok := c.policy(string(framework.GroupKindVolcano) + " ns/train")
	if !ok || p == nil || p.Err != nil || p.Queue != "team-a" {
		t.Fatalf("policy of the PodGroup %+v, want queue team-a", p)
	}
	j := framework.NewJobInfo(framework.JobID{Namespace: "ns", Name: "train", Gang: true})
	j.SetGroupPolicy(framework.GroupKindVolcano, p)
	if q, via := j.Queue(); q != "team-a" || via != "PodGroup.scheduling.volcano.sh ns/train spec.queue" {
		t.Errorf("job's queue %q via %q, want team-a via the PodGroup's spec.queue", q, via)
	}
}
