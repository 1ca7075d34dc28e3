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

package kueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// What Kueue's release manifests (config/default) name.
const (
	kueueNamespace      = "kueue-system"
	kueueServiceAccount = "kueue-controller-manager"
	kueueWebhookService = "kueue-webhook-service"
	kueueSecret         = "kueue-webhook-server-cert"
	kueueConfigMap      = "kueue-manager-config"
	kueueConfigKey      = "controller_manager_config.yaml"
)

// kueueProcess is bin/kueue running against the control plane.
type kueueProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
	// stopProjecting stops copying its certificate Secret to its
	// certificate directory.
	stopProjecting context.CancelFunc
	// dir holds its configuration, kubeconfig, certificates and log.
	dir     string
	logPath string
	// readyURL is its health server's /readyz.
	readyURL string
}

// kueueModuleDir returns the directory of the Kueue module that bin/kueue
// is built from (hack/tools/kueue/go.mod), in the Go module cache,
// downloading it if the cache lacks it.
func kueueModuleDir() (string, error) {
	toolDir, err := filepath.Abs(filepath.Join("..", "..", "hack", "tools", "kueue"))
	if err != nil {
		return "", fmt.Errorf("finding hack/tools/kueue: %w", err)
	}
	var mod struct{ Path, Version, Dir, Error string }
	for _, args := range [][]string{{"list", "-mod=readonly", "-m", "-json", "sigs.k8s.io/kueue"}, {"mod", "download", "-json", "sigs.k8s.io/kueue"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = toolDir
		out, err := cmd.Output()
		if err != nil {
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				err = fmt.Errorf("%w: %s", err, exitErr.Stderr)
			}
			return "", fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), toolDir, err)
		}
		if err := json.Unmarshal(out, &mod); err != nil {
			return "", fmt.Errorf("go %s in %s: decoding its output: %w", strings.Join(args, " "), toolDir, err)
		}
		if mod.Dir != "" {
			return mod.Dir, nil
		}
	}
	return "", fmt.Errorf("module sigs.k8s.io/kueue of %s: not in the module cache (%s)", toolDir, mod.Error)
}

// kueueManifests builds Kueue's release manifests: kustomize on
// config/default of the module.
func kueueManifests(moduleDir string) ([]*unstructured.Unstructured, error) {
	dir := filepath.Join(moduleDir, "config", "default")
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: resource %s: %w", dir, r.CurId(), err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs, nil
}

// webhookAddress returns an IPv4 address of this machine that is neither
// loopback nor link-local. The API server reaches Kueue's webhooks through
// kueue-webhook-service, resolved to the address of its EndpointSlice, and
// an EndpointSlice may not hold a loopback address.
func webhookAddress() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("listing the network interfaces: %w", err)
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipNet, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip := ipNet.IP.To4()
			if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || !ip.IsGlobalUnicast() {
				continue
			}
			return ip.String(), nil
		}
	}
	return "", errors.New("no IPv4 address other than loopback and link-local on this machine: the API server reaches Kueue's webhooks through a Service's EndpointSlice, which may not hold a loopback address")
}

// freePort returns a TCP port free on host at the moment.
func freePort(host string) (int, error) { return controlplane.FreePort(host) }

// installKueue creates what Kueue's release manifests hold but the
// Deployment, its ConfigMap and the visibility API (APIServices, their
// Service), with the webhook Service pointed at host:port through an
// EndpointSlice; it waits until the CRDs are served and returns Kueue's
// release configuration (the ConfigMap's file).
func installKueue(ctx context.Context, objs []*unstructured.Unstructured, host string, port int) (map[string]any, error) {
	var release map[string]any
	// first: the Namespace, then the CRDs; others after them.
	var first, others []*unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "Deployment",
			o.GetKind() == "APIService",
			o.GetKind() == "Service" && o.GetName() == "kueue-visibility-server":
			continue
		case o.GetKind() == "ConfigMap" && o.GetName() == kueueConfigMap:
			data, _, _ := unstructured.NestedString(o.Object, "data", kueueConfigKey)
			if err := yaml.Unmarshal([]byte(data), &release); err != nil {
				return nil, fmt.Errorf("ConfigMap %s of Kueue's manifests: decoding %s: %w", kueueConfigMap, kueueConfigKey, err)
			}
			continue
		case o.GetKind() == "Service" && o.GetName() == kueueWebhookService:
			// No pods back it here: its endpoint is the EndpointSlice below.
			unstructured.RemoveNestedField(o.Object, "spec", "selector")
		case o.GetKind() == "CustomResourceDefinition":
			first = append(first, o)
			continue
		case o.GetKind() == "Namespace":
			first = append([]*unstructured.Unstructured{o}, first...)
			continue
		}
		others = append(others, o)
	}
	if release == nil {
		return nil, fmt.Errorf("Kueue's manifests have no ConfigMap %s", kueueConfigMap)
	}
	for _, o := range append(first, others...) {
		if err := createObject(ctx, o); err != nil {
			return nil, err
		}
	}
	for _, crd := range first {
		if crd.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if err := waitEstablished(ctx, crd.GetName()); err != nil {
			return nil, err
		}
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      kueueWebhookService + "-test",
			Namespace: kueueNamespace,
			Labels:    map[string]string{discoveryv1.LabelServiceName: kueueWebhookService, discoveryv1.LabelManagedBy: "test.batch-scheduler.io"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		// The Service's only port is unnamed: 443 -> the webhook server.
		Ports:     []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(int32(port)), Protocol: ptr.To(v1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	if _, err := cp.Client.DiscoveryV1().EndpointSlices(kueueNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating EndpointSlice %s/%s for Kueue's webhook server at %s:%d: %w", kueueNamespace, slice.Name, host, port, err)
	}
	return release, nil
}

// createObject creates o through the dynamic client, its resource found
// by discovery.
func createObject(ctx context.Context, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s %s of Kueue's manifests: finding its resource: %w", gvk.Kind, o.GetName(), err)
	}
	var ri interface {
		Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
	} = dyn.Resource(mapping.Resource)
	if o.GetNamespace() != "" {
		ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
	}
	if _, err := ri.Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s of Kueue's manifests: %w", gvk.Kind, klog.KObj(o), err)
	}
	return nil
}

// waitEstablished waits until the CRD name is Established. Listing its
// resources, as controlplane.WaitCRDServed does, could need Kueue's
// conversion webhook, which is not running yet.
func waitEstablished(ctx context.Context, name string) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(controlplane.CRDGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s never Established: %w", name, err)
	}
	return nil
}

// kueueConfiguration is Kueue's release configuration with what running
// it as a process here needs (docs/testing.md says why for each):
// the webhook server on host:webhookPort with its certificates in
// certDir, health probes on loopback, no metrics endpoint, the batch/v1
// Job integration only, and no visibility API server.
func kueueConfiguration(release map[string]any, host string, webhookPort, healthPort int, certDir string) map[string]any {
	cfg := make(map[string]any, len(release))
	for k, v := range release {
		cfg[k] = v
	}
	cfg["namespace"] = kueueNamespace
	// In a pod, the Lease's namespace would be the pod's.
	le, _ := cfg["leaderElection"].(map[string]any)
	if le == nil {
		le = map[string]any{}
	}
	le["resourceNamespace"] = kueueNamespace
	cfg["leaderElection"] = le
	cfg["webhook"] = map[string]any{"host": host, "port": webhookPort, "certDir": certDir}
	cfg["health"] = map[string]any{"healthProbeBindAddress": fmt.Sprintf("127.0.0.1:%d", healthPort)}
	cfg["metrics"] = map[string]any{"bindAddress": "0"}
	cfg["integrations"] = map[string]any{"frameworks": []string{"batch/job"}}
	gates, _ := cfg["featureGates"].(map[string]any)
	if gates == nil {
		gates = map[string]any{}
	}
	gates["VisibilityOnDemand"] = false
	cfg["featureGates"] = gates
	return cfg
}

// kueueKubeconfig writes a kubeconfig of Kueue's ServiceAccount (a token
// from the TokenRequest API), so that Kueue works with the permissions
// its release grants it.
func kueueKubeconfig(ctx context.Context, path string) error {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}
	tr, err := cp.Client.CoreV1().ServiceAccounts(kueueNamespace).CreateToken(ctx, kueueServiceAccount, tr, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", kueueNamespace, kueueServiceAccount, err)
	}
	cfg := &rest.Config{Host: cp.Config.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cp.Config.CAData}}
	return controlplane.WriteKubeconfig(cfg, path)
}

// startKueue installs Kueue and runs bin/kueue until stop; it returns once
// Kueue's /readyz answers (its certificates are made and its webhook
// server listens).
func startKueue(ctx context.Context) (*kueueProcess, error) {
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(assets, "kueue")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("Kueue's manager %s missing (build it with 'make control-plane'): %w", bin, err)
	}
	begin := time.Now()
	moduleDir, err := kueueModuleDir()
	if err != nil {
		return nil, err
	}
	objs, err := kueueManifests(moduleDir)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Built Kueue's release manifests", "dir", filepath.Join(moduleDir, "config", "default"), "objects", len(objs), "after", time.Since(begin).Round(time.Millisecond))
	host, err := webhookAddress()
	if err != nil {
		return nil, err
	}
	webhookPort, err := freePort(host)
	if err != nil {
		return nil, err
	}
	healthPort, err := freePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	begin = time.Now()
	release, err := installKueue(ctx, objs, host, webhookPort)
	if err != nil {
		return nil, err
	}
	klog.InfoS("Installed Kueue's manifests", "after", time.Since(begin).Round(time.Millisecond))
	dir, err := os.MkdirTemp("", "batch-scheduler-kueue-")
	if err != nil {
		return nil, fmt.Errorf("creating Kueue's directory: %w", err)
	}
	certDir := filepath.Join(dir, "certs")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating Kueue's certificate directory: %w", err)
	}
	cfgData, err := yaml.Marshal(kueueConfiguration(release, host, webhookPort, healthPort, certDir))
	if err != nil {
		return nil, fmt.Errorf("encoding Kueue's configuration: %w", err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, cfgData, 0o600); err != nil {
		return nil, fmt.Errorf("writing Kueue's configuration: %w", err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := kueueKubeconfig(ctx, kubeconfig); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "kueue.log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating Kueue's log: %w", err)
	}
	// The Deployment mounts the Secret Kueue writes its certificates to at
	// the webhook server's certificate directory; here the test is the
	// kubelet that keeps the directory up to date.
	projectCtx, stopProjecting := context.WithCancel(context.Background())
	go projectSecret(projectCtx, kueueNamespace, kueueSecret, certDir)
	// The release runs it with --zap-log-level=2.
	cmd := exec.Command(bin, "--config="+cfgPath, "--zap-log-level=2")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		stopProjecting()
		_ = out.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	k := &kueueProcess{cmd: cmd, exited: make(chan struct{}), stopProjecting: stopProjecting, dir: dir, logPath: logPath,
		readyURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)}
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(k.exited)
	}()
	klog.InfoS("Started Kueue", "pid", cmd.Process.Pid, "webhook", net.JoinHostPort(host, fmt.Sprint(webhookPort)), "log", logPath)
	started := time.Now()
	if err := k.waitReady(ctx); err != nil {
		k.stop()
		return nil, err
	}
	klog.InfoS("Kueue is ready", "after", time.Since(started).Round(time.Millisecond))
	return k, nil
}

// waitReady polls Kueue's /readyz until it answers 200.
func (k *kueueProcess) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-k.exited:
			return false, fmt.Errorf("Kueue exited while starting; its log %s ends with:\n%s", k.logPath, controlplane.Tail(k.logPath, 30))
		default:
		}
		resp, err := client.Get(k.readyURL)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for Kueue's %s: %w", k.readyURL, err)
	}
	return nil
}

// running reports whether the process is still there.
func (k *kueueProcess) running() bool {
	select {
	case <-k.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, then SIGKILL after 10 s.
func (k *kueueProcess) stop() {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
	k.stopProjecting()
}

// projectSecret copies each key of Secret ns/name to a file of that name
// in dir whenever it changes, as the kubelet does for a Secret volume,
// until ctx ends. Kueue's certificate rotator writes the Secret and waits
// for the files.
func projectSecret(ctx context.Context, ns, name, dir string) {
	written := map[string]string{}
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		secret, err := cp.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for key, data := range secret.Data {
			if written[key] == string(data) {
				continue
			}
			path := filepath.Join(dir, key)
			if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
				klog.ErrorS(err, "Writing a key of Kueue's certificate Secret", "secret", klog.KRef(ns, name), "key", key)
				continue
			}
			if err := os.Rename(path+".tmp", path); err != nil {
				klog.ErrorS(err, "Writing a key of Kueue's certificate Secret", "secret", klog.KRef(ns, name), "key", key)
				continue
			}
			written[key] = string(data)
			klog.V(2).InfoS("Projected a key of Kueue's certificate Secret", "secret", klog.KRef(ns, name), "key", key, "path", path)
		}
		return false, nil
	})
}
