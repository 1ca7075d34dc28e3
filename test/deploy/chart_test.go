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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// chartDir is charts/batch-scheduler relative to this package.
var chartDir = filepath.Join("..", "..", "charts", "batch-scheduler")

// chartKubeVersion is the Kubernetes version the chart is rendered for:
// the test control plane's.
const chartKubeVersion = "1.37.1"

// valueSet is one way of configuring the chart.
type valueSet struct {
	name      string
	namespace string
	// set are helm --set arguments.
	set []string
}

// valueSets are the configurations the tests lint, render and apply:
// the defaults, a release in its own namespace with every optional object,
// a single replica without leader election, and one without the
// external-workloads informer and with a pinned image.
var valueSets = []valueSet{
	{name: "defaults", namespace: "kube-system"},
	{name: "own-namespace-monitoring", namespace: "batch-system", set: []string{
		"monitoring.serviceMonitor.enabled=true", "monitoring.prometheusRule.enabled=true",
		"monitoring.grafanaDashboard.enabled=true", "monitoring.clusterRole.debug=true",
		"monitoring.scrapers[0].namespace=monitoring", "monitoring.scrapers[0].name=prometheus",
		"nodeSelector.node-role\\.kubernetes\\.io/control-plane=",
		"tolerations[0].key=node-role.kubernetes.io/control-plane", "tolerations[0].effect=NoSchedule",
	}},
	{name: "single-replica", namespace: "scheduling", set: []string{
		"replicas=1", "leaderElection.enabled=false", "podDisruptionBudget.enabled=false", "logLevel=4",
		"extraArgs[0]=--profiling=false",
	}},
	{name: "no-external-workloads", namespace: "batch-system", set: []string{
		"externalWorkloads.enabled=false", "image.digest=sha256:" + strings.Repeat("ab", 32),
		"resources.requests.memory=2Gi", "resources.limits.memory=3Gi",
		"rbac.extraRules[0].apiGroups[0]=example.com", "rbac.extraRules[0].resources[0]=widgets",
		"rbac.extraRules[0].verbs[0]=list", "rbac.extraRules[0].verbs[1]=watch",
	}},
}

// helm runs bin/helm with args and returns its standard output.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	assets, err := controlplane.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(assets, "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm: %v (make control-plane builds it)", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// setArgs turns vs into helm arguments.
func (vs valueSet) setArgs() []string {
	var args []string
	for _, s := range vs.set {
		args = append(args, "--set", s)
	}
	return args
}

// render renders the chart as release "bs" with vs, CRDs included, and
// decodes the objects.
func render(t *testing.T, vs valueSet) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", "bs", chartDir, "--namespace", vs.namespace, "--include-crds", "--kube-version", chartKubeVersion}, vs.setArgs()...)
	objs, err := decodeObjects(helm(t, args...))
	if err != nil {
		t.Fatalf("values %s: %v", vs.name, err)
	}
	return objs
}

// decodeObjects splits a multi-document YAML stream into objects,
// skipping empty documents.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		var m map[string]any
		if err := d.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// TestChartLint runs helm lint --strict for every value set.
func TestChartLint(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			args := append([]string{"lint", chartDir, "--strict", "--namespace", vs.namespace, "--kube-version", chartKubeVersion}, vs.setArgs()...)
			out := helm(t, args...)
			if !bytes.Contains(out, []byte("0 chart(s) failed")) {
				t.Errorf("helm lint:\n%s", out)
			}
		})
	}
}

// TestChartRefusesTwoLeaderlessReplicas: two replicas without leader
// election would both schedule; the chart refuses to render them.
func TestChartRefusesTwoLeaderlessReplicas(t *testing.T) {
	assets, err := controlplane.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), filepath.Join(assets, "helm"), "template", "bs", chartDir,
		"--kube-version", chartKubeVersion, "--set", "replicas=2", "--set", "leaderElection.enabled=false").CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("needs leaderElection.enabled")) {
		t.Errorf("helm template with 2 replicas and no leader election: err %v, output:\n%s", err, out)
	}
}

// TestChartServerDryRun renders every value set and applies each object
// with a server-side dry run (strict field validation), after creating
// the release's namespace. The Prometheus Operator's kinds are checked
// only for being well formed: their CRDs are not installed here.
func TestChartServerDryRun(t *testing.T) {
	a := newApplier(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			ensureNamespace(t, vs.namespace)
			objs := render(t, vs)
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.GetKind()]++
				ns := o.GetNamespace()
				switch {
				case o.GetKind() == "RoleBinding" && strings.HasSuffix(o.GetName(), "-authentication-reader"):
					if ns != "kube-system" {
						t.Errorf("RoleBinding %s is in %q; it must be in kube-system, beside the Role it binds", o.GetName(), ns)
					}
				case isClusterScoped(o.GetKind()):
					if ns != "" {
						t.Errorf("%s %s has namespace %q", o.GetKind(), o.GetName(), ns)
					}
				case ns != vs.namespace:
					t.Errorf("%s %s is in namespace %q, not the release's %q", o.GetKind(), o.GetName(), ns, vs.namespace)
				}
				if o.GetAPIVersion() == "monitoring.coreos.com/v1" {
					continue
				}
				if err := a.apply(t.Context(), o, true); err != nil {
					t.Error(err)
				}
			}
			for _, k := range []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment"} {
				if kinds[k] == 0 {
					t.Errorf("values %s rendered no %s", vs.name, k)
				}
			}
			var d appsv1.Deployment
			decode(t, findIn(t, objs, "Deployment", "bs-batch-scheduler"), &d)
			c := schedulerContainer(t, &d)
			if cfg, ok := argValue(c.Args, "--config-path"); !ok || cfg != "/etc/batch-scheduler/config.yaml" {
				t.Errorf("--config-path = %q", cfg)
			}
			var cm v1.ConfigMap
			decode(t, findIn(t, objs, "ConfigMap", "bs-batch-scheduler-config"), &cm)
			if _, err := config.Parse("config.yaml of values "+vs.name, []byte(cm.Data["config.yaml"])); err != nil {
				t.Errorf("values %s: the rendered config.yaml does not load: %v", vs.name, err)
			}
		})
	}
}

// isClusterScoped reports whether the chart's objects of kind are
// cluster-scoped.
func isClusterScoped(kind string) bool {
	return slices.Contains([]string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}, kind)
}

// ensureNamespace creates namespace ns unless it exists.
func ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	_, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}

// TestChartRBACMatchesDeploy: the chart grants its ServiceAccount exactly
// what deploy/ grants (the permission table of rbac_test.go), with the
// Lease in the release's namespace, and nothing without a value asking
// for it.
func TestChartRBACMatchesDeploy(t *testing.T) {
	const ns = "batch-system"
	perms, bindings := grantedIn(t, render(t, valueSet{name: "rbac", namespace: ns}), ns, "bs-batch-scheduler")
	var got []permission
	for _, p := range perms {
		if p.Namespace == ns {
			p.Namespace = "kube-system" // where deploy/ keeps the Lease
		}
		got = append(got, p)
	}
	comparePermissionSets(t, got, needed, "the chart does not grant %s", "the chart grants %s, which the code does not need")
	if len(bindings) != 3 {
		t.Errorf("the chart binds its ServiceAccount %d times, want 3 (cluster role, lease role, authentication reader): %+v", len(bindings), bindings)
	}
}

// TestChartCRDsMatchDeploy: the chart's crds/ are the generated CRDs of
// deploy/crds (make generate copies them).
func TestChartCRDsMatchDeploy(t *testing.T) {
	want, err := filepath.Glob(filepath.Join(deployDir, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if !slices.Equal(base(want), base(got)) {
		t.Fatalf("charts/batch-scheduler/crds has %v, deploy/crds has %v (run make generate)", base(got), base(want))
	}
	for _, p := range want {
		a, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(p)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("charts/batch-scheduler/crds/%s differs from deploy/crds (run make generate)", filepath.Base(p))
		}
	}
}

// TestSchedulerRunsFromChart runs the scheduler as the chart's Deployment
// runs it, in a namespace of its own, as the chart's ServiceAccount: it
// takes the chart's Lease there and schedules.
func TestSchedulerRunsFromChart(t *testing.T) {
	const ns = "batch-chart"
	ensureNamespace(t, ns)
	runAsDeployed(t, installation{
		objs: render(t, valueSet{name: "run", namespace: ns}), namespace: ns, serviceAccount: "bs-batch-scheduler",
		deployment: "bs-batch-scheduler", configMap: "bs-batch-scheduler-config",
		lease: ns + "/batch-scheduler", prefix: "chart-run",
	})
}

// TestChartMonitoring: the chart's alerts and dashboard are those of
// deploy/monitoring (copies in files/), and its ServiceMonitor gives the
// scraped series the job label the alerts select on, whatever the
// release's name.
func TestChartMonitoring(t *testing.T) {
	for _, f := range []string{"prometheusrule.yaml", "dashboard.json"} {
		want, err := os.ReadFile(filepath.Join(deployDir, "monitoring", f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "files", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("charts/batch-scheduler/files/%s differs from deploy/monitoring/%s: copy it over", f, f)
		}
	}

	objs := render(t, valueSets[1]) // every monitoring object on
	svc := findIn(t, objs, "Service", "bs-batch-scheduler-metrics")
	sm := findIn(t, objs, "ServiceMonitor", "bs-batch-scheduler")
	jobLabel, _, _ := unstructured.NestedString(sm.Object, "spec", "jobLabel")
	if job := svc.GetLabels()[jobLabel]; job != "batch-scheduler-metrics" {
		t.Errorf("the ServiceMonitor's jobLabel %q gives the Service's series job %q, want batch-scheduler-metrics (what the alerts select)", jobLabel, job)
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service does not carry", k, v)
		}
	}
	if port, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints"); len(port) != 1 || port[0].(map[string]any)["port"] != "https" {
		t.Errorf("ServiceMonitor endpoints = %v, want the https port", port)
	}

	var deployRule map[string]any
	data, err := os.ReadFile(filepath.Join(deployDir, "monitoring", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &deployRule); err != nil {
		t.Fatal(err)
	}
	rule := findIn(t, objs, "PrometheusRule", "bs-batch-scheduler")
	got, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	want, _, _ := unstructured.NestedSlice(deployRule, "spec", "groups")
	if len(want) == 0 || !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("the chart's PrometheusRule groups differ from deploy/monitoring's (%d groups there)", len(want))
	}

	var cm v1.ConfigMap
	decode(t, findIn(t, objs, "ConfigMap", "bs-batch-scheduler-dashboard"), &cm)
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels = %v, want grafana_dashboard=1", cm.Labels)
	}
	var dashboard map[string]any
	if err := json.Unmarshal([]byte(cm.Data["batch-scheduler.json"]), &dashboard); err != nil || dashboard["panels"] == nil {
		t.Errorf("the dashboard ConfigMap does not hold a dashboard: %v", err)
	}
}
