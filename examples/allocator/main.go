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

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/allocator"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
)

func init() {
	// Tests run the program more than once in one process.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		klog.Flush()
		fmt.Fprintln(os.Stderr, "allocator:", err)
		os.Exit(1)
	}
	klog.Flush()
}

// options are the command-line flags.
type options struct {
	kubeconfig    string
	config        string
	stateFile     string
	listen        string
	addressFile   string
	name          string
	interval      time.Duration
	idleTimeout   time.Duration
	grantTTL      time.Duration
	demandTimeout time.Duration
	logs          *logsapi.LoggingConfiguration
}

func newFlags(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("allocator", pflag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster whose Nodes are divided; empty means in-cluster")
	fs.StringVar(&o.config, "config", "", "YAML file of the initial frameworks (ignored when --state-file exists)")
	fs.StringVar(&o.stateFile, "state-file", "", "file the frameworks, revocations and held capacity are saved to (after every admin change, and before grants grow) and loaded from on start")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8090", "address of the grants, admin API, /healthz and /metrics (port 0: any free port)")
	fs.StringVar(&o.addressFile, "address-file", "", "file to write the bound host:port to once listening")
	fs.StringVar(&o.name, "name", "allocator", "issuer written in every grant")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "time between allocation rounds when nothing changes")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 30*time.Second, "how long granted capacity must stay unused before it may go to a framework with unmet demand")
	fs.DurationVar(&o.grantTTL, "grant-ttl", 0, "when positive, grants expire this long after they were published and are renewed while the allocator runs")
	fs.DurationVar(&o.demandTimeout, "demand-timeout", 5*time.Second, "timeout of one read of a demand report")
	o.logs = logsapi.NewLoggingConfiguration()
	logsapi.AddFlags(o.logs, fs)
	return fs
}

func (o *options) validate() error {
	switch {
	case o.interval <= 0:
		return fmt.Errorf("--interval %s: must be positive", o.interval)
	case o.idleTimeout < 0:
		return fmt.Errorf("--idle-timeout %s: must not be negative", o.idleTimeout)
	case o.grantTTL < 0:
		return fmt.Errorf("--grant-ttl %s: must not be negative", o.grantTTL)
	case o.grantTTL > 0 && o.grantTTL < 3*o.interval:
		return fmt.Errorf("--grant-ttl %s: must be at least 3 × --interval (%s) so grants are renewed in time", o.grantTTL, o.interval)
	case o.demandTimeout <= 0:
		return fmt.Errorf("--demand-timeout %s: must be positive", o.demandTimeout)
	case o.name == "":
		return errors.New("--name: must not be empty")
	}
	return nil
}

// loadRegistry reads the state file if it exists, else the config file,
// else starts empty; with a state file, the result is saved to it at once.
func (o *options) loadRegistry() (*frameworks.File, error) {
	reg := &frameworks.File{}
	from := ""
	if o.stateFile != "" {
		if _, err := os.Stat(o.stateFile); err == nil {
			from = o.stateFile
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--state-file: %w", err)
		}
	}
	if from == "" && o.config != "" {
		from = o.config
	}
	if from != "" {
		var err error
		if reg, err = frameworks.Load(from); err != nil {
			return nil, err
		}
	}
	klog.InfoS("Frameworks loaded", "from", from, "frameworks", len(reg.Frameworks), "revoked", len(reg.Revoked), "held", len(reg.Held))
	if o.stateFile != "" && from != o.stateFile {
		if err := frameworks.Save(o.stateFile, reg); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// writeAddress writes addr to path atomically.
func writeAddress(path, addr string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return fmt.Errorf("--address-file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("--address-file: %w", err)
	}
	return nil
}

// run is the program: it returns when ctx ends (after a graceful
// shutdown) or on error.
func run(ctx context.Context, args []string) error {
	var o options
	fs := newFlags(&o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := logsapi.ValidateAndApply(o.logs, nil); err != nil {
		return fmt.Errorf("logging flags: %w", err)
	}
	if err := o.validate(); err != nil {
		return err
	}
	reg, err := o.loadRegistry()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %q: %w", o.kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	a, err := allocator.New(client, allocator.Options{
		Name: o.name, Interval: o.interval, IdleTimeout: o.idleTimeout, GrantTTL: o.grantTTL,
		DemandTimeout: o.demandTimeout, StateFile: o.stateFile, Registry: reg,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	addr := ln.Addr().String()
	klog.InfoS("Listening", "address", addr, "grants", "http://"+addr+a.Store().Path())
	if o.addressFile != "" {
		if err := writeAddress(o.addressFile, addr); err != nil {
			_ = ln.Close()
			return err
		}
	}
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: klog.NewStandardLogger("ERROR")}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(ln)
		cancel()
	}()
	runErr := a.Run(ctx) // closes the store, ending the watches
	// Shutdown closes a connection that never sent a request only once it
	// is 5 s old (an HTTP client may dial one it then does not need), so
	// it must be given longer than that.
	shutdownCtx, stop := context.WithTimeout(context.Background(), 15*time.Second)
	defer stop()
	shutErr := srv.Shutdown(shutdownCtx)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", addr, err)
	}
	if runErr != nil {
		return runErr
	}
	if shutErr != nil {
		return fmt.Errorf("shutting down the server on %s: %w", addr, shutErr)
	}
	klog.InfoS("Allocator stopped")
	return nil
}
