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

package eviction

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestEvict(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name        string
		answer      error
		wantErr     string
		wantGone    bool
		wantRefused bool
	}{
		{name: "accepted"},
		{name: "not found", answer: apierrors.NewNotFound(pods, "p"), wantErr: "evicting pod ns/p: pod is gone", wantGone: true},
		{name: "replaced", answer: apierrors.NewConflict(pods, "p", errors.New("uid mismatch")), wantErr: "pod is gone", wantGone: true},
		{name: "refused by a budget", answer: apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0),
			wantErr: "evicting pod ns/p: refused, a PodDisruptionBudget allows no disruption now", wantRefused: true},
		{name: "other failure", answer: apierrors.NewInternalError(errors.New("boom")), wantErr: "evicting pod ns/p: Internal error occurred: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			var got *policyv1.Eviction
			client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "eviction" {
					return false, nil, nil
				}
				got = a.(clienttesting.CreateAction).GetObject().(*policyv1.Eviction)
				return true, nil, tt.answer
			})
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"}}
			err := Evict(t.Context(), client, pod)
			if got == nil || got.Namespace != "ns" || got.Name != "p" || got.DeleteOptions == nil ||
				got.DeleteOptions.Preconditions == nil || got.DeleteOptions.Preconditions.UID == nil || *got.DeleteOptions.Preconditions.UID != "uid-1" {
				t.Fatalf("eviction sent: %+v, want one of ns/p with a precondition on its UID", got)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Evict = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Evict = %v, want an error containing %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrGone) != tt.wantGone {
				t.Errorf("errors.Is(err, ErrGone) = %v, want %v", !tt.wantGone, tt.wantGone)
			}
			if IsRefused(err) != tt.wantRefused {
				t.Errorf("IsRefused = %v, want %v", !tt.wantRefused, tt.wantRefused)
			}
		})
	}
}
