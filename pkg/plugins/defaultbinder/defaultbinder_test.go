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

package defaultbinder

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func newBinder(t *testing.T, h framework.Handle) framework.BindPlugin {
	t.Helper()
	p, err := New(context.Background(), nil, h)
	if err != nil {
		t.Fatal(err)
	}
	return p.(framework.BindPlugin)
}

func TestBind(t *testing.T) {
	pod := st.MakePod().Namespace("ns").Name("p").UID("uid-1234").Obj()
	h := testutil.NewHandle(pod)
	b := newBinder(t, h)

	if s := b.Bind(context.Background(), framework.NewCycleState(), pod, "node-1"); !s.IsSuccess() {
		t.Fatalf("Bind = %v", s)
	}
	var bindings []*v1.Binding
	for _, a := range h.Client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" && a.GetSubresource() == "binding" {
			bindings = append(bindings, a.(clienttesting.CreateAction).GetObject().(*v1.Binding))
			if a.GetNamespace() != "ns" {
				t.Errorf("binding created in namespace %q", a.GetNamespace())
			}
		}
	}
	if len(bindings) != 1 {
		t.Fatalf("%d bindings reached the API, want 1; actions: %v", len(bindings), h.Client.Actions())
	}
	got := bindings[0]
	if got.Namespace != "ns" || got.Name != "p" || got.UID != "uid-1234" || got.Target.Kind != "Node" || got.Target.Name != "node-1" {
		t.Errorf("binding = %+v", got)
	}
	if len(got.Annotations) != 0 {
		t.Errorf("binding of a pod that backfills nothing has annotations %v", got.Annotations)
	}
}

// A pod placed in room another job's reservation holds on its node says
// so on its binding; one placed on another node does not.
func TestBindBackfill(t *testing.T) {
	reserving := framework.JobID{Namespace: "ns", Name: "gang", Gang: true}
	start := time.Date(2026, 12, 5, 3, 37, 0, 743000000, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		node string
		want map[string]string
	}{
		{"reserved", map[string]string{framework.BackfilledIntoAnnotation: reserving.String(), framework.BackfillDeadlineAnnotation: "2026-12-05T02:37:00.743Z"}},
		{"other", nil},
	} {
		t.Run(tc.node, func(t *testing.T) {
			pod := st.MakePod().Namespace("ns").Name("p").UID("uid-1").Obj()
			h := testutil.NewHandle(pod)
			state := framework.NewCycleState()
			framework.NoteBackfill(state, "reserved", framework.Backfill{Job: reserving, Start: start.Add(time.Minute)})
			// Of two reservations on a node, the one that starts first binds.
			framework.NoteBackfill(state, "reserved", framework.Backfill{Job: reserving, Start: start})
			framework.NoteBackfill(state, "reserved", framework.Backfill{Job: framework.JobID{Namespace: "ns", Name: "later"}, Start: start.Add(time.Hour)})
			if s := newBinder(t, h).Bind(context.Background(), state, pod, tc.node); !s.IsSuccess() {
				t.Fatalf("Bind = %v", s)
			}
			for _, a := range h.Client.Actions() {
				if a.GetSubresource() == "binding" {
					got := a.(clienttesting.CreateAction).GetObject().(*v1.Binding).Annotations
					if !maps.Equal(got, tc.want) {
						t.Errorf("binding annotations %v, want %v", got, tc.want)
					}
					return
				}
			}
			t.Fatal("no binding reached the API")
		})
	}
}

func TestBindErrors(t *testing.T) {
	pod := st.MakePod().Namespace("ns").Name("p").Obj()
	t.Run("pod gone", func(t *testing.T) {
		b := newBinder(t, testutil.NewHandle()) // the fake API has no such pod
		s := b.Bind(context.Background(), nil, pod, "node-1")
		if s.Code() != framework.Error || s.Message() == "" {
			t.Fatalf("Bind = %v, want Error", s)
		}
		if !strings.Contains(s.Message(), "binding pod ns/p to node node-1") || !apierrors.IsNotFound(s.AsError()) {
			t.Errorf("error %q does not name pod and node or lost the API error", s.Message())
		}
	})
	t.Run("conflict", func(t *testing.T) {
		h := testutil.NewHandle(pod)
		h.Client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "binding" {
				return false, nil, nil
			}
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, "p", errors.New("pod p is already assigned to node other"))
		})
		s := newBinder(t, h).Bind(context.Background(), nil, pod, "node-1")
		if s.Code() != framework.Error || !apierrors.IsConflict(s.AsError()) ||
			!strings.Contains(s.Message(), "binding pod ns/p to node node-1: ") || !strings.Contains(s.Message(), "already assigned") {
			t.Errorf("Bind = %v", s)
		}
	})
	t.Run("no clientset", func(t *testing.T) {
		s := newBinder(t, nilClientHandle{}).Bind(context.Background(), nil, pod, "node-1")
		if s.Code() != framework.Error || !strings.Contains(s.Message(), "no clientset") {
			t.Errorf("Bind = %v", s)
		}
	})
}

type nilClientHandle struct{}

func (nilClientHandle) ClientSet() kubernetes.Interface     { return nil }
func (nilClientHandle) EventRecorder() events.EventRecorder { return nil }
func (nilClientHandle) SharedInformerFactory() informers.SharedInformerFactory {
	return nil
}

func TestNew(t *testing.T) {
	h := testutil.NewHandle()
	p, err := New(context.Background(), configapi.NewRawArgs("", []byte("")), h)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "DefaultBinder" {
		t.Errorf("Name = %q", p.Name())
	}
	if ev := p.(framework.EnqueueExtensions).EventsToRegister(); len(ev) != 0 {
		t.Errorf("EventsToRegister = %#v, want an empty list", ev)
	}
	if _, err := New(context.Background(), configapi.NewRawArgs("", []byte("retries: 3")), h); err == nil || !strings.Contains(err.Error(), "DefaultBinder args") {
		t.Errorf("args accepted: %v", err)
	}
	if _, err := New(context.Background(), nil, nil); err == nil || !strings.Contains(err.Error(), "DefaultBinder: no framework handle") {
		t.Errorf("nil handle accepted: %v", err)
	}
}
