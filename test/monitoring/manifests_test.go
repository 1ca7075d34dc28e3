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

package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	kustomizetypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Paths relative to this package's directory, where go test runs it.
var (
	monitoringDir  = filepath.Join("..", "..", "deploy", "monitoring")
	deploymentPath = filepath.Join("..", "..", "deploy", "deployment.yaml")
)

// namespace is where deploy/ installs the scheduler.
const namespace = "kube-system"

// serviceMonitor is the part of a monitoring.coreos.com/v1 ServiceMonitor
// that deploy/monitoring uses. Decoding is strict, so a field this does
// not know (a typo, or a new field to check here) fails the test.
type serviceMonitor struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		JobLabel          string               `json:"jobLabel,omitempty"`
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector"`
		Endpoints []struct {
			Port            string `json:"port"`
			Path            string `json:"path"`
			Scheme          string `json:"scheme"`
			Interval        string `json:"interval,omitempty"`
			BearerTokenFile string `json:"bearerTokenFile,omitempty"`
			Authorization   *struct {
				Type        string                `json:"type,omitempty"`
				Credentials *v1.SecretKeySelector `json:"credentials"`
			} `json:"authorization,omitempty"`
			TLSConfig *struct {
				InsecureSkipVerify bool `json:"insecureSkipVerify"`
			} `json:"tlsConfig,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// configMapGenerator is kustomize's builtin ConfigMapGenerator, as a
// generator file configures it.
type configMapGenerator struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Files           []string          `json:"files"`
	Options         struct {
		Labels                map[string]string `json:"labels"`
		DisableNameSuffixHash bool              `json:"disableNameSuffixHash"`
	} `json:"options"`
}

// build runs the kustomization of deploy/monitoring once per test binary.
var build = sync.OnceValues(func() ([]*unstructured.Unstructured, error) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), monitoringDir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", monitoringDir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: resource %s: %w", monitoringDir, r.CurId(), err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs, nil
})

// find returns the built object of kind, failing the test unless there
// is exactly one.
func find(t *testing.T, kind string) *unstructured.Unstructured {
	t.Helper()
	objs, err := build()
	if err != nil {
		t.Fatal(err)
	}
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the kustomization in %s builds %d objects of kind %s, want 1", monitoringDir, len(found), kind)
	}
	return found[0]
}

// decodeStrict converts u into out through JSON, rejecting the fields out
// does not have.
func decodeStrict(t *testing.T, u *unstructured.Unstructured, out any) {
	t.Helper()
	raw, err := json.Marshal(u.Object)
	if err != nil {
		t.Fatalf("encoding %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("decoding %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func builtService(t *testing.T) *v1.Service {
	t.Helper()
	var s v1.Service
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(find(t, "Service").Object, &s, true); err != nil {
		t.Fatalf("decoding the Service: %v", err)
	}
	return &s
}

// TestKustomizationListsEveryFile checks that kubectl apply -k installs
// every file of the directory: each is a resource or generator of the
// kustomization, or a file a generator reads.
func TestKustomizationListsEveryFile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(monitoringDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomizetypes.Kustomization
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.Namespace != namespace {
		t.Errorf("kustomization.yaml: namespace %q, want %q, the scheduler's (deploy/kustomization.yaml)", k.Namespace, namespace)
	}
	used := map[string]bool{"kustomization.yaml": true, "README.md": true}
	for _, r := range k.Resources {
		used[r] = true
	}
	for _, g := range k.Generators {
		used[g] = true
		var gen configMapGenerator
		graw, err := os.ReadFile(filepath.Join(monitoringDir, g))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(graw, &gen); err != nil {
			t.Fatalf("generator %s: %v", g, err)
		}
		for _, f := range gen.Files {
			used[f] = true
		}
	}
	entries, err := os.ReadDir(monitoringDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !used[e.Name()] {
			t.Errorf("%s is in %s but the kustomization neither lists nor generates from it", e.Name(), monitoringDir)
		}
	}
}

// TestBuiltObjects checks what kustomize builds: the expected objects, in
// the scheduler's namespace, and the dashboard's ConfigMap as Grafana's
// sidecar wants it.
func TestBuiltObjects(t *testing.T) {
	objs, err := build()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
		if o.GetNamespace() != namespace {
			t.Errorf("%s %s: namespace %q, want %q", o.GetKind(), o.GetName(), o.GetNamespace(), namespace)
		}
	}
	slices.Sort(kinds)
	if want := []string{"ConfigMap", "PrometheusRule", "Service", "ServiceMonitor"}; !slices.Equal(kinds, want) {
		t.Errorf("built kinds %v, want %v", kinds, want)
	}

	var cm v1.ConfigMap
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(find(t, "ConfigMap").Object, &cm, true); err != nil {
		t.Fatalf("decoding the ConfigMap: %v", err)
	}
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap %s: labels %v, want grafana_dashboard=1 (the Grafana sidecar's convention)", cm.Name, cm.Labels)
	}
	if cm.Name != "batch-scheduler-dashboard" {
		t.Errorf("ConfigMap name %q, want batch-scheduler-dashboard without a hash suffix: a new name per change would leave the old dashboard behind", cm.Name)
	}
	dashboard, err := os.ReadFile(filepath.Join(monitoringDir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["dashboard.json"]; got != string(dashboard) {
		t.Errorf("ConfigMap %s: dashboard.json differs from the file (%d bytes, file %d); keys %v", cm.Name, len(got), len(dashboard), slices.Sorted(maps.Keys(cm.Data)))
	}
}

// TestServiceSelectsTheScheduler decodes deploy/deployment.yaml and checks
// that the Service selects the scheduler's pods and targets its HTTPS
// port by name.
func TestServiceSelectsTheScheduler(t *testing.T) {
	raw, err := os.ReadFile(deploymentPath)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(raw, &d); err != nil {
		t.Fatalf("%s: %v", deploymentPath, err)
	}
	svc := builtService(t)
	if svc.Name != jobName {
		t.Errorf("Service name %q, want %q: the alerts and dashboard select job=%q, which the ServiceMonitor takes from the Service's name", svc.Name, jobName, jobName)
	}
	if len(svc.Spec.Selector) == 0 {
		t.Fatal("the Service has no selector")
	}
	podLabels := labels.Set(d.Spec.Template.Labels)
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("Service selector %v does not match the Deployment's pod labels %v", svc.Spec.Selector, podLabels)
	}
	if d.Namespace != "" && d.Namespace != svc.Namespace {
		t.Errorf("Service namespace %q, Deployment's %q", svc.Namespace, d.Namespace)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("Service ports %v, want one", svc.Spec.Ports)
	}
	p := svc.Spec.Ports[0]
	if p.Name != "https" || p.Port != 10259 {
		t.Errorf("Service port %s/%d, want https/10259", p.Name, p.Port)
	}
	var containerPorts []string
	found := false
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, cp := range c.Ports {
			containerPorts = append(containerPorts, fmt.Sprintf("%s:%s/%d", c.Name, cp.Name, cp.ContainerPort))
			if cp.Name == p.TargetPort.String() && cp.ContainerPort == p.Port {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("Service targetPort %q (port %d) is no container port of the Deployment by that name and number; container ports: %v", p.TargetPort.String(), p.Port, containerPorts)
	}
}

// TestServiceMonitor checks that the ServiceMonitor scrapes the Service's
// port over HTTPS with a bearer token, and names the job after the
// Service.
func TestServiceMonitor(t *testing.T) {
	svc := builtService(t)
	var sm serviceMonitor
	decodeStrict(t, find(t, "ServiceMonitor"), &sm)
	if sm.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor apiVersion %q, want monitoring.coreos.com/v1", sm.APIVersion)
	}
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatalf("ServiceMonitor selector: %v", err)
	}
	if sel.Empty() || !sel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("ServiceMonitor selector %q does not select the Service's labels %v", sel, svc.Labels)
	}
	if ns := sm.Spec.NamespaceSelector; !ns.Any && !slices.Contains(ns.MatchNames, svc.Namespace) {
		t.Errorf("ServiceMonitor namespaceSelector %+v leaves out the Service's namespace %s", ns, svc.Namespace)
	}
	if sm.Spec.JobLabel != "" {
		t.Errorf("ServiceMonitor jobLabel %q: the alerts expect the default job label, the Service's name", sm.Spec.JobLabel)
	}
	if len(sm.Spec.Endpoints) == 0 {
		t.Fatal("the ServiceMonitor has no endpoint")
	}
	for i, ep := range sm.Spec.Endpoints {
		if !slices.ContainsFunc(svc.Spec.Ports, func(p v1.ServicePort) bool { return p.Name == ep.Port }) {
			t.Errorf("endpoint %d: port %q is no port name of the Service", i, ep.Port)
		}
		if ep.Path != "/metrics" || ep.Scheme != "https" {
			t.Errorf("endpoint %d: %s %s, want https /metrics (the scheduler serves no plain HTTP)", i, ep.Scheme, ep.Path)
		}
		if ep.BearerTokenFile == "" && (ep.Authorization == nil || ep.Authorization.Credentials == nil) {
			t.Errorf("endpoint %d: no bearer token: /metrics refuses unauthenticated requests", i)
		}
		if ep.TLSConfig == nil || !ep.TLSConfig.InsecureSkipVerify {
			t.Errorf("endpoint %d: tlsConfig %+v: without a CA to verify the scheduler's self-signed certificate, the scrape needs insecureSkipVerify", i, ep.TLSConfig)
		}
	}
}
