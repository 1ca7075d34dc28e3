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
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
)

// securePort is the port of the scheduler's HTTPS server in the
// Deployment, kube-scheduler's.
const securePort = 10259

// deployment returns the built Deployment.
func deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	decode(t, find(t, "Deployment", "batch-scheduler"), &d)
	return &d
}

// schedulerContainer returns the scheduler's container of d.
func schedulerContainer(t *testing.T, d *appsv1.Deployment) *v1.Container {
	t.Helper()
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == "batch-scheduler" {
			return c
		}
	}
	t.Fatal("the Deployment has no container batch-scheduler")
	return nil
}

// argValue returns the value of --name=value in args.
func argValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// configMapMount returns where container c of d mounts the ConfigMap
// named cm.
func configMapMount(t *testing.T, d *appsv1.Deployment, c *v1.Container, cm string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm {
				return m.MountPath
			}
		}
	}
	t.Fatalf("ConfigMap %s is not mounted in container %s", cm, c.Name)
	return ""
}

// TestDeploymentSpec checks what the Pod Security Standard does not: the
// read-only root filesystem and the one writable directory, resources,
// the probes on the secure port, and the replicas that the disruption
// budget protects.
func TestDeploymentSpec(t *testing.T) {
	d := deployment(t)
	spec := d.Spec.Template.Spec
	c := schedulerContainer(t, d)

	if got := ptr.Deref(d.Spec.Replicas, 1); got != 2 {
		t.Errorf("replicas = %d, want 2", got)
	}
	if !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("args %q: want --leader-elect=true with two replicas", c.Args)
	}
	if sc := c.SecurityContext; sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
		t.Error("the container's root filesystem is not read-only")
	}
	if sc := spec.SecurityContext; sc == nil || ptr.Deref(sc.RunAsUser, 0) == 0 || ptr.Deref(sc.RunAsGroup, 0) == 0 {
		t.Error("the pod has no numeric, non-zero runAsUser and runAsGroup")
	}

	// Serving: HTTPS on the secure port, no plain HTTP listener, and the
	// self-signed certificate written to an emptyDir.
	if port, ok := argValue(c.Args, "--secure-port"); !ok || port != fmt.Sprint(securePort) {
		t.Errorf("args %q: want --secure-port=%d", c.Args, securePort)
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--listen-address") {
			t.Errorf("args %q: %s would serve plain HTTP", c.Args, a)
		}
	}
	certDir, ok := argValue(c.Args, "--cert-dir")
	if !ok {
		t.Errorf("args %q: no --cert-dir; the root filesystem is read-only", c.Args)
	}
	emptyDirs := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			emptyDirs[v.Name] = true
		}
	}
	var certMounted bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == certDir && emptyDirs[m.Name] && !m.ReadOnly {
			certMounted = true
		}
	}
	if !certMounted {
		t.Errorf("--cert-dir=%s is not a writable emptyDir mount", certDir)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != securePort {
		t.Errorf("ports = %v, want only %d", c.Ports, securePort)
	}

	probes := []struct {
		name  string
		probe *v1.Probe
		paths []string
	}{
		{"startupProbe", c.StartupProbe, []string{"/livez", "/healthz"}},
		{"livenessProbe", c.LivenessProbe, []string{"/livez", "/healthz"}},
		{"readinessProbe", c.ReadinessProbe, []string{"/readyz"}},
	}
	for _, p := range probes {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: want an httpGet probe", p.name)
			continue
		}
		g := p.probe.HTTPGet
		port := g.Port
		if port.Type == intstr.String {
			for _, named := range c.Ports {
				if named.Name == port.StrVal {
					port = intstr.FromInt32(named.ContainerPort)
				}
			}
		}
		if g.Scheme != v1.URISchemeHTTPS || port.IntValue() != securePort || !slices.Contains(p.paths, g.Path) {
			t.Errorf("%s: %s %s port %s, want HTTPS on %d, path one of %v", p.name, g.Scheme, g.Path, g.Port.String(), securePort, p.paths)
		}
	}

	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
	}
	if _, ok := c.Resources.Limits[v1.ResourceMemory]; !ok {
		t.Error("no memory limit")
	}

	var pdb policyv1.PodDisruptionBudget
	decode(t, find(t, "PodDisruptionBudget", "batch-scheduler"), &pdb)
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		t.Fatalf("PodDisruptionBudget selector: %v", err)
	}
	if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("the PodDisruptionBudget selector %s does not select the Deployment's pods %v", sel, d.Spec.Template.Labels)
	}
	minOK := pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.IntValue() == 1
	maxOK := pdb.Spec.MaxUnavailable != nil && pdb.Spec.MaxUnavailable.IntValue() == 1
	if !minOK && !maxOK {
		t.Errorf("PodDisruptionBudget: want minAvailable 1 or maxUnavailable 1 for 2 replicas, got %+v", pdb.Spec)
	}
}

// TestConfigMap checks that the configuration in the ConfigMap loads, and
// that the kubeconfig of its custom informer reaches the API server as
// the pod's ServiceAccount.
func TestConfigMap(t *testing.T) {
	var cm v1.ConfigMap
	decode(t, find(t, "ConfigMap", "batch-scheduler-config"), &cm)
	d := deployment(t)
	c := schedulerContainer(t, d)
	configPath, ok := argValue(c.Args, "--config-path")
	if !ok {
		t.Fatalf("args %q: no --config-path", c.Args)
	}
	mountDir := configMapMount(t, d, c, cm.Name)
	key, ok := strings.CutPrefix(configPath, mountDir+"/")
	if !ok || cm.Data[key] == "" {
		t.Fatalf("--config-path=%s is not a key of ConfigMap %s mounted at %s", configPath, cm.Name, mountDir)
	}

	f, err := config.Parse(configPath, []byte(cm.Data[key]))
	if err != nil {
		t.Fatalf("ConfigMap %s, %s: %v", cm.Name, key, err)
	}
	// rbac.yaml grants list and watch on ExternalWorkloads for this
	// informer.
	var inCluster int
	for _, ci := range f.CustomInformers() {
		if ci.SourceType != "kubeconfig" {
			continue
		}
		if ci.Resource == "ExternalWorkload" {
			inCluster++
		}
		var args custominformer.KubeconfigArgs
		if err := config.DecodeStrict(configapi.ReaderOf(ci.SourceArgs), &args); err != nil {
			t.Fatalf("custom informer %s: %v", ci.Name, err)
		}
		kcKey, ok := strings.CutPrefix(args.Kubeconfig, mountDir+"/")
		if !ok || cm.Data[kcKey] == "" {
			t.Fatalf("custom informer %s: kubeconfig %s is not a key of the ConfigMap", ci.Name, args.Kubeconfig)
		}
		kc, err := clientcmd.Load([]byte(cm.Data[kcKey]))
		if err != nil {
			t.Fatalf("%s: %v", kcKey, err)
		}
		kctx := kc.Contexts[kc.CurrentContext]
		if kctx == nil || kc.Clusters[kctx.Cluster] == nil || kc.AuthInfos[kctx.AuthInfo] == nil {
			t.Fatalf("%s: current context %q is missing or incomplete", kcKey, kc.CurrentContext)
		}
		cluster, user := kc.Clusters[kctx.Cluster], kc.AuthInfos[kctx.AuthInfo]
		if cluster.Server != inClusterServer || cluster.CertificateAuthority != podSADir+"/ca.crt" || user.TokenFile != podSADir+"/token" {
			t.Errorf("%s: server %s, CA %s, token file %s; want the in-cluster API server with the pod's ServiceAccount token",
				kcKey, cluster.Server, cluster.CertificateAuthority, user.TokenFile)
		}
	}
	if inCluster != 1 {
		t.Errorf("%s has %d ExternalWorkload custom informers with a kubeconfig source, want 1", key, inCluster)
	}
}

// TestPodSecurityRestricted creates (as a dry run) a pod from the
// Deployment's template in a namespace enforcing the "restricted" Pod
// Security Standard; it must be admitted. Pods with parts of its security
// context removed must be rejected for those parts, which shows that the
// API server enforces the standard here.
func TestPodSecurityRestricted(t *testing.T) {
	ctx := t.Context()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "pod-security-restricted",
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		},
	}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			t.Error(err)
		}
	})

	d := deployment(t)
	podFrom := func(mutate func(*v1.PodSpec)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: *d.Spec.Template.ObjectMeta.DeepCopy(), Spec: *d.Spec.Template.Spec.DeepCopy()}
		p.Name, p.Namespace = "batch-scheduler", ns.Name
		if mutate != nil {
			mutate(&p.Spec)
		}
		return p
	}
	create := func(p *v1.Pod) error {
		_, err := cp.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}

	if err := create(podFrom(nil)); err != nil {
		t.Fatalf("the Deployment's pod is not admitted under the restricted Pod Security Standard: %v", err)
	}

	containerSC := func(f func(*v1.SecurityContext)) func(*v1.PodSpec) {
		return func(s *v1.PodSpec) {
			for i := range s.Containers {
				f(s.Containers[i].SecurityContext)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1.PodSpec)
		want   []string // in the rejection's message
	}{
		{
			name: "no security context",
			mutate: func(s *v1.PodSpec) {
				s.SecurityContext = nil
				for i := range s.Containers {
					s.Containers[i].SecurityContext = nil
				}
			},
			want: []string{"allowPrivilegeEscalation != false", "unrestricted capabilities", "runAsNonRoot != true", "seccompProfile"},
		},
		{
			name:   "privilege escalation allowed",
			mutate: containerSC(func(sc *v1.SecurityContext) { sc.AllowPrivilegeEscalation = nil }),
			want:   []string{"allowPrivilegeEscalation != false"},
		},
		{
			name:   "capabilities kept",
			mutate: containerSC(func(sc *v1.SecurityContext) { sc.Capabilities = nil }),
			want:   []string{"unrestricted capabilities"},
		},
		{
			name: "root",
			mutate: func(s *v1.PodSpec) {
				s.SecurityContext.RunAsNonRoot = nil
				s.SecurityContext.RunAsUser = ptr.To[int64](0)
			},
			want: []string{"runAsNonRoot != true", "runAsUser=0"},
		},
		{
			name:   "no seccomp profile",
			mutate: func(s *v1.PodSpec) { s.SecurityContext.SeccompProfile = nil },
			want:   []string{"seccompProfile"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := create(podFrom(tc.mutate))
			if !apierrors.IsForbidden(err) {
				t.Fatalf("got %v, want a Forbidden rejection by PodSecurity", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("rejection %q does not mention %q", err, w)
				}
			}
		})
	}
}
