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

package harness

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
)

// RedirectLogs sends everything klog would print — client-go's, and
// controller-runtime's logger — to a fresh file at path instead of stderr,
// for a program whose output is for a reader (the demo's tables), with
// the in-process scheduler's logging settings applied at -v verbosity. It returns
// the file, for the in-process scheduler: its logging, applied from its
// own flags (-v), replaces klog's output, so it is given the file with
// app.WithLogOutput. The returned function flushes and closes the file.
func RedirectLogs(path, verbosity string) (logFile io.Writer, closeLog func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating the log directory: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the log file: %w", err)
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{
		"logtostderr":     "false", // write to the output set below
		"one_output":      "true",  // each line once, not once per severity
		"stderrthreshold": "FATAL", // errors too go to the file only
	} {
		if err := fs.Set(name, value); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("configuring klog: -%s=%s: %w", name, value, err)
		}
	}
	klog.SetOutput(f)
	// The in-process scheduler applies its logging flags when it starts,
	// and klog's logger is process-wide: applied then, the change would
	// race with the goroutines already logging (informers, the pod
	// watch). Applied here, before any of them runs, the command finds
	// the same settings and leaves them.
	if err := app.ApplyLoggingTo(f, "-v", verbosity); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("applying the scheduler's logging settings: %w", err)
	}
	ctrllog.SetLogger(klog.Background())
	return f, func() {
		klog.Flush()
		f.Close()
	}, nil
}
