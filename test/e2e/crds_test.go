package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates the CRDs in deploy/crds (tolerating ones already there)
// and waits until each is Established. The CRDs are left installed: the
// control plane is private to this test binary.
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

func TestCRDsGrantAndExternalWorkload(t *testing.T) {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	installCRDs(t, dyn)
	ctx := t.Context()
	grants := dyn.Resource(bsv1.SchemeGroupVersion.WithResource(bsv1.GrantsResource))
	workloads := dyn.Resource(bsv1.SchemeGroupVersion.WithResource(bsv1.ExternalWorkloadsResource))

	exp := metav1.NewTime(time.Now().Add(time.Hour).UTC().Truncate(time.Second))
	g := &bsv1.Grant{
		TypeMeta:   metav1.TypeMeta{APIVersion: bsv1.SchemeGroupVersion.String(), Kind: "Grant"},
		ObjectMeta: metav1.ObjectMeta{Name: "crds-e2e-grant"},
		Spec: bsv1.GrantSpec{
			Framework: "spark",
			NodeName:  "crds-e2e-node",
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")},
			ExpiresAt: &exp,
			Issuer:    "mesos",
		},
		Status: bsv1.GrantStatus{Phase: bsv1.GrantActive},
	}
	if errs := bsv1.ValidateGrant(g); len(errs) != 0 {
		t.Fatalf("test grant is invalid: %v", errs)
	}
	if _, err := createWhenServed(t, grants, toUnstructured(t, g)); err != nil {
		t.Fatalf("creating Grant: %v", err)
	}
	t.Cleanup(func() { _ = grants.Delete(context.Background(), g.Name, metav1.DeleteOptions{}) })

	got, err := grants.Get(ctx, g.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var back bsv1.Grant
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, &back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(back.Spec, g.Spec) {
		t.Errorf("Grant spec through the apiserver:\n got %#v\nwant %#v", back.Spec, g.Spec)
	}
	if back.Status.Phase != "" {
		t.Errorf("status on create should be dropped (status subresource), got phase %q", back.Status.Phase)
	}
	if got.GetNamespace() != "" {
		t.Errorf("Grant should be cluster-scoped, got namespace %q", got.GetNamespace())
	}

	// Status goes through the status subresource and is schema-checked.
	back.Status.Phase = bsv1.GrantRevoked
	updated, err := grants.UpdateStatus(ctx, toUnstructured(t, &back), metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating Grant status: %v", err)
	}
	if phase, _, _ := unstructured.NestedString(updated.Object, "status", "phase"); phase != string(bsv1.GrantRevoked) {
		t.Errorf("status.phase after UpdateStatus = %q, want Revoked", phase)
	}
	_ = unstructured.SetNestedField(updated.Object, "Sleeping", "status", "phase")
	if _, err := grants.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.phase") {
		t.Errorf("status.phase Sleeping: want Invalid, got %v", err)
	}

	bad := []struct {
		name   string
		ri     dynamic.ResourceInterface
		obj    runtime.Object
		field  string
		mutate func(map[string]any)
	}{
		{"grant quantity not a quantity", grants, g, "spec.resources.cpu", func(m map[string]any) {
			m["spec"].(map[string]any)["resources"].(map[string]any)["cpu"] = "lots"
		}},
		{"grant negative quantity", grants, g, "spec.resources.cpu", func(m map[string]any) {
			m["spec"].(map[string]any)["resources"].(map[string]any)["cpu"] = "-1"
		}},
		{"grant nodeName not a DNS subdomain", grants, g, "spec.nodeName", func(m map[string]any) {
			m["spec"].(map[string]any)["nodeName"] = "Bad_Node"
		}},
		{"grant missing issuer", grants, g, "spec.issuer", func(m map[string]any) {
			delete(m["spec"].(map[string]any), "issuer")
		}},
		{"workload missing workloadKind", workloads, &bsv1.ExternalWorkload{
			TypeMeta: metav1.TypeMeta{APIVersion: bsv1.SchemeGroupVersion.String(), Kind: "ExternalWorkload"},
			Spec: bsv1.ExternalWorkloadSpec{NodeName: "crds-e2e-node",
				Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
		}, "spec.workloadKind", func(map[string]any) {}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			u := toUnstructured(t, tt.obj)
			u.SetName("crds-e2e-bad")
			tt.mutate(u.Object)
			_, err := createWhenServed(t, tt.ri, u)
			if err == nil {
				_ = tt.ri.Delete(context.Background(), "crds-e2e-bad", metav1.DeleteOptions{})
				t.Fatalf("apiserver accepted an invalid object")
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("want Invalid naming %s, got %v", tt.field, err)
			}
		})
	}

	// A valid ExternalWorkload goes through.
	w := &bsv1.ExternalWorkload{
		TypeMeta:   metav1.TypeMeta{APIVersion: bsv1.SchemeGroupVersion.String(), Kind: "ExternalWorkload"},
		ObjectMeta: metav1.ObjectMeta{Name: "crds-e2e-vm"},
		Spec: bsv1.ExternalWorkloadSpec{NodeName: "crds-e2e-node", WorkloadKind: "vm", Owner: "team-a",
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}},
	}
	if _, err := createWhenServed(t, workloads, toUnstructured(t, w)); err != nil {
		t.Fatalf("creating ExternalWorkload: %v", err)
	}
	t.Cleanup(func() { _ = workloads.Delete(context.Background(), w.Name, metav1.DeleteOptions{}) })
}
