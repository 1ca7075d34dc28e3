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
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// groupCache is a fake cache that records gang groups and the owner kinds
// gangs are inferred from.
type groupCache struct {
	*fakeCache
	mu       sync.Mutex
	policies map[string]*framework.GroupPolicy
	owners   framework.OwnerKinds
	ownerSet bool
}

var (
	_ eventhandlers.GroupPolicyCache = (*groupCache)(nil)
	_ eventhandlers.OwnerGangCache   = (*groupCache)(nil)
)

func newGroupCache(t *testing.T) *groupCache {
	return &groupCache{fakeCache: newFakeCache(t), policies: map[string]*framework.GroupPolicy{}}
}

func (c *groupCache) SetGroupPolicy(kind framework.GroupKind, ns, name string, p *framework.GroupPolicy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policies[string(kind)+" "+ns+"/"+name] = p
}

func (c *groupCache) SetOwnerGangs(kinds framework.OwnerKinds) error {
	c.owners, c.ownerSet = kinds, true
	return nil
}

func (c *groupCache) policy(key string) (*framework.GroupPolicy, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.policies[key]
	return p, ok
}

// resourceNames renders what a handler asks the cache to discover.
func resourceNames(rs []eventhandlers.DiscoveredResource) string {
	names := make([]string, 0, len(rs))
	for _, r := range rs {
		n := string(eventhandlers.DynamicResourceName(r.GVR))
		if r.FirstServedVersionOnly {
			n += "(first)"
		}
		if r.Transform != nil {
			n += "(slim)"
		}
		names = append(names, n)
	}
	return strings.Join(names, " ")
}

const ownerResources = "rayclusters.v1.ray.io(slim) jobsets.v1alpha2.jobset.x-k8s.io(slim) " +
	"leaderworkersets.v1.leaderworkerset.x-k8s.io(slim) mpijobs.v2beta1.kubeflow.org(slim) pytorchjobs.v1.kubeflow.org(slim)"

// The handler asks the cache, not an informer factory of its own, for the
// resources of the gang dialects and of the owner kinds it infers gangs
// from, as configured; it tells the cache which owner kinds it infers.
func TestDiscoveredResourcesFollowTheConfiguration(t *testing.T) {
	noServer := &rest.Config{Host: "https://127.0.0.1:1"}
	tests := []struct {
		name       string
		args       string
		dialects   bool
		plainCache bool
		want       string
		wantOwners framework.OwnerKinds
	}{
		{name: "defaults, no API server for status", want: "jobs.v1.batch(slim) " + ownerResources,
			wantOwners: framework.AllOwnerKinds()},
		{name: "defaults with gang dialects", dialects: true,
			want: "podgroups.v1beta1.scheduling.k8s.io(first) podgroups.v1alpha3.scheduling.k8s.io(first) compositepodgroups.v1alpha3.scheduling.k8s.io " +
				"podgroups.v1alpha1.scheduling.x-k8s.io podgroups.v1beta1.scheduling.volcano.sh podgroups.v2alpha2.scheduling.run.ai jobs.v1.batch(slim) " + ownerResources + " " + queueResources,
			wantOwners: framework.AllOwnerKinds()},
		{name: "only RayCluster", args: "ownerGangs: {Job: false, JobSet: false, LeaderWorkerSet: false, MPIJob: false, PyTorchJob: false}",
			want: "rayclusters.v1.ray.io(slim)", wantOwners: framework.OwnerKinds(0).With(framework.GroupKindRayCluster)},
		{name: "Job off keeps the Job dialect", dialects: true, args: "disableGangDialects: false\nownerGangs: {Job: false}",
			want: "podgroups.v1beta1.scheduling.k8s.io(first) podgroups.v1alpha3.scheduling.k8s.io(first) compositepodgroups.v1alpha3.scheduling.k8s.io " +
				"podgroups.v1alpha1.scheduling.x-k8s.io podgroups.v1beta1.scheduling.volcano.sh podgroups.v2alpha2.scheduling.run.ai jobs.v1.batch(slim) " + ownerResources + " " + queueResources,
			wantOwners: framework.AllOwnerKinds().Without(framework.GroupKindJob)},
		{name: "a cache that records no groups gets only the queues", plainCache: true, dialects: true, want: queueResources},
		{name: "gang dialects off keep the queues", dialects: true, args: "disableGangDialects: true",
			want: "jobs.v1.batch(slim) " + ownerResources + " " + queueResources, wantOwners: framework.AllOwnerKinds()},
		{name: "queues off", dialects: true, args: "disableGangDialects: true\ndisableQueues: true",
			want: "jobs.v1.batch(slim) " + ownerResources, wantOwners: framework.AllOwnerKinds()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gc := newGroupCache(t)
			var c eventhandlers.Cache = gc
			if tt.plainCache {
				c = newFakeCache(t)
			}
			var rc *rest.Config
			if tt.dialects {
				rc = noServer
			}
			var cfg *config.Section
			if tt.args != "" {
				cfg = config.NewSection("config.yaml", []byte(tt.args))
			}
			var h *defaulthandler.Handler
			var err error
			if cfg != nil {
				h, err = defaulthandler.New(t.Context(), c, cfg, rc)
			} else {
				h, err = defaulthandler.New(t.Context(), c, nil, rc)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := resourceNames(h.DiscoveredResources()); got != tt.want {
				t.Errorf("DiscoveredResources:\n got %s\nwant %s", got, tt.want)
			}
			if !tt.plainCache && (!gc.ownerSet || gc.owners != tt.wantOwners) {
				t.Errorf("owner kinds given to the cache %v (set %v), want %v", gc.owners, gc.ownerSet, tt.wantOwners)
			}
			if h.OwnerKinds() != tt.wantOwners {
				t.Errorf("OwnerKinds() = %v, want %v", h.OwnerKinds(), tt.wantOwners)
			}
		})
	}
}

// The ownerGangs setting is decoded strictly: an unknown kind or a value
// that is not a boolean is an error naming the file, the line, the field
// and the value.
func TestOwnerGangsConfigErrors(t *testing.T) {
	tests := []struct {
		name, args string
		want       []string
	}{
		{name: "unknown kind", args: "ownerGangs:\n  RayClusters: true\n",
			want: []string{"config.yaml: line 2: ownerGangs: unknown kind \"RayClusters\"", "known: Job, JobSet, LeaderWorkerSet, MPIJob, PyTorchJob, RayCluster"}},
		{name: "not a boolean", args: "ownerGangs:\n  Job: yes please\n",
			want: []string{"config.yaml: line 2: ownerGangs.Job: expected true or false, got \"yes please\""}},
		{name: "a number", args: "ownerGangs: {JobSet: 1}\n",
			want: []string{"line 1: ownerGangs.JobSet: expected true or false, got \"1\""}},
		{name: "a list", args: "ownerGangs: [Job]\n",
			want: []string{"line 1: ownerGangs: expected a mapping of kind to true or false"}},
		{name: "twice", args: "ownerGangs:\n  Job: true\n  Job: false\n",
			want: []string{"line 3: ownerGangs: kind Job is listed twice"}},
		{name: "misspelt field", args: "ownerGang: {Job: true}\n",
			want: []string{"line 1: field ownerGang not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := defaulthandler.New(t.Context(), newGroupCache(t), config.NewSection("config.yaml", []byte(tt.args)), nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "defaulthandler") {
				t.Errorf("error %q is not one line free of Go names", err)
			}
		})
	}
	// An embedder that builds Args in code gets the same check.
	_, err := defaulthandler.NewWithArgs(newGroupCache(t), defaulthandler.Args{OwnerGangs: defaulthandler.OwnerGangs{"Rays": true}})
	if err == nil || !strings.Contains(err.Error(), `ownerGangs: unknown kind "Rays"`) {
		t.Errorf("NewWithArgs with an unknown kind: %v", err)
	}
}

// Objects of the resources the handler asked for reach it as dynamic
// events and become group policies in the cache; others raise cluster
// events as before.
func TestGroupObjectsBecomePolicies(t *testing.T) {
	c := newGroupCache(t)
	h, err := defaulthandler.New(t.Context(), c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := h.DiscoveredResources()
	var rayGVR = rs[1].GVR
	if rayGVR.Resource != "rayclusters" {
		t.Fatalf("resource %v, want rayclusters", rayGVR)
	}
	rc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayCluster",
		"metadata": map[string]any{"name": "rc", "namespace": "ns", "resourceVersion": "1"},
		"spec": map[string]any{"workerGroupSpecs": []any{
			map[string]any{"minReplicas": int64(2), "template": map[string]any{"spec": map[string]any{}}},
		}},
	}}
	slim, err := rs[1].Transform(rc)
	if err != nil {
		t.Fatal(err)
	}
	h.AddDynamic(rayGVR, slim)
	p, ok := c.policy("RayCluster.ray.io ns/rc")
	if !ok || p == nil || p.MinMember != 3 {
		t.Fatalf("policy of the RayCluster %+v, want minMember 3", p)
	}
	h.DeleteDynamic(rayGVR, slim)
	if p, ok := c.policy("RayCluster.ray.io ns/rc"); !ok || p != nil {
		t.Fatalf("policy after delete %+v, want nil", p)
	}
	if moves := c.fakeCache.moves; len(moves) != 0 {
		t.Errorf("group objects raised cluster events %v; the cache raises GangGroupChange itself", moves)
	}
}
