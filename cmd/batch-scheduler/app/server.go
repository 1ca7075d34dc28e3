// Package app builds the batch-scheduler command. Out-of-tree builds call
// NewSchedulerCommand with WithEventHandler (or WithCustomInformerSource) to
// add their own implementations without forking:
//
//	func main() {
//		os.Exit(app.Execute(app.NewSchedulerCommand(
//			app.WithEventHandler("acme", acme.New),
//		)))
//	}
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/queue"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/term"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/scheduler"

	// The built-in handlers register themselves.
	_ "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/metrics"
	"github.com/batch-scheduler/batch-scheduler/pkg/version"
)

// Option customises the command, for out-of-tree builds.
type Option func(*registries) error

type registries struct {
	handlers *eventhandlers.Registry
	sources  *custominformer.SourceRegistry
	plugins  *frameworkruntime.Registry
}

// WithEventHandler adds an event handler under name. A name that is
// already registered makes the command fail with exit code 2.
func WithEventHandler(name string, factory eventhandlers.Factory) Option {
	return func(r *registries) error { return r.handlers.Register(name, factory) }
}

// WithPlugin adds a scheduling plugin under name, for profiles to enable.
func WithPlugin(name string, factory framework.PluginFactory) Option {
	return func(r *registries) error { return r.plugins.Register(name, factory) }
}

// WithCustomInformerSource adds a custom informer source type under name.
func WithCustomInformerSource(name string, factory custominformer.SourceFactory) Option {
	return func(r *registries) error { return r.sources.Register(name, factory) }
}

// ExitError carries the process exit code of a failure.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// usageError marks errors in what the user asked for: exit code 2.
func usageError(err error) error { return &ExitError{Code: 2, Err: err} }

// NewSchedulerCommand returns the batch-scheduler command.
func NewSchedulerCommand(opts ...Option) *cobra.Command {
	// Private copies: options never leak into the process-wide registries.
	regs := &registries{
		handlers: eventhandlers.GlobalRegistry().Clone(),
		sources:  custominformer.GlobalSourceRegistry().Clone(),
		plugins:  plugins.NewInTreeRegistry(),
	}
	var optErr error
	for _, opt := range opts {
		if err := opt(regs); err != nil && optErr == nil {
			optErr = err
		}
	}
	o := NewOptions()
	fss := o.Flags(regs.handlers.Names())
	cmd := &cobra.Command{
		Use:   "batch-scheduler",
		Short: "A Kubernetes batch (gang) scheduler with pluggable event handlers",
		Long: `batch-scheduler schedules pods, and gangs of pods that must start together,
whose spec.schedulerName is one of --scheduler-name. Its cache is fed by
Kubernetes informers and by custom informers from external resource managers,
through the event handler chosen with --event-handler.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if optErr != nil {
				return usageError(optErr)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return Run(ctx, cmd.OutOrStdout(), o, regs)
		},
	}
	addAll(cmd.Flags(), fss)
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd
}

// Execute runs cmd and returns the process exit code: 0 on success, 2 for
// a usage or configuration error, 1 for anything else. The error is printed
// on one line.
func Execute(cmd *cobra.Command) int {
	err := cmd.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "batch-scheduler: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if strings.HasPrefix(err.Error(), "unknown flag") || strings.Contains(err.Error(), "invalid argument") ||
		strings.Contains(err.Error(), "unknown command") || strings.Contains(err.Error(), "unknown shorthand") {
		return 2
	}
	return 1
}

// Run runs the scheduler until ctx is done.
func Run(ctx context.Context, out io.Writer, o *Options, regs *registries) error {
	if o.ShowVersion {
		fmt.Fprintf(out, "batch-scheduler %s\n", version.Get())
		return nil
	}
	if o.ListEventHandlers {
		for _, n := range regs.handlers.Names() {
			fmt.Fprintln(out, n)
		}
		return nil
	}

	// Everything the user can get wrong is checked before any connection.
	if !regs.handlers.Has(o.EventHandler) {
		_, err := regs.handlers.Lookup(o.EventHandler)
		return usageError(fmt.Errorf("--event-handler: %w", err))
	}
	if err := o.LeaderElection.Validate(); err != nil {
		return usageError(err)
	}
	if len(o.SchedulerNames) == 0 {
		return usageError(errors.New("--scheduler-name: at least one name is required"))
	}
	selector := labels.Everything()
	if o.NodeSelector != "" {
		s, err := labels.Parse(o.NodeSelector)
		if err != nil {
			return usageError(fmt.Errorf("--node-selector %q: %w", o.NodeSelector, err))
		}
		selector = s
	}
	var cfg *config.File
	if o.ConfigPath != "" {
		f, err := config.Load(o.ConfigPath)
		if err != nil {
			return usageError(fmt.Errorf("--config-path: %w", err))
		}
		cfg = f
	}
	restConfig, err := clientcmd.BuildConfigFromFlags(o.Master, o.Kubeconfig)
	if err != nil {
		return usageError(fmt.Errorf("building the API client configuration (--kubeconfig %q, --master %q): %w", o.Kubeconfig, o.Master, err))
	}
	restConfig.QPS, restConfig.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	restConfig = rest.AddUserAgent(restConfig, "batch-scheduler")

	s, err := newServer(ctx, o, regs, cfg, selector, restConfig)
	if err != nil {
		return err
	}
	return s.run(ctx)
}

type server struct {
	opts        *Options
	client      kubernetes.Interface
	cache       *cache.SchedulerCache
	handler     eventhandlers.Interface
	scheduler   *scheduler.Scheduler
	broadcaster events.EventBroadcasterAdapter
	registry    *prometheus.Registry
}

func newServer(ctx context.Context, o *Options, regs *registries, cfg *config.File, selector labels.Selector, restConfig *rest.Config) (*server, error) {
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.New(reg)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	sm, err := scheduler.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	eventsConfig := rest.CopyConfig(restConfig)
	eventsConfig.QPS, eventsConfig.Burst = o.EventsQPS, o.EventsBurst
	eventClient, err := kubernetes.NewForConfig(eventsConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	broadcaster := events.NewEventBroadcasterAdapterWithContext(ctx, eventClient)
	recorder := broadcaster.NewRecorder("batch-scheduler")
	profiles, queueSort, err := buildProfiles(ctx, o.SchedulerNames, cfg, regs.plugins, &handle{client: client, recorder: recorder})
	if err != nil {
		return nil, usageError(err)
	}
	resources := resourcesNeeded(profiles)
	klog.V(2).InfoS("Informers needed by the profiles' plugins", "resources", resources)
	c, err := cache.New(cache.Options{
		SchedulerNames: o.SchedulerNames,
		NodeSelector:   selector,
		Client:         client,
		DynamicClient:  dyn,
		Metrics:        m,
		Queue:          queue.Options{Less: queueSort},
		Resources:      resources,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the scheduler cache: %w", err)
	}
	h, err := eventhandlers.NewEventHandler(ctx, regs.handlers, o.EventHandler, c, cfg.HandlerArgs(o.EventHandler), restConfig)
	if err != nil {
		return nil, usageError(err)
	}
	if cfg != nil && len(cfg.CustomInformers) > 0 {
		cim, err := custominformer.NewMetrics(reg)
		if err != nil {
			return nil, err
		}
		for _, ci := range cfg.CustomInformers {
			b, err := custominformer.Build(ctx, regs.sources, cfg.Path, ci, custominformer.WithMetrics(cim))
			if err != nil {
				return nil, usageError(err)
			}
			if err := c.AddCustomInformer(cache.CustomInformer{Name: b.Name, Resource: b.Resource, Informer: b.Informer}); err != nil {
				return nil, usageError(fmt.Errorf("%s: line %d: %w", cfg.Path, ci.Line, err))
			}
		}
	}
	sched, err := scheduler.New(scheduler.Options{Cache: c, Queue: c.Queue(), Client: client, Profiles: profiles, Recorder: recorder, Metrics: sm})
	if err != nil {
		return nil, err
	}
	return &server{opts: o, client: client, cache: c, handler: h, scheduler: sched, broadcaster: broadcaster, registry: reg}, nil
}

func (s *server) run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.ListenAddress)
	if err != nil {
		return usageError(fmt.Errorf("--listen-address %q: %w", s.opts.ListenAddress, err))
	}
	srv := &http.Server{Handler: s.mux(), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	klog.InfoS("Serving health, metrics and debug endpoints", "address", ln.Addr().String())

	klog.InfoS("Starting batch-scheduler", "version", version.Get(), "eventHandler", s.opts.EventHandler, "schedulerNames", s.opts.SchedulerNames)
	// Events keep being written until the broadcaster is shut down on the
	// way out, not cut off (with an error per event) when ctx ends.
	eventsStop := make(chan struct{})
	s.broadcaster.StartRecordingToSink(eventsStop)
	defer func() {
		s.broadcaster.Shutdown()
		close(eventsStop)
	}()
	if err := s.cache.Run(ctx, s.handler); err != nil {
		return fmt.Errorf("starting the scheduler cache: %w", err)
	}
	// The scheduling loop starts behind the sync barrier, and behind the
	// leader election lease when enabled.
	schedDone := make(chan error, 1)
	go func() { schedDone <- s.schedule(ctx) }()

	var runErr error
	select {
	case <-ctx.Done():
		runErr = <-schedDone
	case runErr = <-schedDone:
	case err := <-serveErr:
		runErr = fmt.Errorf("HTTP server on %s: %w", s.opts.ListenAddress, err)
	}
	if runErr != nil {
		shutdownHTTP(srv)
		return runErr
	}
	klog.InfoS("Shutting down")
	shutdownHTTP(srv)
	return nil
}

// schedule waits for the sync barrier, then runs the scheduling loop (as
// the leader, if leader election is on) until ctx ends. It returns an error
// only if leadership was lost.
func (s *server) schedule(ctx context.Context) error {
	start := time.Now()
	if err := s.cache.WaitForHandlersSync(ctx); err != nil {
		if ctx.Err() == nil {
			klog.ErrorS(err, "Event handlers did not sync")
		}
		return nil
	}
	klog.InfoS("Event handlers synced; cache is ready", "duration", time.Since(start))
	if s.opts.LeaderElection.Enabled {
		return runElected(ctx, s.opts.LeaderElection, s.client, s.scheduler.Run)
	}
	s.scheduler.Run(ctx)
	return nil
}

func shutdownHTTP(srv *http.Server) {
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		klog.ErrorS(err, "HTTP server did not shut down cleanly")
	}
}

func (s *server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/livez", ok)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		synced, pending := s.cache.HandlersSynced()
		if !synced {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "[-]handler-sync failed: waiting for %s\n", strings.Join(pending, ", "))
			return
		}
		_, _ = io.WriteString(w, "[+]handler-sync ok\nok\n")
	})
	mux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	mux.Handle("/debug/cache", s.cache.DumpHandler())
	return mux
}
