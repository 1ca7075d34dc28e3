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

// Package controlplane runs a real etcd and kube-apiserver for end-to-end
// tests and the demo. The binaries are built from Go modules into bin/ by
// hack/build-control-plane.sh (make control-plane); controller-runtime's
// envtest starts and stops them.
//
// Beside them run kube-controller-manager (DefaultControllers: Jobs create
// pods, the garbage collector removes orphans, PodDisruptionBudgets get
// their status, deleted namespaces are emptied) and KWOK, whose simulated
// kubelets run the pods bound to the nodes it manages (CreateKwokNode; the
// stages are in kwok.yaml). Nodes created with CreateNode are plain API
// objects whose status the caller sets, and their pods never run. The
// TaintNodesByCondition admission plugin is disabled so that new nodes are
// not tainted not-ready. WithoutCluster starts the API server alone.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running etcd + kube-apiserver pair.
type ControlPlane struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a clientset for Config.
	Client kubernetes.Interface
	// Dir is a temporary directory removed by Stop; KubeconfigPath is in it.
	Dir            string
	KubeconfigPath string

	env      *envtest.Environment
	stopOnce sync.Once
	stopErr  error

	// apiMu guards api, the kube-apiserver process (see restart.go).
	apiMu sync.Mutex
	api   apiServerProcess

	// procs are kube-controller-manager and KWOK (see cluster.go); set by
	// Start, cleared by Stop.
	procs []*process
}

// AssetsDir returns where the binaries are: $KUBEBUILDER_ASSETS if set,
// else bin/ at the root of this repository (found by walking up from the
// working directory to the go.mod of this module).
func AssetsDir() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/batch-scheduler/batch-scheduler\n") {
			return filepath.Join(dir, "bin"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding the repository root: no go.mod of github.com/batch-scheduler/batch-scheduler above the working directory; set KUBEBUILDER_ASSETS")
		}
		dir = parent
	}
}

// Option configures Start.
type Option func(*startOptions)

type startOptions struct {
	featureGates  []string
	runtimeConfig []string
	flags         map[string][]string
	// noCluster, noKWOK, controllers and nodeGrace: see cluster.go.
	noCluster   bool
	noKWOK      bool
	controllers []string
	nodeGrace   time.Duration
}

// WithAPIServerFlag sets a flag of kube-apiserver, e.g. "watch-cache",
// "false".
func WithAPIServerFlag(name string, values ...string) Option {
	return func(o *startOptions) {
		if o.flags == nil {
			o.flags = map[string][]string{}
		}
		o.flags[name] = values
	}
}

// WithFeatureGates enables feature gates of kube-apiserver, e.g.
// "GenericWorkload=true".
func WithFeatureGates(gates ...string) Option {
	return func(o *startOptions) { o.featureGates = append(o.featureGates, gates...) }
}

// WithRuntimeConfig serves API versions that are off by default, e.g.
// "scheduling.k8s.io/v1beta1=true".
func WithRuntimeConfig(entries ...string) Option {
	return func(o *startOptions) { o.runtimeConfig = append(o.runtimeConfig, entries...) }
}

// Start starts etcd and kube-apiserver on free loopback ports with their
// data in a fresh temporary directory, and writes an admin kubeconfig.
func Start(opts ...Option) (*ControlPlane, error) {
	var o startOptions
	for _, opt := range opts {
		opt(&o)
	}
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	bins := []string{"etcd", "kube-apiserver"}
	if !o.noCluster {
		bins = append(bins, "kube-controller-manager")
		if !o.noKWOK {
			bins = append(bins, "kwok")
		}
	}
	for _, bin := range bins {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("control plane binary %s missing in %s (build it with 'make control-plane'): %w", bin, assets, err)
		}
	}
	dir, err := os.MkdirTemp("", "batch-scheduler-cp-")
	if err != nil {
		return nil, fmt.Errorf("creating the control plane directory: %w", err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	api := env.ControlPlane.GetAPIServer()
	// Nodes here have no kubelet; without this they would be tainted
	// not-ready at creation.
	api.Configure().Set("disable-admission-plugins", "ServiceAccount", "TaintNodesByCondition")
	if len(o.featureGates) > 0 {
		api.Configure().Set("feature-gates", strings.Join(o.featureGates, ","))
	}
	if len(o.runtimeConfig) > 0 {
		api.Configure().Set("runtime-config", strings.Join(o.runtimeConfig, ","))
	}
	for name, values := range o.flags {
		api.Configure().Set(name, values...)
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", assets, err)
	}
	cp := &ControlPlane{Config: cfg, Dir: dir, env: env, KubeconfigPath: filepath.Join(dir, "kubeconfig")}
	if err := WriteKubeconfig(cfg, cp.KubeconfigPath); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	if cp.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		_ = cp.Stop()
		return nil, fmt.Errorf("creating a client for the control plane: %w", err)
	}
	if !o.noCluster {
		if err := cp.startCluster(assets, &o); err != nil {
			_ = cp.Stop()
			return nil, err
		}
	}
	return cp, nil
}

// Stop stops both processes and removes the temporary directory. It is
// safe to call more than once and from a signal handler.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		cp.stopCluster()
		// A kube-apiserver started by RestartAPIServer is not envtest's.
		_ = cp.stopRestartedAPIServer()
		cp.stopErr = cp.env.Stop()
		if err := os.RemoveAll(cp.Dir); err != nil && cp.stopErr == nil {
			cp.stopErr = err
		}
	})
	return cp.stopErr
}

// StopOnSignal stops the control plane when the process gets SIGINT or
// SIGTERM, then exits with code 130, so that an interrupted test run or
// demo leaves no processes behind. The returned function removes the
// handler.
func (cp *ControlPlane) StopOnSignal() (cancel func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			fmt.Fprintf(os.Stderr, "received %s: stopping the control plane\n", sig)
			_ = cp.Stop()
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// WriteKubeconfig writes a kubeconfig for cfg (client certificate or token
// authentication, CA data inline) to path.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// CreateNode creates node (ignoring its resourceVersion) and then sets its status (capacity, allocatable,
// conditions) as a kubelet would, since creation does not keep status.
func CreateNode(ctx context.Context, client kubernetes.Interface, node *v1.Node) (*v1.Node, error) {
	node = node.DeepCopy()
	node.ResourceVersion = ""
	created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating node %s: %w", node.Name, err)
	}
	created.Status = node.Status
	updated, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting the status of node %s: %w", node.Name, err)
	}
	return updated, nil
}

// CreatePod creates pod; if pod.Status.Phase is not Pending it then sets
// the status too, as a kubelet would.
func CreatePod(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) (*v1.Pod, error) {
	pod = pod.DeepCopy()
	pod.ResourceVersion = ""
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if pod.Status.Phase == "" || pod.Status.Phase == v1.PodPending {
		return created, nil
	}
	created.Status.Phase = pod.Status.Phase
	updated, err := client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting the status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return updated, nil
}

// RunTests is the TestMain of a package whose tests share one control
// plane: it starts the control plane, stores it in *cp, runs run (which
// sets the package up and calls m.Run), stops the control plane (also on
// SIGINT or SIGTERM), and exits with the tests' code, or 1 if the control
// plane could not start or stop. name prefixes its messages; opts
// configure Start.
func RunTests(name string, cp **ControlPlane, run func() int, opts ...Option) {
	started, err := Start(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	*cp = started
	cancel := started.StopOnSignal()
	code := run()
	cancel()
	if err := started.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: stopping the control plane: %v\n", name, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
