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
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
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
	// KubeAPIQPS and KubeAPIBurst bound the requests to that cluster's
	// API server (ledger writes, pod reads).
	KubeAPIQPS   float32
	KubeAPIBurst int
	// Framework and GrantsURL select two-level mode.
	Framework string
	GrantsURL string
	// Owner is the published ExternalWorkloads' spec.owner.
	Owner string
	// HostSelector is a label selector of the nodes VMs may be placed
	// on; empty selects every node. Hybrid mode only.
	HostSelector string
	// Ledger turns ledger mode on (hybrid mode only): every placement is
	// committed to its host's NodeLedger first. LedgerPlacer is this
	// manager's name in the ledgers; LedgerRequire the placers that must
	// have joined a host's ledger before a VM goes there.
	Ledger        bool
	LedgerPlacer  string
	LedgerRequire []string
	// StateFile, if set, keeps the VMs across restarts.
	StateFile string
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
	// DefaultKubeAPIQPS and DefaultKubeAPIBurst bound the requests to the
	// API server: in ledger mode every VM is at least one ledger write.
	DefaultKubeAPIQPS   = 50
	DefaultKubeAPIBurst = 100
)

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Listen:        DefaultListen,
		KubeAPIQPS:    DefaultKubeAPIQPS,
		KubeAPIBurst:  DefaultKubeAPIBurst,
		Owner:         manager.DefaultOwner,
		LedgerPlacer:  manager.DefaultLedgerPlacer,
		LedgerRequire: []string{manager.DefaultLedgerRequire},
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
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "requests per second to the cluster's API server")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "burst of requests to the cluster's API server")
	fs.StringVar(&o.Framework, "framework", o.Framework, "two-level mode: this manager's framework name under the allocator (needs --grants-url)")
	fs.StringVar(&o.GrantsURL, "grants-url", o.GrantsURL, "two-level mode: base URL of the allocator serving Grants (needs --framework)")
	fs.StringVar(&o.Owner, "owner", o.Owner, "spec.owner of the published ExternalWorkloads")
	fs.StringVar(&o.HostSelector, "host-selector", o.HostSelector, "hybrid mode: label selector of the nodes VMs may be placed on, e.g. 'vms=true' (default: every node)")
	fs.BoolVar(&o.Ledger, "ledger", o.Ledger, "hybrid mode: commit every placement to its host's NodeLedger, where batch-scheduler commits its binds, so that a VM and a pod never take the same capacity")
	fs.StringVar(&o.LedgerPlacer, "ledger-placer", o.LedgerPlacer, "with --ledger: this manager's placer name in the ledgers")
	fs.StringSliceVar(&o.LedgerRequire, "ledger-require", o.LedgerRequire, "with --ledger: comma-separated placers that must have joined a host's ledger before a VM goes there (empty: none)")
	fs.StringVar(&o.StateFile, "state-file", o.StateFile, "keep the VMs in this JSON file, so that a restarted manager still knows the VMs that kept running (default: in memory only)")
	fs.DurationVar(&o.RetryInterval, "retry-interval", o.RetryInterval, "how often pending VMs are retried besides on every node, pod and grant change")
	fs.DurationVar(&o.SyncTimeout, "sync-timeout", o.SyncTimeout, "how long to wait for the first lists of nodes, pods and grants before giving up")
	logsapi.AddFlags(o.Logs, fs)
}

// Validate reports the first bad setting, naming its flag.
func (o *Options) Validate() error {
	if o.Listen == "" {
		return errors.New("--listen: required")
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst <= 0 {
		return fmt.Errorf("--kube-api-qps %v and --kube-api-burst %d: must be positive", o.KubeAPIQPS, o.KubeAPIBurst)
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
	if err := o.validateHybrid(); err != nil {
		return err
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

// maxPlacerName is the longest placer name a NodeLedger accepts.
const maxPlacerName = 253

// validateHybrid checks the flags of hybrid mode: the host selector and
// the ledger.
func (o *Options) validateHybrid() error {
	if o.Framework != "" {
		switch {
		case o.Ledger:
			return errors.New("--ledger: hybrid mode only, not with --framework")
		case o.HostSelector != "":
			return errors.New("--host-selector: hybrid mode only, not with --framework (the grants choose the hosts)")
		}
	}
	if _, err := labels.Parse(o.HostSelector); err != nil {
		return fmt.Errorf("--host-selector: %w", err)
	}
	if !o.Ledger {
		switch {
		case o.LedgerPlacer != manager.DefaultLedgerPlacer:
			return errors.New("--ledger-placer: only with --ledger")
		case !slices.Equal(o.LedgerRequire, []string{manager.DefaultLedgerRequire}):
			return errors.New("--ledger-require: only with --ledger")
		}
		return nil
	}
	if err := checkPlacer("--ledger-placer", o.LedgerPlacer); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, p := range o.LedgerRequire {
		if err := checkPlacer("--ledger-require", p); err != nil {
			return err
		}
		if seen[p] {
			return fmt.Errorf("--ledger-require: %q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

// checkPlacer checks a placer name given to flag.
func checkPlacer(flag, name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return fmt.Errorf("%s: a placer name must not be empty", flag)
	case len(name) > maxPlacerName:
		return fmt.Errorf("%s: placer name %.40q... is longer than %d characters", flag, name, maxPlacerName)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("%s: placer name %q has leading or trailing spaces", flag, name)
	}
	return nil
}
