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

package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	kustomizetypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// deployDir is deploy/ relative to this package.
var deployDir = filepath.Join("..", "..", "deploy")

// build runs the kustomization in deploy/ once per test binary.
var build = sync.OnceValues(func() ([]*unstructured.Unstructured, error) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), deployDir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", deployDir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: resource %s: %w", deployDir, r.CurId(), err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs, nil
})

// built returns the objects of the kustomization.
func built(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// find returns the built object of kind and name (namespace ignored; the
// kustomization has one namespace), failing the test if there is none.
func find(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	return findIn(t, built(t), kind, name)
}

// findIn returns the object of kind and name among objs (namespace
// ignored), failing the test if there is none.
func findIn(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s among the %d objects", kind, name, len(objs))
	return nil
}

// decode converts u into the typed out, rejecting fields out does not
// have, so a misspelled field in a manifest fails the test.
func decode(t *testing.T, u *unstructured.Unstructured, out any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("decoding %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// TestKustomizationListsEveryManifest checks that every manifest file in
// deploy/ and deploy/crds/ is a resource of the kustomization, so that
// `kubectl apply -k deploy/` installs all of them.
func TestKustomizationListsEveryManifest(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomizetypes.Kustomization
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.Namespace != "kube-system" {
		t.Errorf("kustomization.yaml: namespace = %q, want kube-system (the Lease and the authentication reader binding live there)", k.Namespace)
	}
	var files []string
	for _, pattern := range []string{"*.yaml", "crds/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(deployDir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, err := filepath.Rel(deployDir, f)
			if err != nil {
				t.Fatal(err)
			}
			if rel != "kustomization.yaml" {
				files = append(files, filepath.ToSlash(rel))
			}
		}
	}
	listed := slices.Clone(k.Resources)
	slices.Sort(files)
	slices.Sort(listed)
	if !slices.Equal(files, listed) {
		t.Errorf("kustomization.yaml resources = %v, want the manifest files %v", listed, files)
	}
}

// TestManifestsServerDryRun applies every object of the kustomization to
// the API server with a server-side dry run: the API server validates and
// admits each one (field validation strict) and stores nothing.
func TestManifestsServerDryRun(t *testing.T) {
	objs := built(t)
	if len(objs) == 0 {
		t.Fatal("the kustomization built no objects")
	}
	a := newApplier(t)
	for _, o := range objs {
		if err := a.apply(t.Context(), o, true); err != nil {
			t.Error(err)
		}
	}
}

// applier server-side applies unstructured objects, mapping their kinds
// to resources through discovery.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T) *applier {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{
		dyn:    dyn,
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cp.Client.Discovery())),
	}
}

// resource returns the client for o's kind, in o's namespace if the kind
// is namespaced.
func (a *applier) resource(o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset() // a CRD may have been installed since
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("mapping %s to a resource: %w", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource).Namespace(o.GetNamespace()), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

// apply server-side applies o, only as a dry run if dryRun.
func (a *applier) apply(ctx context.Context, o *unstructured.Unstructured, dryRun bool) error {
	ri, err := a.resource(o)
	if err != nil {
		return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
	}
	data, err := o.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	opts := metav1.PatchOptions{FieldManager: "deploy-test", Force: new(true), FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts); err != nil {
		return fmt.Errorf("applying %s %s/%s (dry run %t): %w", o.GetKind(), o.GetNamespace(), o.GetName(), dryRun, err)
	}
	return nil
}

// applyForReal applies the built objects for which keep returns true, the
// CRDs first, and waits until every CRD applied is Established.
func applyForReal(t *testing.T, keep func(*unstructured.Unstructured) bool) {
	t.Helper()
	applyObjects(t, built(t), keep)
}

// applyObjects applies the objects of objs for which keep returns true, the
// CRDs first, and waits until every CRD applied is Established.
func applyObjects(t *testing.T, objs []*unstructured.Unstructured, keep func(*unstructured.Unstructured) bool) {
	t.Helper()
	a := newApplier(t)
	var crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case !keep(o):
		case o.GetKind() == "CustomResourceDefinition":
			crds = append(crds, o)
		default:
			rest = append(rest, o)
		}
	}
	for _, o := range crds {
		if err := a.apply(t.Context(), o, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range crds {
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := a.dyn.Resource(controlplane.CRDGVR).Get(ctx, o.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not Established: %v", o.GetName(), err)
		}
	}
	for _, o := range rest {
		if err := a.apply(t.Context(), o, false); err != nil {
			t.Fatal(err)
		}
	}
}

// isKind returns a filter for applyForReal that keeps the given kinds.
func isKind(kinds ...string) func(*unstructured.Unstructured) bool {
	return func(o *unstructured.Unstructured) bool { return slices.Contains(kinds, o.GetKind()) }
}

// ignoreNotFound returns nil for a NotFound error and err otherwise.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
