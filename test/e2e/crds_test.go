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
	"context"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// installCRDs creates the CRDs in deploy/crds (tolerating ones already there)
// and waits until each is served. The CRDs are left installed: the
// control plane is private to this test binary. The CRDs themselves (schema,
// validation, the generated clients) are tested in test/crds.
func installCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	for _, f := range []string{"batch-scheduler.io_grants.yaml", "batch-scheduler.io_externalworkloads.yaml"} {
		if err := controlplane.InstallCRDFile(t.Context(), dyn, filepath.Join("..", "..", "deploy", "crds", f)); err != nil {
			t.Fatal(err)
		}
	}
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// createWhenServed retries a create while the new resource's REST endpoint
// is still coming up (NotFound right after Established is possible).
func createWhenServed(t *testing.T, ri dynamic.ResourceInterface, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	var out *unstructured.Unstructured
	var lastErr error
	_ = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		out, lastErr = ri.Create(ctx, u.DeepCopy(), metav1.CreateOptions{})
		return !apierrors.IsNotFound(lastErr), nil
	})
	return out, lastErr
}
