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
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned/scheme"
)

// object is what the generated clients handle.
type object interface {
	runtime.Object
	metav1.Object
}

// typedClient is the part of a generated typed client (GrantInterface,
// ExternalWorkloadInterface) the verdict tests use.
type typedClient[T object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// kind adapts one API type to the verdict tests.
type kind[T object] struct {
	resource string // plural, as in REST paths
	client   typedClient[T]
	// sample returns a valid object named name, status included.
	sample   func(name string) T
	validate func(T) field.ErrorList
	// withStatus returns created with the status of from; ok is false when
	// from's status is empty (nothing to send).
	withStatus func(created, from T) (out T, ok bool)
}

// verdictCase is one object and the verdict both validators must reach.
type verdictCase[T object] struct {
	name string
	// mutate changes the sample object; nil keeps it.
	mutate func(T)
	// wire, if set, changes the object's JSON form after mutate, for what a
	// Go value cannot express (a bare integer quantity, a missing required
	// field, a malformed time). Such objects are posted as raw JSON through
	// the typed clientset's REST client, and their status is sent as a merge
	// patch of the status subresource.
	wire func(obj map[string]any)
	// valid is validation.go's expected verdict, and the API server's too
	// unless apiStricter is set.
	valid bool
	// apiStricter, if set, says why the API server rejects this valid
	// object: a wire form Go's decoder tolerates and the CRD schema does
	// not. Go clients never send such forms (a Quantity encodes
	// canonically), so the difference is pinned here rather than removed.
	apiStricter string
	// goStricter, if set, says why the API server accepts this object that
	// validation.go rejects: a rule the CRD cannot state within its CEL
	// cost budget. The scheduler then reports the object as invalid (a
	// Queue's Valid condition) with validation.go's field path.
	goStricter string
	// fields are, for an invalid object, the field paths both rejections
	// must name.
	fields []string
}

// f lists field paths.
func f(paths ...string) []string { return paths }

func spec(m map[string]any) map[string]any { return m["spec"].(map[string]any) }

func specResources(m map[string]any) map[string]any {
	s := spec(m)
	if s["resources"] == nil {
		s["resources"] = map[string]any{}
	}
	return s["resources"].(map[string]any)
}

// runVerdicts creates each case's object through the API server (spec on
// create, status through the status subresource) and checks that the API
// server's verdict equals validation.go's on the same JSON, and the
// expected one.
func runVerdicts[T object](t *testing.T, k kind[T], cases []verdictCase[T]) {
	t.Helper()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("verdict-%s-%d", k.resource, i)
			obj := k.sample(name)
			if tc.mutate != nil {
				tc.mutate(obj)
			}
			body, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wire != nil {
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatal(err)
				}
				tc.wire(m)
				if body, err = json.Marshal(m); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() {
				err := k.client.Delete(context.Background(), name, metav1.DeleteOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting %s %s: %v", k.resource, name, err)
				}
			})

			goErr, decoded := goVerdict(k, body)
			apiErr := apiVerdict(t.Context(), k, obj, body, tc.wire != nil)
			t.Logf("object: %s", body)
			t.Logf("validation.go: %v", goErr)
			t.Logf("API server:    %v", apiErr)

			if (goErr == nil) != tc.valid {
				t.Errorf("validation.go: valid=%t, want %t (error: %v)", goErr == nil, tc.valid, goErr)
			}
			if apiErr != nil && !apierrors.IsInvalid(apiErr) {
				t.Errorf("the API server's rejection is not Invalid (422): %v", apiErr)
			}
			if tc.apiStricter != "" {
				if apiErr == nil {
					t.Errorf("the API server accepted the object; the known difference (%s) is gone: make this an ordinary case", tc.apiStricter)
				}
				return
			}
			if tc.goStricter != "" {
				if apiErr != nil {
					t.Errorf("the API server rejected the object; the known difference (%s) is gone: make this an ordinary case", tc.goStricter)
				}
				for _, f := range tc.fields {
					if goErr == nil || !strings.Contains(goErr.Error(), f) {
						t.Errorf("validation.go's rejection does not name %s: %v", f, goErr)
					}
				}
				return
			}
			if (apiErr == nil) != (goErr == nil) {
				t.Errorf("the API server and validation.go disagree:\n API server:    %v\n validation.go: %v", apiErr, goErr)
			}
			if tc.valid {
				return
			}
			if len(tc.fields) == 0 {
				t.Fatal("an invalid case must name the fields its rejection is about")
			}
			for _, f := range tc.fields {
				if apiErr != nil && !strings.Contains(apiErr.Error(), f) {
					t.Errorf("the API server's rejection does not name %s: %v", f, apiErr)
				}
				// A body that does not even decode is rejected before
				// validation.go runs; only validation errors name a field.
				if decoded && goErr != nil && !strings.Contains(goErr.Error(), f) {
					t.Errorf("validation.go's rejection does not name %s: %v", f, goErr)
				}
			}
		})
	}
}

// goVerdict decodes body as the custom informers would (the generated
// scheme) and runs validation.go on it. decoded is false when body does
// not decode.
func goVerdict[T object](k kind[T], body []byte) (err error, decoded bool) {
	into, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return fmt.Errorf("decoding: %w", err), false
	}
	obj, ok := into.(T)
	if !ok {
		return fmt.Errorf("decoded a %T, want %s", into, k.resource), false
	}
	return k.validate(obj).ToAggregate(), true
}

// apiVerdict sends the object to the API server: the spec with a create
// (typed, or raw JSON when raw), then a non-empty status through the status
// subresource, since a create drops the status. It returns the first
// rejection.
func apiVerdict[T object](ctx context.Context, k kind[T], obj T, body []byte, raw bool) error {
	if !raw {
		created, err := k.client.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if withStatus, ok := k.withStatus(created, obj); ok {
			_, err = k.client.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
		}
		return err
	}
	err := client.BatchSchedulerV1alpha1().RESTClient().Post().Resource(k.resource).
		Body(body).Do(ctx).Error()
	if err != nil {
		return err
	}
	var m struct {
		Status map[string]any `json:"status"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("reading the status of %s: %w", body, err)
	}
	if len(m.Status) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": m.Status})
	if err != nil {
		return fmt.Errorf("encoding the status patch of %s: %w", obj.GetName(), err)
	}
	_, err = k.client.Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

func sampleGrant(name string) *bsv1.Grant {
	exp := metav1.NewTime(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	return &bsv1.Grant{
		TypeMeta:   metav1.TypeMeta{APIVersion: bsv1.SchemeGroupVersion.String(), Kind: "Grant"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: bsv1.GrantSpec{
			Framework: "spark",
			NodeName:  "node-1",
			Resources: v1.ResourceList{
				v1.ResourceCPU:    resource.MustParse("4"),
				v1.ResourceMemory: resource.MustParse("8Gi"),
			},
			ExpiresAt: &exp,
			Issuer:    "allocator",
		},
		Status: bsv1.GrantStatus{Phase: bsv1.GrantActive, Message: "granted"},
	}
}

func sampleWorkload(name string) *bsv1.ExternalWorkload {
	return &bsv1.ExternalWorkload{
		TypeMeta:   metav1.TypeMeta{APIVersion: bsv1.SchemeGroupVersion.String(), Kind: "ExternalWorkload"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: bsv1.ExternalWorkloadSpec{
			NodeName:     "node-1",
			Resources:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")},
			WorkloadKind: "vm",
			Owner:        "team-a",
		},
		Status: bsv1.ExternalWorkloadStatus{Phase: bsv1.ExternalWorkloadRunning, Message: "booted"},
	}
}

func grantKind() kind[*bsv1.Grant] {
	return kind[*bsv1.Grant]{
		resource: bsv1.GrantsResource,
		client:   client.BatchSchedulerV1alpha1().Grants(),
		sample:   sampleGrant,
		validate: bsv1.ValidateGrant,
		withStatus: func(created, from *bsv1.Grant) (*bsv1.Grant, bool) {
			out := created.DeepCopy()
			out.Status = from.Status
			return out, from.Status != bsv1.GrantStatus{}
		},
	}
}

func workloadKind() kind[*bsv1.ExternalWorkload] {
	return kind[*bsv1.ExternalWorkload]{
		resource: bsv1.ExternalWorkloadsResource,
		client:   client.BatchSchedulerV1alpha1().ExternalWorkloads(),
		sample:   sampleWorkload,
		validate: bsv1.ValidateExternalWorkload,
		withStatus: func(created, from *bsv1.ExternalWorkload) (*bsv1.ExternalWorkload, bool) {
			out := created.DeepCopy()
			out.Status = from.Status
			return out, from.Status != bsv1.ExternalWorkloadStatus{}
		},
	}
}

// setQuantity returns a wire mutation setting resources[name] to v, a
// string or a bare JSON number.
func setQuantity(name string, v any) func(map[string]any) {
	return func(m map[string]any) { specResources(m)[name] = v }
}

func grantResources(g *bsv1.Grant) v1.ResourceList               { return g.Spec.Resources }
func workloadResources(w *bsv1.ExternalWorkload) v1.ResourceList { return w.Spec.Resources }

// manyResources returns a mutation that makes the object's resources hold
// n names (example.com/r-0, ...), each with a quantity of 1.
func manyResources[T object](n int, resources func(T) v1.ResourceList) func(T) {
	return func(obj T) {
		rl := resources(obj)
		clear(rl)
		for i := range n {
			rl[v1.ResourceName(fmt.Sprintf("example.com/r-%d", i))] = resource.MustParse("1")
		}
	}
}

func TestGrantVerdicts(t *testing.T) {
	cpu := func(q string) func(*bsv1.Grant) {
		return func(g *bsv1.Grant) { g.Spec.Resources[v1.ResourceCPU] = resource.MustParse(q) }
	}
	runVerdicts(t, grantKind(), []verdictCase[*bsv1.Grant]{
		{name: "valid", valid: true},
		{name: "no expiry and no status", valid: true, mutate: func(g *bsv1.Grant) {
			g.Spec.ExpiresAt = nil
			g.Status = bsv1.GrantStatus{}
		}},
		{name: "resources absent", valid: true, mutate: func(g *bsv1.Grant) { g.Spec.Resources = nil }},
		{name: "resources empty", valid: true, mutate: func(g *bsv1.Grant) { g.Spec.Resources = v1.ResourceList{} }},
		{name: "zero cpu", valid: true, mutate: cpu("0")},
		{name: "extended resource", valid: true, mutate: func(g *bsv1.Grant) {
			g.Spec.Resources["nvidia.com/gpu"] = resource.MustParse("2")
		}},
		{name: "cpu bare integer", valid: true, wire: setQuantity("cpu", 2)},
		{name: "cpu bare zero", valid: true, wire: setQuantity("cpu", 0)},
		{name: "cpu string +1", valid: true, wire: setQuantity("cpu", "+1")},
		{name: "cpu string 1e3", valid: true, wire: setQuantity("cpu", "1e3")},
		{name: "MaxResources resources", valid: true, mutate: manyResources[*bsv1.Grant](bsv1.MaxResources, grantResources)},
		{name: "nodeName of 253 characters", valid: true, mutate: func(g *bsv1.Grant) { g.Spec.NodeName = strings.Repeat("a", 253) }},
		{name: "nodeName with dots and dashes", valid: true, mutate: func(g *bsv1.Grant) { g.Spec.NodeName = "rack-1.node-7" }},
		{name: "phase Revoked", valid: true, mutate: func(g *bsv1.Grant) { g.Status.Phase = bsv1.GrantRevoked }},
		{name: "phase Expired", valid: true, mutate: func(g *bsv1.Grant) { g.Status.Phase = bsv1.GrantExpired }},
		{name: "phase explicitly empty", valid: true, wire: func(m map[string]any) {
			m["status"] = map[string]any{"phase": "", "message": "not yet observed"}
		}},

		{name: "negative zero string", valid: true, wire: setQuantity("cpu", "-0"),
			apiStricter: "a string starting with - is negative unless all its digits are zero, which Go never encodes"},
		{name: "quantity with spaces", valid: true, wire: setQuantity("cpu", " 1 "),
			apiStricter: "Go trims spaces around a quantity; the CRD's quantity pattern does not allow them"},
		{name: "cpu bare fraction", valid: true, wire: setQuantity("cpu", 1.5),
			apiStricter: "a bare quantity must be a JSON integer for the API server (int-or-string); Go decodes any number"},

		{name: "negative cpu string", fields: f("spec.resources"), mutate: cpu("-1")},
		{name: "tiny negative cpu", fields: f("spec.resources"), wire: setQuantity("cpu", "-0.0000000001")},
		{name: "negative fraction without leading digit", fields: f("spec.resources"), wire: setQuantity("cpu", "-.5")},
		{name: "more than MaxResources resources", fields: f("spec.resources"),
			mutate: manyResources[*bsv1.Grant](bsv1.MaxResources+1, grantResources)},
		{name: "negative millicpu string", fields: f("spec.resources"), mutate: cpu("-500m")},
		{name: "negative cpu bare integer", fields: f("spec.resources"), wire: setQuantity("cpu", -1)},
		{name: "negative cpu exponent", fields: f("spec.resources"), wire: setQuantity("cpu", "-1e3")},
		{name: "negative memory string", fields: f("spec.resources"), mutate: func(g *bsv1.Grant) {
			g.Spec.Resources[v1.ResourceMemory] = resource.MustParse("-1Gi")
		}},
		{name: "negative memory bare integer", fields: f("spec.resources"), wire: setQuantity("memory", -1)},
		{name: "negative extended resource", fields: f("spec.resources"), wire: setQuantity("nvidia.com/gpu", "-2")},
		{name: "quantity not a quantity", fields: f("spec.resources"), wire: setQuantity("cpu", "lots")},
		{name: "empty resource name", fields: f("spec.resources"), mutate: func(g *bsv1.Grant) {
			g.Spec.Resources[""] = resource.MustParse("1")
		}},
		{name: "nodeName empty", fields: f("spec.nodeName"), mutate: func(g *bsv1.Grant) { g.Spec.NodeName = "" }},
		{name: "nodeName absent", fields: f("spec.nodeName"), wire: func(m map[string]any) { delete(spec(m), "nodeName") }},
		{name: "nodeName uppercase and underscore", fields: f("spec.nodeName"), mutate: func(g *bsv1.Grant) { g.Spec.NodeName = "Node_1" }},
		{name: "nodeName leading dash", fields: f("spec.nodeName"), mutate: func(g *bsv1.Grant) { g.Spec.NodeName = "-node" }},
		{name: "nodeName empty label", fields: f("spec.nodeName"), mutate: func(g *bsv1.Grant) { g.Spec.NodeName = "node..1" }},
		{name: "nodeName of 254 characters", fields: f("spec.nodeName"), mutate: func(g *bsv1.Grant) { g.Spec.NodeName = strings.Repeat("a", 254) }},
		{name: "framework empty", fields: f("spec.framework"), mutate: func(g *bsv1.Grant) { g.Spec.Framework = "" }},
		{name: "framework absent", fields: f("spec.framework"), wire: func(m map[string]any) { delete(spec(m), "framework") }},
		{name: "issuer empty", fields: f("spec.issuer"), mutate: func(g *bsv1.Grant) { g.Spec.Issuer = "" }},
		{name: "issuer absent", fields: f("spec.issuer"), wire: func(m map[string]any) { delete(spec(m), "issuer") }},
		{name: "expiresAt not a time", fields: f("spec.expiresAt"), wire: func(m map[string]any) { spec(m)["expiresAt"] = "tomorrow" }},
		{name: "phase unknown", fields: f("status.phase"), mutate: func(g *bsv1.Grant) { g.Status.Phase = "Sleeping" }},
		{name: "phase of the other kind", fields: f("status.phase"), mutate: func(g *bsv1.Grant) { g.Status.Phase = "Running" }},
		{name: "several errors", fields: f("spec.nodeName", "spec.issuer"), mutate: func(g *bsv1.Grant) {
			g.Spec.NodeName = ""
			g.Spec.Issuer = ""
		}},
	})
}

func TestExternalWorkloadVerdicts(t *testing.T) {
	runVerdicts(t, workloadKind(), []verdictCase[*bsv1.ExternalWorkload]{
		{name: "valid", valid: true},
		{name: "owner and status empty", valid: true, mutate: func(w *bsv1.ExternalWorkload) {
			w.Spec.Owner = ""
			w.Status = bsv1.ExternalWorkloadStatus{}
		}},
		{name: "resources absent", valid: true, mutate: func(w *bsv1.ExternalWorkload) { w.Spec.Resources = nil }},
		{name: "memory bare integer", valid: true, wire: setQuantity("memory", 1073741824)},
		{name: "phase Pending", valid: true, mutate: func(w *bsv1.ExternalWorkload) { w.Status.Phase = bsv1.ExternalWorkloadPending }},
		{name: "phase Stopped", valid: true, mutate: func(w *bsv1.ExternalWorkload) { w.Status.Phase = bsv1.ExternalWorkloadStopped }},

		{name: "MaxResources resources", valid: true, mutate: manyResources[*bsv1.ExternalWorkload](bsv1.MaxResources, workloadResources)},

		{name: "negative cpu bare integer", fields: f("spec.resources"), wire: setQuantity("cpu", -1)},
		{name: "negative cpu string", fields: f("spec.resources"), wire: setQuantity("cpu", "-1")},
		{name: "more than MaxResources resources", fields: f("spec.resources"),
			mutate: manyResources[*bsv1.ExternalWorkload](bsv1.MaxResources+1, workloadResources)},
		{name: "negative millicpu string", fields: f("spec.resources"), mutate: func(w *bsv1.ExternalWorkload) {
			w.Spec.Resources[v1.ResourceCPU] = resource.MustParse("-500m")
		}},
		{name: "negative memory string", fields: f("spec.resources"), mutate: func(w *bsv1.ExternalWorkload) {
			w.Spec.Resources[v1.ResourceMemory] = resource.MustParse("-1Gi")
		}},
		{name: "empty resource name", fields: f("spec.resources"), mutate: func(w *bsv1.ExternalWorkload) {
			w.Spec.Resources[""] = resource.MustParse("1")
		}},
		{name: "nodeName empty", fields: f("spec.nodeName"), mutate: func(w *bsv1.ExternalWorkload) { w.Spec.NodeName = "" }},
		{name: "nodeName of 254 characters", fields: f("spec.nodeName"), mutate: func(w *bsv1.ExternalWorkload) {
			w.Spec.NodeName = strings.Repeat("a", 254)
		}},
		{name: "nodeName not a DNS subdomain", fields: f("spec.nodeName"), mutate: func(w *bsv1.ExternalWorkload) { w.Spec.NodeName = "node 1" }},
		{name: "workloadKind empty", fields: f("spec.workloadKind"), mutate: func(w *bsv1.ExternalWorkload) { w.Spec.WorkloadKind = "" }},
		{name: "workloadKind absent", fields: f("spec.workloadKind"), wire: func(m map[string]any) { delete(spec(m), "workloadKind") }},
		{name: "phase of the other kind", fields: f("status.phase"), mutate: func(w *bsv1.ExternalWorkload) { w.Status.Phase = "Active" }},
	})
}
