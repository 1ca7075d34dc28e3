package app

import (
	"flag"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
)

// Options are the command-line settings of batch-scheduler.
type Options struct {
	Kubeconfig   string
	Master       string
	KubeAPIQPS   float32
	KubeAPIBurst int

	SchedulerNames []string
	NodeSelector   string

	EventHandler      string
	ConfigPath        string
	ListEventHandlers bool

	ListenAddress string
	ShowVersion   bool
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		KubeAPIQPS:     50,
		KubeAPIBurst:   100,
		SchedulerNames: []string{"batch-scheduler"},
		EventHandler:   defaulthandler.Name,
		ListenAddress:  ":10351",
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

	fs = fss.FlagSet("scheduling")
	fs.StringSliceVar(&o.SchedulerNames, "scheduler-name", o.SchedulerNames, "Schedule pods whose spec.schedulerName is this value. Repeat (or comma-separate) for several names.")
	fs.StringVar(&o.NodeSelector, "node-selector", o.NodeSelector, "Label selector of the nodes this scheduler uses, e.g. 'pool=batch,zone in (a,b)'. Empty means all nodes.")

	fs = fss.FlagSet("event handler")
	fs.StringVar(&o.EventHandler, "event-handler", o.EventHandler, fmt.Sprintf("Name of the event handler that turns informer events into cache state. One of: %s.", strings.Join(handlerNames, ", ")))
	fs.StringVar(&o.ConfigPath, "config-path", o.ConfigPath, "Path to the scheduler configuration file (YAML: event handler settings and custom informers).")
	fs.BoolVar(&o.ListEventHandlers, "list-event-handlers", o.ListEventHandlers, "Print the names of the registered event handlers, one per line, and exit.")

	fs = fss.FlagSet("serving")
	fs.StringVar(&o.ListenAddress, "listen-address", o.ListenAddress, "Address of the HTTP server for /healthz, /livez, /readyz, /metrics and /debug/cache.")

	fs = fss.FlagSet("logging")
	goFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(goFlags)
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(goFlags.Lookup(name))
	}

	fs = fss.FlagSet("misc")
	fs.BoolVar(&o.ShowVersion, "version", o.ShowVersion, "Print the version and exit.")
	return fss
}

// addAll adds every section to fs.
func addAll(fs *pflag.FlagSet, fss cliflag.NamedFlagSets) {
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
}
