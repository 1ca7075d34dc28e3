package app

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/batch-scheduler/batch-scheduler/examples/vm-manager/internal/manager"
)

// Options are the command-line settings.
type Options struct {
	// Listen is the address of the HTTP listener (admin API, ExternalWorkloads, /demand, /metrics).
	Listen string
	// AddressFile, if set, receives the bound "host:port" once listening.
	AddressFile string
	// Kubeconfig reaches the cluster whose Nodes and Pods are watched;
	// empty means $KUBECONFIG, ~/.kube/config or in-cluster.
	Kubeconfig string
	// Framework and GrantsURL select two-level mode.
	Framework string
	GrantsURL string
	// Owner is the published ExternalWorkloads' spec.owner.
	Owner string
	// RetryInterval is how often pending VMs are retried.
	RetryInterval time.Duration
	// SyncTimeout bounds the wait for the informers' first lists.
	SyncTimeout time.Duration
	// Logs are the logging settings.
	Logs *logsapi.LoggingConfiguration
}

// Defaults of the flags.
const (
	DefaultListen      = "127.0.0.1:8091"
	DefaultSyncTimeout = 2 * time.Minute
)

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Listen:        DefaultListen,
		Owner:         manager.DefaultOwner,
		RetryInterval: manager.DefaultRetryInterval,
		SyncTimeout:   DefaultSyncTimeout,
		Logs:          logsapi.NewLoggingConfiguration(),
	}
}

// AddFlags adds the flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", o.Listen, "host:port of the HTTP listener serving the admin API, the ExternalWorkloads, /demand and /metrics (port 0 picks a free port)")
	fs.StringVar(&o.AddressFile, "address-file", o.AddressFile, "write the bound host:port to this file once listening")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the cluster whose Nodes and Pods are watched (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&o.Framework, "framework", o.Framework, "two-level mode: this manager's framework name under the allocator (needs --grants-url)")
	fs.StringVar(&o.GrantsURL, "grants-url", o.GrantsURL, "two-level mode: base URL of the allocator serving Grants (needs --framework)")
	fs.StringVar(&o.Owner, "owner", o.Owner, "spec.owner of the published ExternalWorkloads")
	fs.DurationVar(&o.RetryInterval, "retry-interval", o.RetryInterval, "how often pending VMs are retried besides on every node, pod and grant change")
	fs.DurationVar(&o.SyncTimeout, "sync-timeout", o.SyncTimeout, "how long to wait for the first lists of nodes, pods and grants before giving up")
	logsapi.AddFlags(o.Logs, fs)
}

// Validate reports the first bad setting, naming its flag.
func (o *Options) Validate() error {
	if o.Listen == "" {
		return errors.New("--listen: required")
	}
	if (o.Framework == "") != (o.GrantsURL == "") {
		return errors.New("--framework and --grants-url: give both for two-level mode, or neither for hybrid mode")
	}
	if o.GrantsURL != "" {
		u, err := url.Parse(o.GrantsURL)
		if err != nil {
			return fmt.Errorf("--grants-url: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--grants-url: %q is not an http(s) URL with a host", o.GrantsURL)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("--grants-url: %q must not have a query or fragment", o.GrantsURL)
		}
	}
	if o.Owner == "" {
		return errors.New("--owner: must not be empty")
	}
	if o.RetryInterval <= 0 {
		return fmt.Errorf("--retry-interval: %s must be positive", o.RetryInterval)
	}
	if o.SyncTimeout <= 0 {
		return fmt.Errorf("--sync-timeout: %s must be positive", o.SyncTimeout)
	}
	return nil
}
