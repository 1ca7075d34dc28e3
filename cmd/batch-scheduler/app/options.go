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
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	k8smetrics "k8s.io/component-base/metrics"

	// Registers the "json" value of --logging-format; it must be imported
	// before the logging flags are added.
	_ "k8s.io/component-base/logs/json/register"

	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/scheduler"
)

// Options are the command-line settings of batch-scheduler.
type Options struct {
	Kubeconfig   string
	Master       string
	KubeAPIQPS   float32
	KubeAPIBurst int
	// EventsQPS and EventsBurst limit the separate client that writes
	// Kubernetes events, so that events never compete with binding.
	EventsQPS   float32
	EventsBurst int

	SchedulerNames []string
	NodeSelector   string

	EventHandler      string
	ConfigPath        string
	ListEventHandlers bool
	// MaxEventDelay is how long an informer event may wait for the event
	// handler before /readyz fails (check "event-backlog"); 0 disables
	// the check.
	MaxEventDelay time.Duration

	// Serving configures the HTTPS endpoints (and the optional plain HTTP
	// ones); see serving.go.
	Serving *ServingOptions

	// Metrics holds the component-base metric flags
	// (--show-hidden-metrics-for-version, --disabled-metrics,
	// --allow-metric-labels, --allow-metric-labels-manifest); see
	// metricsoptions.go.
	Metrics *k8smetrics.Options

	// Logs is the component-base logging configuration (--logging-format,
	// -v, --vmodule, ...), applied with logsapi.ValidateAndApply.
	Logs *logsapi.LoggingConfiguration
	// FeatureGate holds --feature-gates. It knows the logging features
	// (ContextualLogging, LoggingAlphaOptions, LoggingBetaOptions). Each
	// command has its own gate, so that several commands in one process
	// do not share flag state.
	FeatureGate featuregate.MutableFeatureGate

	LeaderElection LeaderElectionOptions

	// BindConcurrency is the most bind calls in flight; below it the
	// scheduler adapts the bound to the API server's answers.
	BindConcurrency int

	// MemoryLimitRatio is the fraction of the container's memory limit
	// the Go runtime's soft memory limit is set to (see memlimit.go); 0
	// leaves it alone.
	MemoryLimitRatio float64
}

// LeaderElectionOptions configure leader election on a Lease. Only the
// leader runs the scheduling loop; the others keep their caches warm.
type LeaderElectionOptions struct {
	Enabled           bool
	LeaseDuration     time.Duration
	RenewDeadline     time.Duration
	RetryPeriod       time.Duration
	ResourceNamespace string
	ResourceName      string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		KubeAPIQPS:     50,
		KubeAPIBurst:   100,
		EventsQPS:      50,
		EventsBurst:    100,
		SchedulerNames: []string{"batch-scheduler"},
		EventHandler:   defaulthandler.Name,
		MaxEventDelay:  30 * time.Second,
		Serving:        NewServingOptions(),
		Metrics:        k8smetrics.NewOptions(),
		Logs:           logsapi.NewLoggingConfiguration(),
		FeatureGate:    newFeatureGate(),
		LeaderElection: LeaderElectionOptions{
			Enabled:           true,
			LeaseDuration:     15 * time.Second,
			RenewDeadline:     10 * time.Second,
			RetryPeriod:       2 * time.Second,
			ResourceNamespace: "kube-system",
			ResourceName:      "batch-scheduler",
		},
		BindConcurrency:  scheduler.DefaultBindConcurrency,
		MemoryLimitRatio: DefaultMemoryLimitRatio,
	}
}

// Flags returns the flags in named sections, for --help.
func (o *Options) Flags(handlerNames []string) cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets

	fs := fss.FlagSet("cluster")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file. Empty means in-cluster configuration.")
	fs.StringVar(&o.Master, "master", o.Master, "Address of the Kubernetes API server; overrides the kubeconfig's server.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second allowed to the API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of queries allowed to the API server.")
	fs.Float32Var(&o.EventsQPS, "events-qps", o.EventsQPS, "Queries per second of the separate client that writes events (Scheduled, FailedScheduling). Events are best effort: above this rate they are aggregated or dropped rather than slowing binding.")
	fs.IntVar(&o.EventsBurst, "events-burst", o.EventsBurst, "Burst of the events client.")

	fs = fss.FlagSet("scheduling")
	fs.StringSliceVar(&o.SchedulerNames, "scheduler-name", o.SchedulerNames, "Schedule pods whose spec.schedulerName is this value. Repeat (or comma-separate) for several names.")
	fs.StringVar(&o.NodeSelector, "node-selector", o.NodeSelector, "Label selector of the nodes this scheduler uses, e.g. 'pool=batch,zone in (a,b)'. Empty means all nodes.")
	fs.IntVar(&o.BindConcurrency, "bind-concurrency", o.BindConcurrency, fmt.Sprintf("Most bind calls (with pod status writes) in flight, 1 to %d. Below it the bound adapts: it starts at 16, grows while binds succeed and halves when the API server answers 429 or 5xx or a call times out.", maxBindConcurrency))

	fs = fss.FlagSet("event handler")
	fs.StringVar(&o.EventHandler, "event-handler", o.EventHandler, fmt.Sprintf("Name of the event handler that turns informer events into cache state. One of: %s.", strings.Join(handlerNames, ", ")))
	fs.StringVar(&o.ConfigPath, "config-path", o.ConfigPath, "Path to the scheduler configuration file (YAML: event handler settings and custom informers).")
	fs.BoolVar(&o.ListEventHandlers, "list-event-handlers", o.ListEventHandlers, "Print the names of the registered event handlers, one per line, and exit.")
	fs.DurationVar(&o.MaxEventDelay, "max-event-delay", o.MaxEventDelay, "How long an informer event may wait for the event handler before /readyz fails (check event-backlog), naming the informer. 0 disables the check.")

	fs = fss.FlagSet("leader election")
	le := &o.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled, "Elect a leader on a Lease before scheduling; run several replicas for availability.")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "How long non-leaders wait after the last renewal before taking over.")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "How long the leader keeps trying to renew before it gives up leadership (and exits).")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "How often to try to acquire or renew the lease.")
	fs.StringVar(&le.ResourceNamespace, "leader-elect-resource-namespace", le.ResourceNamespace, "Namespace of the Lease.")
	fs.StringVar(&le.ResourceName, "leader-elect-resource-name", le.ResourceName, "Name of the Lease.")

	o.Serving.AddFlags(&fss)

	o.Metrics.AddFlags(fss.FlagSet("metrics"))

	logsapi.AddFlags(o.Logs, fss.FlagSet("logging"))

	fs = fss.FlagSet("misc")
	fs.Float64Var(&o.MemoryLimitRatio, "memory-limit-ratio", o.MemoryLimitRatio, "Set the Go runtime's soft memory limit to this fraction of the container's memory limit (cgroup v2 memory.max or v1 memory.limit_in_bytes, the smallest up the hierarchy), so that the garbage collector works harder as the heap nears the limit instead of the container being killed for memory. 0 turns it off; without a limit, or with GOMEMLIMIT set in the environment, nothing is changed.")
	o.FeatureGate.AddFlag(fs)
	addVersionFlag(fs)
	return fss
}

// OpportunisticBatching is the feature that lets a pod alike to the one
// placed before it be placed by that pod's ranking of nodes, refreshed
// where nodes changed (see pkg/scheduler's ranking). It bears the name of
// kube-scheduler's feature of the same purpose, so that
// --feature-gates=OpportunisticBatching=false turns both off.
const OpportunisticBatching featuregate.Feature = "OpportunisticBatching"

// newFeatureGate returns a feature gate that knows the logging features
// and the scheduler's own, for --feature-gates.
func newFeatureGate() featuregate.MutableFeatureGate {
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		// Only a programming error (a feature added twice) gets here.
		panic(fmt.Sprintf("adding the logging features to the feature gate: %v", err))
	}
	if err := fg.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		OpportunisticBatching: {Default: true, PreRelease: featuregate.Beta},
	}); err != nil {
		panic(fmt.Sprintf("adding the scheduler's features to the feature gate: %v", err))
	}
	return fg
}

// addAll adds every section to fs.
func addAll(fs *pflag.FlagSet, fss cliflag.NamedFlagSets) {
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
}

// maxBindConcurrency is the largest --bind-concurrency.
const maxBindConcurrency = 10000

// validateBindConcurrency checks --bind-concurrency.
func (o *Options) validateBindConcurrency() error {
	if o.BindConcurrency < 1 || o.BindConcurrency > maxBindConcurrency {
		return fmt.Errorf("--bind-concurrency %d: must be between 1 and %d", o.BindConcurrency, maxBindConcurrency)
	}
	return nil
}

// Validate checks option values that flags alone cannot.
func (o *LeaderElectionOptions) Validate() error {
	if !o.Enabled {
		return nil
	}
	switch {
	case o.LeaseDuration <= o.RenewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be greater than --leader-elect-renew-deadline (%s)", o.LeaseDuration, o.RenewDeadline)
	case o.RenewDeadline <= o.RetryPeriod:
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be greater than --leader-elect-retry-period (%s)", o.RenewDeadline, o.RetryPeriod)
	case o.RetryPeriod <= 0:
		return errors.New("--leader-elect-retry-period must be positive")
	case o.ResourceName == "" || o.ResourceNamespace == "":
		return errors.New("--leader-elect-resource-name and --leader-elect-resource-namespace must not be empty")
	}
	if errs := validation.IsDNS1123Label(o.ResourceNamespace); len(errs) > 0 {
		return fmt.Errorf("--leader-elect-resource-namespace %s is not a valid namespace name: %s", quoteShort(o.ResourceNamespace), strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(o.ResourceName); len(errs) > 0 {
		return fmt.Errorf("--leader-elect-resource-name %s is not a valid Lease name: %s", quoteShort(o.ResourceName), strings.Join(errs, "; "))
	}
	return nil
}

// Validate checks the flags of the cluster and scheduling sections, as
// kube-scheduler checks its client connection and profiles, plus what
// kube-scheduler leaves to client-go or to the API server: every error
// names its flag and the value given. It returns every problem found,
// joined on one line.
func (o *Options) Validate() error {
	var errs []error
	errs = append(errs, validateQPS("--kube-api-qps", o.KubeAPIQPS), validateBurst("--kube-api-burst", o.KubeAPIBurst))
	errs = append(errs, validateQPS("--events-qps", o.EventsQPS), validateBurst("--events-burst", o.EventsBurst))
	errs = append(errs, validateSchedulerNames(o.SchedulerNames))
	if o.EventHandler == "" {
		errs = append(errs, errors.New("--event-handler must not be empty"))
	}
	errs = append(errs, o.validateBindConcurrency(), validateMemoryLimitRatio(o.MemoryLimitRatio))
	if o.MaxEventDelay < 0 {
		errs = append(errs, fmt.Errorf("--max-event-delay must not be negative (0 disables the check), got %s", o.MaxEventDelay))
	}
	if err := o.LeaderElection.Validate(); err != nil {
		errs = append(errs, err)
	}
	return joinOneLine(errs)
}

// validateQPS checks a queries-per-second flag. client-go reads 0 as "the
// default of 5" and a negative value as "no client-side limit", and a NaN
// or infinite value breaks its token bucket, so only a finite positive
// number is accepted: what the flag says is what the scheduler does.
func validateQPS(flag string, v float32) error {
	f := float64(v)
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return fmt.Errorf("%s must be a finite number of queries per second, got %v", flag, v)
	case f <= 0:
		return fmt.Errorf("%s must be greater than 0, got %v", flag, v)
	}
	return nil
}

// validateBurst checks a burst flag: client-go needs at least 1 whenever
// the QPS limit is on, which validateQPS makes it always.
func validateBurst(flag string, v int) error {
	if v < 1 {
		return fmt.Errorf("%s must be at least 1, got %d", flag, v)
	}
	return nil
}

// validateSchedulerNames checks --scheduler-name: at least one name, each a
// valid spec.schedulerName (the API server accepts only DNS-1123 subdomains
// there, so any other name could never match a pod), and no name twice, as
// kube-scheduler requires of its profiles.
func validateSchedulerNames(names []string) error {
	if len(names) == 0 {
		return errors.New("--scheduler-name: at least one name is required")
	}
	seen := make(map[string]bool, len(names))
	var errs []error
	for _, n := range names {
		switch {
		case n == "":
			errs = append(errs, errors.New("--scheduler-name: a name is empty"))
		case len(validation.IsDNS1123Subdomain(n)) > 0:
			errs = append(errs, fmt.Errorf("--scheduler-name %s is not a valid scheduler name (pods can only name a DNS-1123 subdomain): %s",
				quoteShort(n), strings.Join(validation.IsDNS1123Subdomain(n), "; ")))
		case seen[n]:
			errs = append(errs, fmt.Errorf("--scheduler-name %s is given twice", quoteShort(n)))
		}
		seen[n] = true
	}
	return joinOneLine(errs)
}

// joinOneLine joins the non-nil errors with "; ", or returns nil.
func joinOneLine(errs []error) error {
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// quoteShort quotes a user's value for a message, bounded
// (framework.QuoteValue), so that a huge value does not make a huge
// message.
func quoteShort(s string) string { return framework.QuoteValue(s) }

// flagError rewords a flag parsing error for the person who typed the
// flag: it names the flag and the value, and says what the value must
// look like instead of showing Go's parser (strconv.ParseFloat...).
func flagError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) || ive.GetFlag() == nil {
		return err
	}
	name := "--" + ive.GetFlag().Name
	value := quoteShort(ive.GetValue())
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		what := map[string]string{
			"float32": "a number", "float64": "a number",
			"int": "an integer", "int32": "an integer", "int64": "an integer", "uint": "a non-negative integer",
			"bool": "true or false", "Level": "a verbosity level (an integer)",
		}[ive.GetFlag().Value.Type()]
		if what == "" {
			what = "a " + ive.GetFlag().Value.Type()
		}
		if errors.Is(ne.Err, strconv.ErrRange) {
			return fmt.Errorf("%s %s: out of range for %s", name, value, what)
		}
		return fmt.Errorf("%s %s: must be %s", name, value, what)
	}
	switch ive.GetFlag().Value.Type() {
	case "duration":
		return fmt.Errorf("%s %s: must be a duration such as 30s, 2m or 1h30m", name, value)
	case "ip":
		return fmt.Errorf("%s %s: must be an IP address", name, value)
	}
	cause := ive.Unwrap()
	if cause == nil {
		return err
	}
	return fmt.Errorf("%s %s: %s", name, value, strings.ReplaceAll(cause.Error(), "\n", " "))
}
