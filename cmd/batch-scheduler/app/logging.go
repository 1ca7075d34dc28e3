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
	"fmt"
	"io"
	"sync"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/version"

	// Registers --version on pflag.CommandLine (see addVersionFlag).
	_ "k8s.io/component-base/version/verflag"
)

func init() {
	// Logging is process-wide and applied once, by the first command run
	// in the process. Tests, the demo and embedders run the command more
	// than once per process: a later run with the same logging settings
	// goes on, one with other settings fails with a usage error.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

// loggingMu serialises applying the logging configuration, which
// commands running concurrently in one process would otherwise race on.
var loggingMu sync.Mutex

// WithLogOutput sends the logs to w instead of stderr (and stdout, with
// --log-*-split-stream), e.g. for a program that runs the command
// in-process and keeps its own terminal output readable. Like every
// logging setting, it is applied by the first command run in the process.
func WithLogOutput(w io.Writer) Option {
	return func(r *registries) error {
		r.logOutput = w
		return nil
	}
}

// applyLogging validates and applies --logging-format, -v, --vmodule and
// the other logging flags, with the logging feature gates of
// --feature-gates (e.g. ContextualLogging=false). Logs go to output if it
// is not nil, else to stderr.
func applyLogging(o *Options, output io.Writer) error {
	loggingMu.Lock()
	defer loggingMu.Unlock()
	var streams *logsapi.LoggingOptions
	if output != nil {
		streams = &logsapi.LoggingOptions{ErrorStream: output, InfoStream: output}
	}
	if err := logsapi.ValidateAndApplyWithOptions(o.Logs, streams, o.FeatureGate); err != nil {
		return fmt.Errorf("logging flags (--logging-format %q, -v, --vmodule, --feature-gates): %w", o.Logs.Format, err)
	}
	// kubernetes_feature_enabled, in the legacy registry.
	o.FeatureGate.AddMetrics()
	return nil
}

// addVersionFlag adds verflag's --version to fs: "--version" prints the
// version, "--version=raw" all the build information, "--version=vX.Y.Z"
// overrides the version reported (in logs and metrics).
//
// verflag registers the flag on the process-wide pflag.CommandLine. pflag
// writes to every Flag it adds to a set, so fs gets a copy that shares
// verflag's value; the shared Flag is only read (see shadowGlobalFlags).
func addVersionFlag(fs *pflag.FlagSet) {
	f := *pflag.CommandLine.Lookup(versionFlag)
	fs.AddFlag(&f)
}

// versionFlag is the flag verflag's init registers on pflag.CommandLine.
const versionFlag = "version"

// shadowGlobalFlags gives cmd's persistent flags a copy of every flag on
// pflag.CommandLine that fs does not already have. Cobra merges
// pflag.CommandLine into each command it executes by adding those very
// Flag values to the command's sets, which rewrites them; two commands
// starting in one process (tests, embedders) would then write the same
// Flags concurrently. With a copy already present, cobra finds the name
// and leaves the global Flag alone.
func shadowGlobalFlags(persistent, fs *pflag.FlagSet) {
	pflag.CommandLine.VisitAll(func(g *pflag.Flag) {
		if persistent.Lookup(g.Name) != nil {
			return
		}
		if f := fs.Lookup(g.Name); f != nil {
			persistent.AddFlag(f)
			return
		}
		c := *g
		persistent.AddFlag(&c)
	})
}

// printVersionIfRequested prints the version to out if --version or
// --version=raw was given, and reports whether it did. The flag's value is
// process-wide (verflag's), so it is reset after printing: a later command
// in this process starts without it.
func printVersionIfRequested(fs *pflag.FlagSet, out io.Writer) bool {
	f := fs.Lookup("version")
	if f == nil {
		return false
	}
	switch f.Value.String() {
	case "raw":
		fmt.Fprintf(out, "%#v\n", version.Get())
	case "true":
		fmt.Fprintf(out, "batch-scheduler %s\n", version.Get())
	default:
		return false
	}
	_ = f.Value.Set("false")
	return true
}

// ApplyLogging applies the logging flags among args (their defaults when
// there are none) to the process, as the command does when it starts.
// Logging is process-wide: a program that runs the command in-process
// while other goroutines already log, such as a test, calls it first, so
// that the state is set before anything reads it; the command then finds
// it applied. Other flags in args are an error.
func ApplyLogging(args ...string) error { return ApplyLoggingTo(nil, args...) }

// ApplyLoggingTo is ApplyLogging with the logs sent to output (stderr if
// nil), as WithLogOutput(output) does for the command: a program that
// runs the command with WithLogOutput applies the same output first.
func ApplyLoggingTo(output io.Writer, args ...string) error {
	o := NewOptions()
	fs := pflag.NewFlagSet("batch-scheduler", pflag.ContinueOnError)
	logsapi.AddFlags(o.Logs, fs)
	o.FeatureGate.AddFlag(fs)
	if err := fs.Parse(args); err != nil {
		return usageError(err)
	}
	if err := applyLogging(o, output); err != nil {
		return usageError(err)
	}
	return nil
}
