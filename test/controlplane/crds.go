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

package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// CRDGVR is the resource of CustomResourceDefinitions.
var CRDGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdServedTimeout bounds the wait for a new CRD's resource to be served.
// Operators' CRDs carry large schemas, and on a loaded 2-core machine the
// API server was seen to take over 30 s to serve them.
const crdServedTimeout = 2 * time.Minute

// InstallCRDFile creates the CRD in file (YAML), tolerating one already
// there, and waits until it is served (WaitCRDServed).
func InstallCRDFile(ctx context.Context, dyn dynamic.Interface, file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading CRD %s: %w", file, err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
		return fmt.Errorf("decoding CRD %s: %w", file, err)
	}
	if err := InstallCRD(ctx, dyn, obj); err != nil {
		return fmt.Errorf("%w (from %s)", err, file)
	}
	return nil
}

// InstallCRD creates crd, tolerating one already there (which is not
// changed), and waits until it is served (WaitCRDServed).
func InstallCRD(ctx context.Context, dyn dynamic.Interface, crd *unstructured.Unstructured) error {
	if _, err := dyn.Resource(CRDGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
	}
	return WaitCRDServed(ctx, dyn, crd)
}

// WaitCRDServed waits until every version crd serves can be listed (then
// the CRD is Established and discovery shows it).
func WaitCRDServed(ctx context.Context, dyn dynamic.Interface, crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var served []schema.GroupVersionResource
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _ := m["name"].(string); name != "" && m["served"] == true {
			served = append(served, schema.GroupVersionResource{Group: group, Version: name, Resource: plural})
		}
	}
	if len(served) == 0 {
		return fmt.Errorf("CRD %s serves no version", crd.GetName())
	}
	for _, gvr := range served {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, crdServedTimeout, true, func(ctx context.Context) (bool, error) {
			if scope == "Namespaced" {
				_, last = dyn.Resource(gvr).Namespace(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{Limit: 1})
			} else {
				_, last = dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			}
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s: %s never served (a CRD of that name already there, with other versions?): %w", crd.GetName(), gvr, errors.Join(err, last))
		}
	}
	return nil
}
