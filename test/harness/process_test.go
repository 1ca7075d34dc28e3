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
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcessEnv starts a shell that prints a variable, with the
// environment inherited, extended and empty, and ends it with Kill, which
// Stop then does not count as an error.
func TestProcessEnv(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh: %v", err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep: %v", err)
	}
	t.Setenv("HARNESS_TEST_VAR", "inherited")
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{name: "inherited", want: "var=inherited"},
		{name: "added", env: append(os.Environ(), "HARNESS_TEST_ADDED=yes"), want: "var=inherited added=yes"},
		{name: "none", env: []string{}, want: "var=unset added=unset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p, err := StartProcess(ctx, ProcessSpec{Name: "env", Bin: sh, Dir: t.TempDir(), Env: tc.env,
				Args: []string{"-c", `echo "var=${HARNESS_TEST_VAR-unset} added=${HARNESS_TEST_ADDED-unset}"; exec ` + sleep + ` 60`}})
			if err != nil {
				t.Fatal(err)
			}
			var line string
			err = Poll(ctx, 10*time.Second, "the shell's line", p.Alive, func() (bool, error) {
				b, err := os.ReadFile(p.LogPath)
				line = strings.TrimSpace(string(b))
				return err == nil && line != "", nil
			})
			if err != nil {
				p.Kill()
				t.Fatal(err)
			}
			if !strings.HasPrefix(line, tc.want) {
				t.Errorf("the shell printed %q, want %q", line, tc.want)
			}
			if p.Pid() <= 0 || p.ExitError() != nil {
				t.Errorf("running: pid %d, exit error %v", p.Pid(), p.ExitError())
			}
			if tc.name == "inherited" {
				// SIGUSR1 ends sleep: Signal reaches the program.
				if err := p.Signal(syscall.SIGUSR1); err != nil {
					t.Fatal(err)
				}
				select {
				case <-p.Done():
				case <-time.After(10 * time.Second):
					t.Error("SIGUSR1 did not end the program within 10s")
				}
			}
			p.Kill()
			if err := p.Stop(); err != nil {
				t.Errorf("Stop after Kill: %v, want nil", err)
			}
		})
	}
}

// TestProcessStopAfterOwnExit: a program that ended by itself is still an
// error for Stop.
func TestProcessStopAfterOwnExit(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh: %v", err)
	}
	p, err := StartProcess(context.Background(), ProcessSpec{Name: "exit", Bin: sh, Dir: t.TempDir(), Args: []string{"-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		p.Kill()
		t.Fatal("sh -c 'exit 3' did not exit within 10s")
	}
	if err := p.ExitError(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("ExitError: %v, want exit status 3", err)
	}
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "exited on its own") {
		t.Errorf("Stop: %v, want an error saying it exited on its own", err)
	}
}
