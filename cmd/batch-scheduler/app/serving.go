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

package app

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/client-go/kubernetes/scheme"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	// rest_client_*, workqueue_* and leader_election_* metrics of
	// client-go, into the legacy registry.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"

	// kubernetes_build_info, from k8s.io/component-base/version.
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"
)

// DefaultSecurePort is the default of --secure-port.
const DefaultSecurePort = 10259

// serverShutdownTimeout bounds how long the HTTP servers wait for requests
// in flight when the scheduler stops.
const serverShutdownTimeout = 5 * time.Second

// ServingOptions configure the HTTP endpoints: /healthz, /livez and
// /readyz (never behind authentication), /metrics and /debug/* (behind
// authentication and authorization on the secure port).
//
// The secure port authenticates bearer tokens with TokenReview and client
// certificates (CA from the cluster's extension-apiserver-authentication
// ConfigMap, or --client-ca-file), and authorizes every request with a
// SubjectAccessReview for the non-resource URL (verb get), as
// kube-scheduler does. The plain HTTP port, off unless --insecure-port is
// set, serves the same endpoints to anyone who can reach it.
type ServingOptions struct {
	// SecureServing is the HTTPS server: --secure-port (0 turns it off),
	// --bind-address, the certificate and TLS settings.
	SecureServing *apiserveroptions.SecureServingOptions
	// Authentication reviews bearer tokens (TokenReview) and verifies
	// client certificates on the secure port.
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	// Authorization asks the API server (SubjectAccessReview) whether the
	// user may get the path, except for --authorization-always-allow-paths
	// and the system:masters group.
	Authorization *apiserveroptions.DelegatingAuthorizationOptions

	// InsecurePort serves plain HTTP without authentication or
	// authorization; 0 (the default) turns it off.
	InsecurePort int
	// InsecureBindAddress is the address of InsecurePort.
	InsecureBindAddress net.IP

	// EnableProfiling serves /debug/pprof/ and /debug/flags/v (on by
	// default, as in kube-scheduler; both behind the same authentication
	// and authorization as /debug/cache).
	EnableProfiling bool
	// EnableContentionProfiling also records goroutine blocking and mutex
	// contention (process-wide, with a small cost on every contended lock).
	EnableContentionProfiling bool
}

// NewServingOptions returns the defaults: HTTPS on port 10259 of every
// address with an in-memory self-signed certificate, no plain HTTP.
func NewServingOptions() *ServingOptions {
	o := &ServingOptions{
		SecureServing:       apiserveroptions.NewSecureServingOptions(),
		Authentication:      apiserveroptions.NewDelegatingAuthenticationOptions(),
		Authorization:       apiserveroptions.NewDelegatingAuthorizationOptions(),
		InsecureBindAddress: netutils.ParseIPSloppy("127.0.0.1"),
		EnableProfiling:     true,
	}
	o.SecureServing.BindPort = DefaultSecurePort
	// No directory: a generated certificate stays in memory (the
	// container's root file system may be read-only).
	o.SecureServing.ServerCert.CertDirectory = ""
	o.SecureServing.ServerCert.PairName = "batch-scheduler"
	// Without a reachable API server the endpoints still serve the health
	// checks; /metrics and /debug/* then refuse everyone.
	o.Authentication.RemoteKubeConfigFileOptional = true
	o.Authentication.TolerateInClusterLookupFailure = true
	o.Authorization.RemoteKubeConfigFileOptional = true
	return o
}

// AddFlags adds the flags of o in their --help sections.
func (o *ServingOptions) AddFlags(fss *cliflag.NamedFlagSets) {
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))

	fs := fss.FlagSet("authentication")
	o.Authentication.AddFlags(fs)
	fs.Lookup("authentication-kubeconfig").Usage = "kubeconfig file of the API server that reviews the tokens presented to the secure port (TokenReview) " +
		"and whose extension-apiserver-authentication ConfigMap holds the client CAs. Empty means --kubeconfig (or in-cluster configuration if that is empty too); --master is not applied."

	fs = fss.FlagSet("authorization")
	o.Authorization.AddFlags(fs)
	fs.Lookup("authorization-kubeconfig").Usage = "kubeconfig file of the API server that authorizes requests to the secure port (SubjectAccessReview). " +
		"Empty means --kubeconfig (or in-cluster configuration if that is empty too); --master is not applied."

	fs = fss.FlagSet("insecure serving")
	fs.IntVar(&o.InsecurePort, "insecure-port", o.InsecurePort, "Port of a plain HTTP server for the same endpoints as --secure-port, WITHOUT authentication or authorization: "+
		"anyone who reaches it can read /metrics and /debug/* (the whole scheduler cache). 0 turns it off. Use it only on a loopback address or for local testing.")
	fs.IPVar(&o.InsecureBindAddress, "insecure-bind-address", o.InsecureBindAddress, "Address of --insecure-port.")

	fs = fss.FlagSet("debugging")
	fs.BoolVar(&o.EnableProfiling, "profiling", o.EnableProfiling, "Serve Go profiles at /debug/pprof/ and change the log verbosity with PUT /debug/flags/v, both behind the secure port's authorization (get, and put for the verbosity).")
	fs.BoolVar(&o.EnableContentionProfiling, "contention-profiling", o.EnableContentionProfiling, "Record goroutine blocking and mutex contention for /debug/pprof/block and /debug/pprof/mutex (needs --profiling).")
}

// Validate checks the values flags alone cannot.
func (o *ServingOptions) Validate() error {
	var errs []error
	if p := o.SecureServing.BindPort; p < 0 || p > 65535 {
		// Checked here: SecureServingOptions.Validate says "cannot be
		// turned off with 0" for any port above 65535.
		errs = append(errs, fmt.Errorf("--secure-port %d must be between 0 and 65535 (0 turns it off)", p))
	} else {
		errs = append(errs, o.SecureServing.Validate()...)
	}
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	if o.InsecurePort < 0 || o.InsecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--insecure-port %d must be between 0 and 65535 (0 turns it off)", o.InsecurePort))
	}
	if o.EnableContentionProfiling && !o.EnableProfiling {
		errs = append(errs, errors.New("--contention-profiling needs --profiling: the profiles are served under /debug/pprof/"))
	}
	if o.InsecurePort > 0 && o.InsecureBindAddress == nil {
		errs = append(errs, errors.New("--insecure-bind-address must not be empty when --insecure-port is set"))
	}
	return errors.Join(errs...)
}

// servingConfig is what ServingOptions resolve to: listeners bound, the
// certificate loaded or generated, the delegated authenticator and
// authorizer built.
type servingConfig struct {
	// secure is nil when --secure-port is 0.
	secure *genericapiserver.SecureServingInfo
	authn  genericapiserver.AuthenticationInfo
	authz  genericapiserver.AuthorizationInfo
	// insecure is nil when --insecure-port is 0.
	insecure net.Listener
}

// config binds the listeners and builds the authenticator and authorizer.
// kubeconfig (--kubeconfig) stands in for --authentication-kubeconfig and
// --authorization-kubeconfig when they are empty. Errors are usage errors:
// they come from flags (a port in use, unreadable files, a bad
// kubeconfig).
func (o *ServingOptions) config(kubeconfig string) (_ *servingConfig, err error) {
	c := &servingConfig{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if o.SecureServing.BindPort > 0 || o.SecureServing.Listener != nil {
		if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
			return nil, usageError(fmt.Errorf("generating a self-signed serving certificate (--cert-dir %q): %w", o.SecureServing.ServerCert.CertDirectory, err))
		}
		if err := o.SecureServing.ApplyTo(&c.secure); err != nil {
			return nil, usageError(fmt.Errorf("secure serving on %s (--bind-address, --secure-port, --tls-*): %w",
				net.JoinHostPort(o.SecureServing.BindAddress.String(), strconv.Itoa(o.SecureServing.BindPort)), err))
		}
		authn := *o.Authentication
		if authn.RemoteKubeConfigFile == "" {
			authn.RemoteKubeConfigFile = kubeconfig
		}
		if err := authn.ApplyTo(&c.authn, c.secure, nil); err != nil {
			return nil, usageError(fmt.Errorf("delegated authentication (--authentication-kubeconfig %q): %w", authn.RemoteKubeConfigFile, err))
		}
		authz := *o.Authorization
		if authz.RemoteKubeConfigFile == "" {
			authz.RemoteKubeConfigFile = kubeconfig
		}
		if err := authz.ApplyTo(&c.authz); err != nil {
			return nil, usageError(fmt.Errorf("delegated authorization (--authorization-kubeconfig %q): %w", authz.RemoteKubeConfigFile, err))
		}
	}
	if o.InsecurePort > 0 {
		addr := net.JoinHostPort(o.InsecureBindAddress.String(), strconv.Itoa(o.InsecurePort))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, usageError(fmt.Errorf("--insecure-bind-address, --insecure-port %s: %w", addr, err))
		}
		c.insecure = ln
	}
	return c, nil
}

// close releases the listeners of a config that will not serve.
func (c *servingConfig) close() {
	if c.secure != nil && c.secure.Listener != nil {
		_ = c.secure.Listener.Close()
	}
	if c.insecure != nil {
		_ = c.insecure.Close()
	}
}

// serve serves mux until stopCh is closed: on the secure port behind
// authentication and authorization, on the insecure port without. The
// returned function waits until the servers have stopped. Serve errors
// after the start are logged by the server, not returned.
func (c *servingConfig) serve(mux http.Handler, stopCh <-chan struct{}) (wait func(), err error) {
	resolver := &apirequest.RequestInfoFactory{}
	var stopped []<-chan struct{}
	if c.secure != nil {
		h := genericapifilters.WithAuthorization(mux, c.authz.Authorizer, scheme.Codecs)
		h = genericapifilters.WithAuthentication(h, c.authn.Authenticator, genericapifilters.Unauthorized(scheme.Codecs), nil, nil)
		h = genericapifilters.WithRequestInfo(h, resolver)
		h = genericapifilters.WithCacheControl(h)
		h = genericfilters.WithHTTPLogging(h)
		h = genericfilters.WithPanicRecovery(h, resolver)
		done, _, err := c.secure.Serve(h, serverShutdownTimeout, stopCh)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("serving HTTPS on %s: %w", c.secure.Listener.Addr(), err)
		}
		stopped = append(stopped, done)
	}
	if c.insecure != nil {
		h := genericfilters.WithPanicRecovery(genericapifilters.WithCacheControl(mux), resolver)
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 1 << 20}
		klog.InfoS("Serving plain HTTP without authentication or authorization", "address", c.insecure.Addr().String())
		done, _, err := genericapiserver.RunServer(srv, c.insecure, serverShutdownTimeout, stopCh)
		if err != nil {
			return nil, fmt.Errorf("serving plain HTTP on %s: %w", c.insecure.Addr(), err)
		}
		stopped = append(stopped, done)
	}
	return func() {
		for _, ch := range stopped {
			<-ch
		}
	}, nil
}

// debugHandlers returns the profiling endpoints of o: Go's pprof
// handlers under /debug/pprof/, and /debug/flags/v, where a PUT with a
// number as its body sets the klog verbosity (-v) of the running process.
// None when profiling is off.
func (o *ServingOptions) debugHandlers() map[string]http.Handler {
	if !o.EnableProfiling {
		return nil
	}
	if o.EnableContentionProfiling {
		// Process-wide: one sampled event per blocking call, and one of
		// every 5 mutex contentions.
		runtime.SetBlockProfileRate(1)
		runtime.SetMutexProfileFraction(5)
	}
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
		"/debug/flags/v":       routes.StringFlagPutHandler(logs.GlogSetter),
	}
}

// metricsHandler serves the component-base legacy registry (process and Go
// runtime, client-go's rest_client_*, workqueue_* and leader_election_*,
// kubernetes_build_info, kubernetes_feature_enabled, and component-base's
// registered_metrics_total, disabled_metrics_total, hidden_metrics_total)
// together with own, the component-base registry that holds this
// scheduler's batch_scheduler_* metrics. own is a registry per command,
// not the process-wide legacy one, because tests and embedders run
// several schedulers in one process; it holds no collector of the legacy
// registry's, so no name is served twice.
func metricsHandler(own k8smetrics.Gatherer) http.Handler {
	return k8smetrics.HandlerFor(prometheus.Gatherers{legacyregistry.DefaultGatherer, own},
		k8smetrics.HandlerOpts{ProcessStartTime: legacyregistry.GetProcessStart()})
}
