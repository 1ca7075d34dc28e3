package app

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"

	// Registers the "json" value of --logging-format; it must be imported
	// before the logging flags are added.
	_ "k8s.io/component-base/logs/json/register"

	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
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

	// Serving configures the HTTPS endpoints (and the optional plain HTTP
	// ones); see serving.go.
	Serving *ServingOptions

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
		Serving:        NewServingOptions(),
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
		BindConcurrency: scheduler.DefaultBindConcurrency,
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

	fs = fss.FlagSet("leader election")
	le := &o.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", le.Enabled, "Elect a leader on a Lease before scheduling; run several replicas for availability.")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "How long non-leaders wait after the last renewal before taking over.")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "How long the leader keeps trying to renew before it gives up leadership (and exits).")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "How often to try to acquire or renew the lease.")
	fs.StringVar(&le.ResourceNamespace, "leader-elect-resource-namespace", le.ResourceNamespace, "Namespace of the Lease.")
	fs.StringVar(&le.ResourceName, "leader-elect-resource-name", le.ResourceName, "Name of the Lease.")

	o.Serving.AddFlags(&fss)

	logsapi.AddFlags(o.Logs, fss.FlagSet("logging"))

	fs = fss.FlagSet("misc")
	o.FeatureGate.AddFlag(fs)
	addVersionFlag(fs)
	return fss
}

// newFeatureGate returns a feature gate that knows the logging features,
// for --feature-gates.
func newFeatureGate() featuregate.MutableFeatureGate {
	fg := featuregate.NewFeatureGate()
	if err := logsapi.AddFeatureGates(fg); err != nil {
		// Only a programming error (a feature added twice) gets here.
		panic(fmt.Sprintf("adding the logging features to the feature gate: %v", err))
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
	return nil
}
