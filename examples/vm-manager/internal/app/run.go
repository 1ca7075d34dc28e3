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
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/examples/vm-manager/internal/manager"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/custominformer"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
	bsinformers "github.com/batch-scheduler/batch-scheduler/pkg/generated/informers/externalversions"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// shutdownTimeout bounds the HTTP server's graceful shutdown. The server
// closes a connection that never sent a request only once it is 5 s old
// (an HTTP client may dial one it then does not need), so the bound must
// be longer than that.
const shutdownTimeout = 15 * time.Second

// grantsInformer names the Grants informer in logs and metrics.
const grantsInformer = "grants"

// userAgent identifies the manager to the apiserver and the allocator.
const userAgent = "vm-manager"

// boundPods selects the pods that hold resources on a node: bound and not
// terminated.
var boundPods = fields.AndSelectors(
	fields.OneTermNotEqualSelector("spec.nodeName", ""),
	fields.OneTermNotEqualSelector("status.phase", "Succeeded"),
	fields.OneTermNotEqualSelector("status.phase", "Failed"),
).String()

// restConfig loads the kubeconfig (or the defaults) of o.
func restConfig(o *Options) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig %q: %w", o.Kubeconfig, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	return cfg, nil
}

// Run runs the manager until ctx is done; it returns nil after a clean
// stop. o must be valid (see Validate), and the caller sets logging up.
func Run(ctx context.Context, o *Options) error {
	cfg, err := restConfig(o)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := manager.NewMetrics(reg)
	if err != nil {
		return err
	}
	// The Grants informer's batch_scheduler_custom_informer_* metrics are
	// component-base metrics: a registry of their own, served with reg.
	informerReg := k8smetrics.NewKubeRegistry()

	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         v1alpha1.ExternalWorkloadsResource,
		Example:          &v1alpha1.ExternalWorkload{},
		// The store lives in memory: a restarted manager publishes its
		// VMs again (from --state-file, or none), and must serve
		// resourceVersions above any it served before, so that
		// informers of the old run relist instead of resuming.
		InitialResourceVersion: time.Now().UnixMicro(),
	})
	if err != nil {
		return fmt.Errorf("creating the ExternalWorkload store: %w", err)
	}
	defer store.Close()

	nodeFactory := informers.NewSharedInformerFactory(client, 0)
	podFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = boundPods
	}))
	nodes := nodeFactory.Core().V1().Nodes()
	pods := podFactory.Core().V1().Pods().Informer()
	if err := pods.AddIndexers(manager.PodIndexers()); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	synced := []cache.InformerSynced{nodes.Informer().HasSynced, pods.HasSynced}

	hostSelector, err := labels.Parse(o.HostSelector)
	if err != nil {
		return fmt.Errorf("--host-selector: %w", err)
	}
	mcfg := manager.Config{
		Framework:     o.Framework,
		Owner:         o.Owner,
		Nodes:         nodes.Lister(),
		Pods:          pods.GetIndexer(),
		HostSelector:  hostSelector,
		Store:         store,
		Metrics:       metrics,
		RetryInterval: o.RetryInterval,
	}
	if o.StateFile != "" {
		mcfg.State = manager.FileState{Path: o.StateFile}
	}
	informersToWatch := []cache.SharedIndexInformer{nodes.Informer(), pods}
	var ledgerFactory bsinformers.SharedInformerFactory
	if o.Ledger {
		bsClient, err := versioned.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("creating a client of node ledgers for %s: %w", cfg.Host, err)
		}
		ledgerFactory = bsinformers.NewSharedInformerFactory(bsClient, 0)
		ledgers := ledgerFactory.BatchScheduler().V1alpha1().NodeLedgers()
		mcfg.Ledger = &manager.LedgerConfig{
			Ledgers: ledger.New(bsClient.BatchSchedulerV1alpha1().NodeLedgers()),
			View:    ledgers.Lister(),
			Pods:    client.CoreV1(),
			Placer:  o.LedgerPlacer,
			Require: o.LedgerRequire,
		}
		informersToWatch = append(informersToWatch, ledgers.Informer())
		synced = append(synced, ledgers.Informer().HasSynced)
	}
	var grants cache.SharedIndexInformer
	if o.Framework != "" {
		informerMetrics, err := custominformer.NewMetrics(informerReg)
		if err != nil {
			return fmt.Errorf("registering the grants informer's metrics: %w", err)
		}
		lw, err := custominformer.NewListWatch(&rest.Config{Host: o.GrantsURL, UserAgent: userAgent},
			v1alpha1.SchemeGroupVersion.WithResource(v1alpha1.GrantsResource), "", custominformer.DefaultListTimeout, &v1alpha1.Grant{})
		if err != nil {
			return fmt.Errorf("--grants-url %s: %w", o.GrantsURL, err)
		}
		grants = custominformer.New(lw, &v1alpha1.Grant{}, custominformer.Options{Name: grantsInformer, Metrics: informerMetrics})
		mcfg.Grants = grants.GetStore()
		synced = append(synced, grants.HasSynced)
		informersToWatch = append(informersToWatch, grants)
	}
	// New loads the state file and publishes the Running VMs again, all
	// before the listener serves.
	m, err := manager.New(mcfg)
	if err != nil {
		return err
	}
	for _, inf := range informersToWatch {
		if _, err := inf.AddEventHandler(m.EventHandler()); err != nil {
			return fmt.Errorf("watching for changes: %w", err)
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	defer nodeFactory.Shutdown()
	defer podFactory.Shutdown()
	if ledgerFactory != nil {
		ledgerFactory.Start(ctx.Done())
		defer ledgerFactory.Shutdown()
	}
	grantsDone := make(chan struct{})
	if grants != nil {
		go func() { grants.RunWithContext(ctx); close(grantsDone) }()
	} else {
		close(grantsDone)
	}
	defer func() { cancel(); <-grantsDone }()

	klog.InfoS("Waiting for the first lists", "apiserver", cfg.Host, "grantsURL", o.GrantsURL, "timeout", o.SyncTimeout)
	syncCtx, syncCancel := context.WithTimeout(ctx, o.SyncTimeout)
	ok := cache.WaitForCacheSync(syncCtx.Done(), synced...)
	syncCancel()
	if !ok {
		if ctx.Err() != nil {
			return nil // stopped while waiting
		}
		what := "nodes and pods from " + cfg.Host
		if ledgerFactory != nil {
			what += ", node ledgers from " + cfg.Host + " (is the NodeLedger CRD installed?)"
		}
		if grants != nil {
			what += ", grants from " + o.GrantsURL
		}
		return fmt.Errorf("the first lists of %s did not complete within --sync-timeout %s", what, o.SyncTimeout)
	}

	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.Listen, err)
	}
	srv := &http.Server{
		Handler:           manager.NewHandler(m, store, prometheus.Gatherers{reg, informerReg}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          klog.NewStandardLogger("ERROR"),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	mode := "hybrid"
	switch {
	case grants != nil:
		mode = "two-level"
	case o.Ledger:
		mode = "hybrid with ledgers"
	}
	klog.InfoS("VM manager listening", "address", addr, "mode", mode, "framework", o.Framework,
		"hostSelector", o.HostSelector, "stateFile", o.StateFile, "externalWorkloads", "http://"+addr+store.Path())
	if o.AddressFile != "" {
		if err := writeFileAtomic(o.AddressFile, []byte(addr+"\n")); err != nil {
			_ = srv.Close()
			<-served
			return fmt.Errorf("--address-file: %w", err)
		}
	}

	runDone := make(chan struct{})
	go func() { m.Run(ctx); close(runDone) }()

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
		served <- serveErr
	}
	klog.InfoS("VM manager stopping", "address", addr)
	cancel()
	<-runDone
	// Watch streams end only when the store closes; close it first so
	// that the server's shutdown need not wait for them.
	store.Close()
	sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer scancel()
	var errs []error
	if err := srv.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("shutting down the HTTP server: %w", err), srv.Close())
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("serving on %s: %w", addr, err))
	}
	return errors.Join(errs...)
}

// writeFileAtomic writes data to path through a temporary file in the
// same directory, so that a reader never sees a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
