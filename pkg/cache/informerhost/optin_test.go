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

package informerhost

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// claimRecorder handles ResourceClaim events (and no other DRA resource).
type claimRecorder struct {
	nopHandler
	mu     sync.Mutex
	claims []string
}

var _ eventhandlers.ResourceClaimEventHandler = &claimRecorder{}

func (r *claimRecorder) AddResourceClaim(obj any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claims = append(r.claims, obj.(*resourceapi.ResourceClaim).Name)
}
func (r *claimRecorder) UpdateResourceClaim(_, _ any) {}
func (r *claimRecorder) DeleteResourceClaim(any)      {}

func (r *claimRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.claims)
}

// The DRA informers are opt-in: they run only when Options.Resources
// names them, WildCard or not; a handler without their optional interface
// still gets them synced (for the plugins' listers), one with it gets the
// events. ResourceClaimTemplates come with ResourceClaims, for the cache.
func TestOptInInformers(t *testing.T) {
	claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	for _, tt := range []struct {
		name      string
		resources []framework.EventResource
		want      []string // the DRA registrations
	}{
		{name: "every native resource", resources: nil, want: nil},
		{name: "WildCard", resources: []framework.EventResource{framework.WildCard}, want: nil},
		{name: "named beside WildCard", resources: []framework.EventResource{framework.WildCard, framework.ResourceClaim, framework.DeviceClass},
			want: []string{"DeviceClass", "ResourceClaim", "ResourceClaimTemplate"}},
		{name: "named", resources: []framework.EventResource{framework.ResourceSlice, framework.ResourceClaim},
			want: []string{"ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"}},
		{name: "slices and classes without claims", resources: []framework.EventResource{framework.ResourceSlice, framework.DeviceClass},
			want: []string{"DeviceClass", "ResourceSlice"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			host, err := New(Options{Client: fake.NewClientset(claim), Resources: tt.resources})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			rec := &claimRecorder{}
			if err := host.Run(ctx, rec); err != nil {
				t.Fatal(err)
			}
			syncCtx, stop := context.WithTimeout(ctx, 10*time.Second)
			defer stop()
			if err := host.WaitForHandlersSync(syncCtx); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range host.Handlers().Registrations {
				if IsOptIn(framework.EventResource(r.Name)) {
					got = append(got, r.Name)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("DRA registrations = %v, want %v", got, tt.want)
			}
			if !slices.Contains(tt.want, "ResourceClaim") {
				return
			}
			err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return slices.Equal(rec.seen(), []string{"c"}), nil
			})
			if err != nil {
				t.Errorf("handler saw claims %v, want [c]", rec.seen())
			}
		})
	}
}

// observed records the resources of the events a ClaimObserver saw.
type observed struct {
	mu   sync.Mutex
	seen map[framework.EventResource]int
}

func (o *observed) wrap(r framework.EventResource, next toolscache.ResourceEventHandler) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			o.mu.Lock()
			o.seen[r]++
			o.mu.Unlock()
			next.OnAdd(obj, false)
		},
		UpdateFunc: next.OnUpdate,
		DeleteFunc: next.OnDelete,
	}
}

func (o *observed) count(r framework.EventResource) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[r]
}

// Options.ClaimObserver sees the events of ResourceClaims,
// ResourceClaimTemplates, DeviceClasses and ResourceSlices, and passes
// them on to the handler.
func TestClaimObserver(t *testing.T) {
	client := fake.NewClientset(
		&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}},
		&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t"}},
		&resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "d"}},
		&resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}},
	)
	o := &observed{seen: map[framework.EventResource]int{}}
	host, err := New(Options{Client: client, ClaimObserver: o.wrap,
		Resources: []framework.EventResource{framework.ResourceClaim, framework.ResourceSlice, framework.DeviceClass}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rec := &claimRecorder{}
	if err := host.Run(ctx, rec); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return o.count(framework.ResourceClaim) == 1 && o.count(framework.ResourceClaimTemplate) == 1 &&
			o.count(framework.DeviceClass) == 1 && o.count(framework.ResourceSlice) == 1 && slices.Equal(rec.seen(), []string{"c"}), nil
	})
	if err != nil {
		t.Errorf("observer saw %v, handler saw claims %v; want one of each and claim c passed on", o.seen, rec.seen())
	}
}
