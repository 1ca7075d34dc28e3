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
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/informers/externalversions"
)

// The API server serves both kinds cluster-scoped under the group, version
// and plural names of register.go, as the generated clients assume.
func TestServedResources(t *testing.T) {
	list, err := client.Discovery().ServerResourcesForGroupVersion(bsv1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatalf("discovering %s: %v", bsv1.SchemeGroupVersion, err)
	}
	want := map[string]string{bsv1.GrantsResource: "Grant", bsv1.ExternalWorkloadsResource: "ExternalWorkload"}
	for _, r := range list.APIResources {
		kind, ok := want[r.Name]
		if !ok {
			continue // a subresource such as grants/status
		}
		delete(want, r.Name)
		if r.Kind != kind {
			t.Errorf("%s: kind %q, want %q", r.Name, r.Kind, kind)
		}
		if r.Namespaced {
			t.Errorf("%s: namespaced, want cluster-scoped", r.Name)
		}
	}
	for name := range want {
		t.Errorf("%s is not served in %s", name, bsv1.SchemeGroupVersion)
	}
}

// A Grant goes through the typed client unchanged; its status is set only
// through the status subresource.
func TestGrantRoundTrip(t *testing.T) {
	ctx := t.Context()
	grants := client.BatchSchedulerV1alpha1().Grants()
	g := sampleGrant("round-trip")
	created, err := grants.Create(ctx, g, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Grant %s: %v", g.Name, err)
	}
	t.Cleanup(func() { _ = grants.Delete(context.Background(), g.Name, metav1.DeleteOptions{}) })

	got, err := grants.Get(ctx, g.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting Grant %s: %v", g.Name, err)
	}
	if !equality.Semantic.DeepEqual(got.Spec, g.Spec) {
		t.Errorf("spec through the API server:\n got %#v\nwant %#v", got.Spec, g.Spec)
	}
	if got.Status != (bsv1.GrantStatus{}) {
		t.Errorf("a create must not set the status (status subresource), got %+v", got.Status)
	}
	if got.Namespace != "" {
		t.Errorf("namespace %q, want none (cluster-scoped)", got.Namespace)
	}

	created.Status = bsv1.GrantStatus{Phase: bsv1.GrantRevoked, Message: "taken back"}
	updated, err := grants.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating the status of Grant %s: %v", g.Name, err)
	}
	if updated.Status != created.Status {
		t.Errorf("status after UpdateStatus %+v, want %+v", updated.Status, created.Status)
	}
	// An update of the main resource leaves the status alone.
	updated.Spec.Issuer = "other-allocator"
	updated.Status = bsv1.GrantStatus{}
	again, err := grants.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating Grant %s: %v", g.Name, err)
	}
	if again.Spec.Issuer != "other-allocator" || again.Status.Phase != bsv1.GrantRevoked {
		t.Errorf("after Update: issuer %q, phase %q; want other-allocator, Revoked", again.Spec.Issuer, again.Status.Phase)
	}
}

// An informer from the generated factory lists and watches ExternalWorkloads
// of the real API server; its lister sees creates, updates and deletes.
func TestInformerAndLister(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	workloads := client.BatchSchedulerV1alpha1().ExternalWorkloads()
	sel := labels.Set{"test": "informer"}

	// One object exists before the informer starts (list), one is created
	// after (watch).
	before := sampleWorkload("informer-before")
	before.Labels = sel
	if _, err := workloads.Create(ctx, before, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ExternalWorkload %s: %v", before.Name, err)
	}
	t.Cleanup(func() { _ = workloads.Delete(context.Background(), before.Name, metav1.DeleteOptions{}) })

	factory := externalversions.NewSharedInformerFactoryWithOptions(client, 0,
		externalversions.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }))
	informer := factory.BatchScheduler().V1alpha1().ExternalWorkloads()
	events := make(chan string, 16)
	record := func(kind string, obj any) {
		if w, ok := obj.(*bsv1.ExternalWorkload); ok {
			events <- kind + " " + w.Name
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record("add", obj) },
		UpdateFunc: func(_, obj any) { record("update", obj) },
		DeleteFunc: func(obj any) { record("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	lister := informer.Lister()
	factory.Start(ctx.Done())
	// Shutdown waits for the informers, which stop when ctx is done.
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	expectEvent(t, events, "add "+before.Name)

	after := sampleWorkload("informer-after")
	after.Labels = sel
	if _, err := workloads.Create(ctx, after, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ExternalWorkload %s: %v", after.Name, err)
	}
	t.Cleanup(func() { _ = workloads.Delete(context.Background(), after.Name, metav1.DeleteOptions{}) })
	expectEvent(t, events, "add "+after.Name)
	all, err := lister.List(labels.SelectorFromSet(sel))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Errorf("lister lists %d workloads, want 2: %v", len(all), all)
	}

	// An update reaches the lister.
	cur, err := lister.Get(after.Name)
	if err != nil {
		t.Fatalf("lister: %v", err)
	}
	changed := cur.DeepCopy() // objects from a lister are shared: copy before changing
	changed.Spec.Resources[v1.ResourceCPU] = resource.MustParse("3")
	if _, err := workloads.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating ExternalWorkload %s: %v", after.Name, err)
	}
	expectEvent(t, events, "update "+after.Name)
	pollLister(t, "the new cpu of "+after.Name, func() (bool, error) {
		w, err := lister.Get(after.Name)
		if err != nil {
			return false, err
		}
		return w.Spec.Resources.Cpu().Cmp(resource.MustParse("3")) == 0, nil
	})

	// A delete removes it from the lister.
	if err := workloads.Delete(ctx, before.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting ExternalWorkload %s: %v", before.Name, err)
	}
	expectEvent(t, events, "delete "+before.Name)
	pollLister(t, before.Name+" gone", func() (bool, error) {
		_, err := lister.Get(before.Name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// expectEvent waits for the next event and checks it is want.
func expectEvent(t *testing.T, events <-chan string, want string) {
	t.Helper()
	select {
	case got := <-events:
		if got != want {
			t.Fatalf("event %q, want %q", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no event within 30s, want %q", want)
	}
}

// pollLister waits until cond holds.
func pollLister(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s in the lister: %v", what, err)
	}
}
