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
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	cliflag "k8s.io/component-base/cli/flag"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache/debugger"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
	"github.com/batch-scheduler/batch-scheduler/pkg/scheduler"
	"github.com/batch-scheduler/batch-scheduler/pkg/standing"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy"
	"github.com/batch-scheduler/batch-scheduler/pkg/tenancy/status"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/intree"
)

// Option customises the command, for out-of-tree builds.
type Option func(*registries) error

type registries struct {
	handlers *eventhandlers.Registry
	sources  *custominformer.SourceRegistry
	plugins  *frameworkruntime.Registry
	// orderPolicies are the tenant queue order policies the
	// configuration's tenantQueueOrder may name.
	orderPolicies tenancy.OrderPolicies
	// logOutput, if set, replaces stderr and stdout as the destination of
	// logs (WithLogOutput).
	logOutput io.Writer
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

// WithTenantQueueOrder adds a policy that orders jobs across tenant
// queues under name, for the configuration's tenantQueueOrder to choose.
func WithTenantQueueOrder(name string, policy tenancy.OrderPolicy) Option {
	return func(r *registries) error { return r.orderPolicies.Register(name, policy) }
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
	// The in-tree lists, plus what vendors registered process-wide (their
	// init functions), plus the options: private registries, so options
	// never leak into the process-wide ones.
	regs := &registries{
		handlers: intree.NewRegistry(),
		sources:  custominformer.NewInTreeSourceRegistry(),
		plugins:  plugins.NewInTreeRegistry(),
		// The tenant queue order policies: the in-tree ones, plus the
		// options'.
		orderPolicies: tenancy.InTreeOrderPolicies(),
	}
	optErr := regs.handlers.Merge(eventhandlers.GlobalRegistry())
	if err := regs.sources.Merge(custominformer.GlobalSourceRegistry()); err != nil && optErr == nil {
		optErr = err
	}
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
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError(fmt.Errorf("batch-scheduler takes no arguments, only flags; got %q", args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if optErr != nil {
				return usageError(optErr)
			}
			if printVersionIfRequested(cmd.Flags(), cmd.OutOrStdout()) {
				return nil
			}
			if err := applyLogging(o, regs.logOutput); err != nil {
				return usageError(err)
			}
			cliflag.PrintFlags(cmd.Flags()) // at -v 1
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background())
			return Run(ctx, cmd.OutOrStdout(), o, regs)
		},
	}
	// Every error of flag parsing (unknown flag, bad value) is a usage
	// error: exit code 2.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(flagError(err)) })
	addAll(cmd.Flags(), fss)
	shadowGlobalFlags(cmd.PersistentFlags(), cmd.Flags())
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
	return cmd
}

// Execute runs cmd and returns the process exit code: 0 on success, 2 for
// a usage or configuration error (an *ExitError with Code 2: flag errors,
// arguments, invalid settings), 1 for anything else. The error is printed
// on one line. Logs are flushed before it returns.
func Execute(cmd *cobra.Command) int {
	err := cmd.Execute()
	klog.Flush()
	if err == nil {
		return 0
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "batch-scheduler: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}

// Run runs the scheduler until ctx is done.
func Run(ctx context.Context, out io.Writer, o *Options, regs *registries) error {
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
	if err := o.Validate(); err != nil {
		return usageError(err)
	}
	if err := o.Serving.Validate(); err != nil {
		return usageError(err)
	}
	if err := validateMetricsOptions(o.Metrics); err != nil {
		return usageError(err)
	}
	// Before any metric is registered (newServer): component-base reads
	// these settings when it creates a metric.
	applyMetricsOptions(o.Metrics)
	// Before the informers list the cluster: the initial sync is when the
	// heap grows most.
	applyMemoryLimit(o.MemoryLimitRatio)
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
		f, err := config.LoadContext(ctx, o.ConfigPath)
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
	apiHealth := newAPIHealth()
	apiHealth.wrap(restConfig)

	s, err := newServer(ctx, o, regs, cfg, selector, restConfig)
	if err != nil {
		return err
	}
	s.apiHealth = apiHealth
	serving, err := o.Serving.config(o.Kubeconfig)
	if err != nil {
		return err
	}
	return s.run(ctx, serving)
}

type server struct {
	opts      *Options
	client    kubernetes.Interface
	cache     *cache.SchedulerCache
	handler   eventhandlers.Interface
	scheduler *scheduler.Scheduler
	events    *eventRecording
	// registry holds the batch_scheduler_* metrics; see metricsHandler.
	registry k8smetrics.KubeRegistry
	// watchdog fails /healthz, /livez and /readyz when the elector is
	// stuck; nil without leader election.
	watchdog *leaderelection.HealthzAdaptor
	// pdbSynced reports whether preemption's PodDisruptionBudget informer
	// has synced.
	pdbSynced toolscache.InformerSynced
	// informers is the native informer factory of the cache and the
	// plugins; /readyz names its informers that have not synced.
	informers informers.SharedInformerFactory
	// configz serves the effective configuration at /configz.
	configz http.Handler
	// verify configures the cache consistency checker
	// (/debug/cache/verify, SIGUSR2).
	verify debugger.VerifyOptions
	// apiHealth logs failing API requests and says why in /readyz.
	apiHealth *apiHealth
	// queueStatus publishes the queues' status and metrics while this
	// instance leads.
	queueStatus *status.Writer
}

// protobufConfig returns a copy of rc that speaks protobuf, as
// kube-scheduler's clients do: built-in objects (150,000 pods in the
// initial list of a large cluster) decode several times faster and with
// less garbage than from JSON. Only for clients of built-in types: custom
// resources are served as JSON only, so the dynamic client and what event
// handlers build from the original configuration keep JSON.
func protobufConfig(rc *rest.Config) *rest.Config {
	c := rest.CopyConfig(rc)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}

func newServer(ctx context.Context, o *Options, regs *registries, cfg *config.File, selector labels.Selector, restConfig *rest.Config) (*server, error) {
	client, err := kubernetes.NewForConfig(protobufConfig(restConfig))
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	// The batch_scheduler_* metrics, in the command's own component-base
	// registry, served with the legacy registry (process, Go, client-go);
	// see metricsHandler. Run applied the metric flags before.
	reg := k8smetrics.NewKubeRegistry()
	all, err := NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	m, sm, fm := all.Core, all.Scheduler, all.Framework
	eventsConfig := protobufConfig(restConfig)
	eventsConfig.QPS, eventsConfig.Burst = o.EventsQPS, o.EventsBurst
	eventClient, err := kubernetes.NewForConfig(eventsConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	// The consistency checker lists every node and pod: its own client,
	// with its own rate limit, so that its requests never delay binds.
	verifyClient, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restConfig), "cache-verify"))
	if err != nil {
		return nil, fmt.Errorf("creating the consistency checker's client: %w", err)
	}
	rec := newEventRecording(eventClient)
	recorder := rec.recorder("batch-scheduler")
	// One informer factory for the cache and the plugins, so that a lister
	// a plugin reads is fed by the informer the cache runs. Its client
	// reads pods and nodes from the watch stream without copying them
	// (informerhost.NewInformerClient).
	informerClient, err := informerhost.NewInformerClient(protobufConfig(restConfig))
	if err != nil {
		return nil, fmt.Errorf("creating the informers' client: %w", err)
	}
	factory := informerhost.NewInformerFactory(informerClient, 0)
	var tuning config.Tuning
	if cfg != nil {
		tuning = cfg.Tuning
	}
	if err := checkBackoffs(tuning); err != nil {
		return nil, usageError(fmt.Errorf("%s: %w", cfg.Path, err))
	}
	profiles, queueSort, err := buildProfiles(ctx, o.SchedulerNames, cfg, regs.plugins, &handle{client: client, recorder: recorder, informers: factory, restConfig: restConfig},
		frameworkruntime.WithMetrics(fm), frameworkruntime.WithParallelism(tuning.Parallelism))
	if err != nil {
		return nil, usageError(err)
	}
	if order := tuning.TenantQueueOrder; order != "" {
		// The name's form is the file's validation's; whether a policy of
		// that name is registered, the command's.
		if _, err := regs.orderPolicies.Lookup(order); err != nil {
			return nil, usageError(fmt.Errorf("%s: tenantQueueOrder: %w", cfg.Path, err))
		}
	}
	resources := resourcesNeeded(profiles)
	klog.V(2).InfoS("Informers needed by the profiles' plugins", "resources", resources)
	c, err := cache.New(cache.Options{
		SchedulerNames:  o.SchedulerNames,
		NodeSelector:    selector,
		Client:          client,
		DynamicClient:   dyn,
		InformerFactory: factory,
		Metrics:         m,
		Queue:           schedulingqueue.Options{Less: queueSort, InitialBackoff: tuning.InitialBackoff, MaxBackoff: tuning.MaxBackoff},
		Tenancy:         tenancy.Options{OrderPolicy: tuning.TenantQueueOrder, OrderPolicies: regs.orderPolicies},
		Resources:       resources,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the scheduler cache: %w", err)
	}
	h, err := eventhandlers.NewEventHandler(ctx, regs.handlers, o.EventHandler, c, cfg.HandlerArgs(o.EventHandler), restConfig)
	if err != nil {
		return nil, usageError(err)
	}
	if cfg != nil && len(cfg.CustomInformers()) > 0 {
		for i, ci := range cfg.CustomInformers() {
			b, err := custominformer.Build(ctx, regs.sources, cfg.Path, cfg.Line(fmt.Sprintf("customInformers[%d]", i)), ci, custominformer.WithMetrics(all.CustomInformers))
			if err != nil {
				return nil, usageError(err)
			}
			if err := c.AddCustomInformer(cache.CustomInformer{Name: b.Name, Resource: b.Resource, Informer: b.Informer, ListerWatcher: b.ListerWatcher}); err != nil {
				return nil, usageError(fmt.Errorf("%s: line %d: %w", cfg.Path, cfg.Line(fmt.Sprintf("customInformers[%d]", i)), err))
			}
		}
	}
	// Preemption reads PodDisruptionBudgets; asking the factory for the
	// informer makes the cache's Run start it, and schedule waits for it.
	pdbs := factory.Policy().V1().PodDisruptionBudgets()
	sched, err := scheduler.New(scheduler.Options{Cache: c, Queue: c.Queue(), Client: client, Profiles: profiles, Recorder: recorder, Metrics: sm,
		PDBLister: pdbs.Lister(), BindConcurrency: o.BindConcurrency,
		PercentageOfNodesToScore: tuning.PercentageOfNodesToScore, ProfilePercentageOfNodesToScore: tuning.ProfilePercentageOfNodesToScore,
		NoRankingReuse: !o.FeatureGate.Enabled(OpportunisticBatching)})
	if err != nil {
		return nil, err
	}
	verify := debugger.VerifyOptions{Client: verifyClient}
	// A handler built on the default one places ExternalWorkloads by its
	// node label; the checker must place them the same way.
	if l, ok := h.(eventhandlers.ExternalWorkloadNodeLabeler); ok {
		verify.ExternalWorkloadNodeLabel = l.ExternalWorkloadNodeLabel()
	}
	qs, err := status.New(status.Options{Queues: status.FromTenancy(c.TenantQueueStatuses), Client: dyn, Metrics: m})
	if err != nil {
		return nil, err
	}
	effective, err := newEffectiveConfig(o, cfg, profiles)
	if err != nil {
		return nil, usageError(err)
	}
	configz, err := configzHandler(effective)
	if err != nil {
		return nil, err
	}
	return &server{opts: o, client: client, cache: c, handler: h, scheduler: sched, events: rec, registry: reg,
		pdbSynced: pdbs.Informer().HasSynced, informers: factory, verify: verify, queueStatus: qs, configz: configz}, nil
}

func (s *server) run(ctx context.Context, serving *servingConfig) error {
	klog.InfoS("Starting batch-scheduler", "version", version.Get().GitVersion, "eventHandler", s.opts.EventHandler, "schedulerNames", s.opts.SchedulerNames)
	if s.opts.LeaderElection.Enabled {
		s.watchdog = leaderelection.NewLeaderHealthzAdaptor(leaderWatchdogTimeout)
	}
	stopServing, err := s.serve(ctx, serving)
	if err != nil {
		return err
	}
	defer stopServing()
	// Events keep being written until everything else has stopped.
	stopEvents, err := s.events.start(ctx)
	if err != nil {
		return fmt.Errorf("starting event recording: %w", err)
	}
	defer stopEvents()
	if err := s.cache.Run(ctx, s.handler); err != nil {
		return fmt.Errorf("starting the scheduler cache: %w", err)
	}
	// SIGUSR2 checks the cache against its sources and logs the result,
	// as kube-scheduler's cache comparer does.
	go debugger.VerifyOnSignal(ctx, s.cache, s.verify, syscall.SIGUSR2)
	// The scheduling loop starts behind the sync barrier, and behind the
	// leader election lease when enabled.
	schedDone := make(chan error, 1)
	go func() { schedDone <- s.schedule(ctx) }()

	var runErr error
	select {
	case <-ctx.Done():
		runErr = <-schedDone
	case runErr = <-schedDone:
	}
	if runErr != nil {
		return runErr
	}
	klog.InfoS("Shutting down")
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
	if !toolscache.WaitForCacheSync(ctx.Done(), s.pdbSynced) {
		return nil
	}
	klog.InfoS("Event handlers synced; cache is ready", "duration", time.Since(start))
	if s.opts.LeaderElection.Enabled {
		return runElected(ctx, s.opts.LeaderElection, s.client, s.watchdog, s.lead)
	}
	s.lead(ctx)
	return nil
}

// lead is what the leader runs: the scheduling loop and, beside it, the
// queue status writer.
func (s *server) lead(ctx context.Context) {
	go s.queueStatus.Run(ctx)
	s.scheduler.Run(ctx)
}

// demand is the report served at /demand: the cache's, named after the
// handler's framework when it has one (the two-level handler), with the
// grants the handler applied (eventhandlers.GrantObserver). The order of
// the reads is the report's promise: synced before anything, the grants
// applied before the usage, so that the usage counts every placement
// under the versions the report acknowledges.
func (s *server) demand() *demand.Report {
	synced, _ := s.cache.HandlersSynced()
	var observed map[string]string
	if o, ok := s.handler.(eventhandlers.GrantObserver); ok {
		observed = o.ObservedGrants()
	}
	r := s.cache.Demand()
	r.Synced = synced
	if synced {
		r.ObservedGrants = observed
	}
	if f, ok := s.handler.(eventhandlers.FrameworkMember); ok {
		r.Framework = f.Framework()
	}
	return r
}

// serve starts the HTTP endpoints (see serving.go, health.go); the
// returned function stops them and waits until they have.
func (s *server) serve(ctx context.Context, serving *servingConfig) (stop func(), err error) {
	checks := newHealthChecks(ctx, s.cache.HandlersSynced, s.watchdog)
	if s.apiHealth != nil {
		checks.ready = append(checks.ready, s.apiHealth.readyCheck(s.cache.HandlersSynced))
	}
	checks.ready = append(checks.ready, eventBacklogCheck(s.cache.EventBacklog, s.opts.MaxEventDelay), informerSyncCheck(s.informers))
	handlers := map[string]http.Handler{
		debugger.DumpPath:   debugger.DumpHandler(s.cache),
		debugger.VerifyPath: debugger.VerifyHandler(s.cache, s.verify),
		demand.Path:         demand.Handler(s.demand),
		standing.Path:       standing.Handler(s.scheduler.Standing),
		ConfigzPath:         s.configz,
	}
	maps.Copy(handlers, s.opts.Serving.debugHandlers())
	mux, err := endpointsMux(checks, metricsHandler(s.registry), handlers)
	if err != nil {
		serving.close()
		return nil, err
	}
	stopCh := make(chan struct{})
	wait, err := serving.serve(mux, stopCh)
	if err != nil {
		close(stopCh)
		return nil, err
	}
	return func() {
		close(stopCh)
		wait()
	}, nil
}
