package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates the CRDs in deploy/crds (tolerating ones already there)
// and waits until each is Established. The CRDs are left installed: the
// control plane is private to this test binary. The CRDs themselves (schema,
// validation, the generated clients) are tested in test/crds.
func installCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx := t.Context()
	for _, f := range []string{"batch-scheduler.io_grants.yaml", "batch-scheduler.io_externalworkloads.yaml"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "crds", f))
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := dyn.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating CRD from %s: %v", f, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := dyn.Resource(crdGVR).Get(ctx, obj.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not Established: %v", obj.GetName(), err)
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
