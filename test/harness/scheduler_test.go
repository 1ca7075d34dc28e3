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
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// TestSchedulerServingAndExitCode starts the command with the caller's
// serving certificate and a kubeconfig that does not exist: it serves
// with the files given, reads with the client given, and returns at once
// with a code ExitCode reports.
func TestSchedulerServingAndExitCode(t *testing.T) {
	dir := t.TempDir()
	client := &http.Client{}
	serving := &Serving{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), Client: client}
	s, err := StartScheduler(context.Background(), SchedulerOptions{Kubeconfig: filepath.Join(dir, "missing"),
		Secure: &controlplane.ControlPlane{Dir: dir}, Serving: serving})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]string{{"--tls-cert-file", serving.CertFile}, {"--tls-private-key-file", serving.KeyFile}} {
		if !containsPair(s.Flags, f[0], f[1]) {
			t.Errorf("flags %q lack %s %s", s.Flags, f[0], f[1])
		}
	}
	if s.client != client {
		t.Error("the scheduler does not read its endpoints with the client given")
	}
	err = Poll(context.Background(), time.Minute, "the command to return", nil, func() (bool, error) {
		_, exited := s.ExitCode()
		return exited, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := s.ExitCode(); code == 0 {
		t.Errorf("the command returned 0 without a kubeconfig; stderr: %s", s.Stderr())
	}
	if err := s.Stop(); err == nil {
		t.Error("Stop after a non-zero exit: nil, want an error")
	}
}

func containsPair(flags []string, name, value string) bool {
	for i := 0; i+1 < len(flags); i++ {
		if flags[i] == name && flags[i+1] == value {
			return true
		}
	}
	return false
}
