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

package e2e

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// protobufClients returns client-go's clientset and the informers' one
// (informerhost.NewInformerClient), both speaking protobuf to the API
// server as the command's do.
func protobufClients(t *testing.T) (plain, informers kubernetes.Interface) {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	plain, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	informers, err = informerhost.NewInformerClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return plain, informers
}

// nextEvent returns the next event of w, failing the test after 30 s.
func nextEvent(t *testing.T, w watch.Interface, what string) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("%s: the watch closed", what)
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no event in 30 s", what)
	}
	return watch.Event{}
}

// The informers' client reads from a real API server's protobuf
// responses pods the informers store as they store client-go's, without
// the managed fields and the last-applied annotation: a list, added and
// deleted pods and the bookmark that ends a watch list's initial events.
// (ERROR events need a compacted etcd to come from a real server:
// TestWatchStreamMatchesClientGo in pkg/cache/informerhost decodes one
// framed as the API server frames it.)
func TestInformerClientWatchesLikeClientGo(t *testing.T) {
	ns := createNamespace(t)
	plain, informers := protobufClients(t)
	pod := st.MakePod().Namespace(ns).Name("watched").Scheduler("default-scheduler").Req(res{"cpu": "100m"}).Obj()
	pod.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"Pod"}`, "kept": "yes"}
	created, err := controlplane.CreatePod(t.Context(), cp.Client, pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(created.ManagedFields) == 0 {
		t.Fatal("the API server recorded no managed fields: the test would prove nothing")
	}

	check := func(what string, want, got watch.Event) {
		t.Helper()
		if got.Type != want.Type {
			t.Fatalf("%s: event %s, client-go's %s", what, got.Type, want.Type)
		}
		wp, ok := want.Object.(*v1.Pod)
		if !ok {
			t.Fatalf("%s: client-go's object is a %T", what, want.Object)
		}
		gp, ok := got.Object.(*v1.Pod)
		if !ok {
			t.Fatalf("%s: our object is a %T", what, got.Object)
		}
		if gp.ManagedFields != nil {
			t.Errorf("%s: managed fields kept: %v", what, gp.ManagedFields)
		}
		if _, ok := gp.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; ok {
			t.Errorf("%s: last-applied annotation kept", what)
		}
		// What the informers store of each (the transform drops more
		// than the decoder does, and the same in the end).
		w, err := informerhost.StripForScheduler(wp.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		g, err := informerhost.StripForScheduler(gp.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: stored pods differ (-client-go +ours):\n%s", what, diff.Diff(w, g))
		}
	}
	// A list, as a reflector makes when the API server cannot stream the
	// initial state as a watch.
	var lists [2]*v1.PodList
	for i, c := range []kubernetes.Interface{plain, informers} {
		if lists[i], err = c.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(lists[0].Items) != 1 || len(lists[1].Items) != 1 {
		t.Fatalf("listed %d pods, client-go %d; want 1", len(lists[1].Items), len(lists[0].Items))
	}
	check("list", watch.Event{Type: watch.Added, Object: &lists[0].Items[0]}, watch.Event{Type: watch.Added, Object: &lists[1].Items[0]})

	// A watch list: the pod, then the bookmark that ends the initial
	// events, then its deletion.
	opts := metav1.ListOptions{Watch: true, SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	var ws [2]watch.Interface
	for i, c := range []kubernetes.Interface{plain, informers} {
		if ws[i], err = c.CoreV1().Pods(ns).Watch(t.Context(), opts); err != nil {
			t.Fatal(err)
		}
		defer ws[i].Stop()
	}
	for _, what := range []string{"initial event", "bookmark"} {
		check(what, nextEvent(t, ws[0], "client-go: "+what), nextEvent(t, ws[1], "ours: "+what))
	}
	if err := cp.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	for {
		want, got := nextEvent(t, ws[0], "client-go: deletion"), nextEvent(t, ws[1], "ours: deletion")
		check("after the deletion", want, got)
		if want.Type == watch.Deleted {
			break
		}
	}
}
