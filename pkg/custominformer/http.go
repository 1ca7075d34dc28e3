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

package custominformer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/registry"
)

// Source type names registered by this package.
const (
	// HTTPSource lists and watches a resource manager that speaks the
	// Kubernetes list/watch JSON protocol over HTTP(S).
	HTTPSource = "http"
	// KubeconfigSource lists and watches another cluster's apiserver (one
	// serving the batch-scheduler.io CRDs), reached through a kubeconfig.
	KubeconfigSource = "kubeconfig"
)

// DefaultListTimeout bounds one list request when the http source's
// timeout is not set.
const DefaultListTimeout = configapi.DefaultHTTPSourceTimeout

// HTTPArgs are the settings of the http source: the configuration API's
// type (pkg/apis/config), decoded, defaulted and validated by
// pkg/config.
type HTTPArgs = configapi.HTTPSourceArgs

// Size limits of the http source when its settings leave them zero.
const (
	DefaultMaxObjectBytes = configapi.DefaultHTTPSourceMaxObjectBytes
	DefaultMaxListBytes   = configapi.DefaultHTTPSourceMaxListBytes
)

// KubeconfigArgs are the settings of the kubeconfig source. A user token
// file in the kubeconfig is re-read when it changes and after a 401, like
// the http source's bearerTokenFile.
type KubeconfigArgs struct {
	// Kubeconfig is the path of the kubeconfig file. Required.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context selects a context other than the file's current one.
	Context string `yaml:"context"`
	// QPS and Burst rate-limit requests (client-go defaults if zero).
	QPS   float32 `yaml:"qps"`
	Burst int     `yaml:"burst"`
}

// scheme knows the types a custom informer can produce, for decoding.
var (
	scheme      = runtime.NewScheme()
	codecs      = serializer.NewCodecFactory(scheme)
	listDecoder = codecs.UniversalDeserializer()
)

func init() {
	if err := v1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
}

func gvrFor(ci configapi.CustomInformer) (schema.GroupVersionResource, error) {
	rt, ok := exampleObjects[framework.EventResource(ci.Resource)]
	if !ok {
		return schema.GroupVersionResource{}, fmt.Errorf("resource %q cannot come from a custom informer (supported: %s)", ci.Resource, supportedResources())
	}
	return rt.gvr, nil
}

func newHTTPSource(_ context.Context, ci configapi.CustomInformer, example runtime.Object) (cache.ListerWatcher, error) {
	args, err := typedSourceArgs[*HTTPArgs](HTTPSource, ci)
	if err != nil {
		return nil, err
	}
	cfg, err := restConfig(args)
	if err != nil {
		return nil, err
	}
	gvr, err := gvrFor(ci)
	if err != nil {
		return nil, err
	}
	timeout := args.Timeout.Duration
	if timeout == 0 {
		timeout = DefaultListTimeout
	}
	return NewListWatchWithLimits(cfg, gvr, args.Path, timeout, example, Limits{MaxObjectBytes: args.MaxObjectBytes, MaxListBytes: args.MaxListBytes})
}

// typedSourceArgs returns a built-in source's typed settings, defaulted
// and validated as the file's are: those of the file, typed settings
// built in code, or RawArgs (nil: none) decoded the same way.
func typedSourceArgs[T runtime.Object](sourceType string, ci configapi.CustomInformer) (T, error) {
	var zero T
	obj, err := config.CompleteSourceArgs(sourceType, ci.SourceArgs)
	if err != nil {
		return zero, err
	}
	a, ok := obj.(T)
	if !ok || registry.IsNil(a) {
		return zero, fmt.Errorf("settings of type %T, want %T", ci.SourceArgs, zero)
	}
	return a, nil
}

// restConfig turns the settings, validated, into a rest.Config, checking
// what they name on this machine: the CA bundle, the client certificate
// and the token file. Errors name the offending field.
func restConfig(a *HTTPArgs) (*rest.Config, error) {
	cfg := &rest.Config{Host: a.URL, QPS: a.QPS, Burst: int(a.Burst)}
	if a.CAFile != "" {
		pem, err := os.ReadFile(a.CAFile)
		if err != nil {
			return nil, fmt.Errorf("caFile: reading %s: %w", a.CAFile, unwrapPathError(err))
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile: %s holds no PEM certificate", a.CAFile)
		}
		cfg.TLSClientConfig.CAFile = a.CAFile
	}
	if a.CertFile != "" {
		if _, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile); err != nil {
			return nil, fmt.Errorf("certFile/keyFile: %w", err)
		}
		cfg.TLSClientConfig.CertFile = a.CertFile
		cfg.TLSClientConfig.KeyFile = a.KeyFile
	}
	cfg.TLSClientConfig.Insecure = a.InsecureSkipTLSVerify
	if a.BearerTokenFile != "" {
		tf := &tokenFile{path: a.BearerTokenFile}
		if err := tf.load(); err != nil {
			return nil, fmt.Errorf("bearerTokenFile: %w", err)
		}
		cfg.WrapTransport = tf.wrap
	}
	return cfg, nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func checkRate(qps float32, burst int) error {
	if qps < 0 {
		return errors.New("qps: must not be negative")
	}
	if burst < 0 {
		return errors.New("burst: must not be negative")
	}
	if qps > 0 && burst == 0 {
		return errors.New("burst: required with qps")
	}
	return nil
}

func newKubeconfigSource(_ context.Context, ci configapi.CustomInformer, example runtime.Object) (cache.ListerWatcher, error) {
	var args KubeconfigArgs
	if ci.SourceArgs != nil {
		raw, ok := ci.SourceArgs.(*configapi.RawArgs)
		if !ok {
			return nil, fmt.Errorf("settings of type %T, want raw settings", ci.SourceArgs)
		}
		if err := config.DecodeStrict(raw.Reader(), &args); err != nil {
			return nil, err
		}
	}
	if args.Kubeconfig == "" {
		return nil, errors.New("kubeconfig: required")
	}
	if _, err := os.Stat(args.Kubeconfig); err != nil {
		return nil, fmt.Errorf("kubeconfig: reading %s: %w", args.Kubeconfig, unwrapPathError(err))
	}
	if err := checkRate(args.QPS, args.Burst); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: args.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: args.Context},
	).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %s: %w", args.Kubeconfig, err)
	}
	if args.QPS > 0 {
		cfg.QPS, cfg.Burst = args.QPS, args.Burst
	}
	// A token file is re-read as soon as it changes, as for the http
	// source, instead of client-go's once a minute.
	if cfg.BearerTokenFile != "" && cfg.ExecProvider == nil && cfg.AuthProvider == nil {
		tf := &tokenFile{path: cfg.BearerTokenFile}
		if err := tf.load(); err != nil {
			return nil, fmt.Errorf("kubeconfig: %s: user token file: %w", args.Kubeconfig, err)
		}
		cfg.Wrap(tf.wrap)
		cfg.BearerToken, cfg.BearerTokenFile = "", ""
	}
	gvr, err := gvrFor(ci)
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	cfg.Timeout = 0 // it would cut watches short; it bounds lists instead
	if timeout == 0 {
		timeout = DefaultListTimeout
	}
	return NewListWatch(cfg, gvr, "", timeout, example)
}

// NewListWatch returns a ListerWatcher that lists and watches gvr across
// all namespaces at the server of cfg, decoding JSON into example's type.
// path, when set, replaces the apiserver-style resource path. listTimeout,
// when positive, bounds each list request. cfg is copied, not modified.
// Responses are bounded by the default Limits.
func NewListWatch(cfg *rest.Config, gvr schema.GroupVersionResource, path string, listTimeout time.Duration, example runtime.Object) (cache.ListerWatcher, error) {
	return NewListWatchWithLimits(cfg, gvr, path, listTimeout, example, Limits{})
}

// Limits bound what a list/watch source accepts from the server.
type Limits struct {
	// MaxObjectBytes bounds one watch event (DefaultMaxObjectBytes if
	// zero).
	MaxObjectBytes int64
	// MaxListBytes bounds one list response (DefaultMaxListBytes if zero).
	MaxListBytes int64
}

// NewListWatchWithLimits is NewListWatch with explicit size limits.
func NewListWatchWithLimits(cfg *rest.Config, gvr schema.GroupVersionResource, path string, listTimeout time.Duration, example runtime.Object, limits Limits) (cache.ListerWatcher, error) {
	if limits.MaxObjectBytes <= 0 {
		limits.MaxObjectBytes = DefaultMaxObjectBytes
	}
	if limits.MaxListBytes <= 0 {
		limits.MaxListBytes = DefaultMaxListBytes
	}
	gvks, _, err := scheme.ObjectKinds(example)
	if err != nil {
		return nil, err
	}
	listGVK := gvks[0].GroupVersion().WithKind(gvks[0].Kind + "List")
	if _, err := scheme.New(listGVK); err != nil {
		return nil, fmt.Errorf("no list type for %v: %w", gvks[0], err)
	}
	if path == "" {
		if gvr.Group == "" {
			path = "/api/" + gvr.Version + "/" + gvr.Resource
		} else {
			path = "/apis/" + gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
		}
	}
	c := rest.CopyConfig(cfg)
	gv := gvr.GroupVersion()
	c.GroupVersion = &gv
	if c.APIPath == "" {
		c.APIPath = "/apis"
	}
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = limitedSerializer{NegotiatedSerializer: codecs.WithoutConversion(), maxFrame: limits.MaxObjectBytes}
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &listLimiter{rt: rt, max: limits.MaxListBytes}
	})
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list, err := scheme.New(listGVK)
			if err != nil {
				return nil, err
			}
			req := client.Get().AbsPath(path).VersionedParams(&opts, metav1.ParameterCodec)
			if listTimeout > 0 {
				req = req.Timeout(listTimeout)
			}
			body, err := req.DoRaw(ctx)
			if err != nil {
				return nil, err
			}
			if err := checkItemSizes(body, limits.MaxObjectBytes); err != nil {
				return nil, err
			}
			// The decoder returns the kind the body names, which need not
			// be list's: the check around every source rejects that.
			obj, _, err := listDecoder.Decode(body, nil, list)
			if err != nil {
				return nil, fmt.Errorf("decoding the list response: %w", err)
			}
			return obj, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			return client.Get().AbsPath(path).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
		},
	}, nil
}
