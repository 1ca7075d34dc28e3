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

package custominformer

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// The reflector gets copies of what the source served: an informer's
// transform changes objects in place, and the list-watch keeps the
// originals to read their keys and, at a relist, compare their content.
// Run with -race: the transform's write used to race with apply's read.
func TestReflectorGetsCopies(t *testing.T) {
	vm := func(name, rv string) v1alpha1.ExternalWorkload {
		return v1alpha1.ExternalWorkload{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: name, ResourceVersion: rv},
			Spec: v1alpha1.ExternalWorkloadSpec{NodeName: "host-1"}}
	}
	list := &v1alpha1.ExternalWorkloadList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []v1alpha1.ExternalWorkload{vm("a", "1")}}
	events := watch.NewFake()
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list, nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return events, nil },
	}
	r := newResilientListWatch(lw, &v1alpha1.ExternalWorkload{}, "vms", unregisteredMetrics().forSource("vms"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	got, err := r.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := got.(*v1alpha1.ExternalWorkloadList)
	if &listed.Items[0] == &list.Items[0] {
		t.Fatalf("the reflector got the source's list itself")
	}
	listed.Items[0].Spec.NodeName = "changed-by-a-transform"

	w, err := r.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	sent := vm("b", "2")
	go events.Add(&sent)
	select {
	case e := <-w.ResultChan():
		obj := e.Object.(*v1alpha1.ExternalWorkload)
		if obj == &sent {
			t.Fatalf("the reflector got the source's object itself")
		}
		obj.Spec.NodeName = "changed-by-a-transform"
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	// apply runs after the send: wait until the list-watch recorded b.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		b, a := r.items["vms/b"], r.items["vms/a"]
		r.mu.Unlock()
		if b != nil {
			if n := b.(*v1alpha1.ExternalWorkload).Spec.NodeName; n != "host-1" {
				t.Errorf("the list-watch's copy of b changed: node %q", n)
			}
			if n := a.(*v1alpha1.ExternalWorkload).Spec.NodeName; n != "host-1" {
				t.Errorf("the list-watch's copy of a changed: node %q", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the list-watch never recorded b")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
