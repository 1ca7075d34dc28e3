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
	"net/http"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/test/harness"
)

const (
	// configPath is the scheduler configuration file the demo writes and
	// passes with --config-path, relative to the working directory.
	configPath = "_output/demo/batch-scheduler.yaml"
	// vmInformer names the custom informer that reads the VM manager, in
	// the scheduler's log, metrics and /readyz.
	vmInformer = "vm-manager"
	// grantInformer names the custom informer that reads the allocator.
	grantInformer = "allocator"
)

// vmUsage is, by node, the usage the scheduler should count for the VMs:
// every Running VM, on its host, under defaulthandler.ExternalWorkloadKey.
func vmUsage(vms []harness.VM) map[string]harness.External {
	out := map[string]harness.External{}
	for _, v := range vms {
		if v.Phase != "Running" {
			continue
		}
		e := out[v.Host]
		e.Keys = append(e.Keys, defaulthandler.ExternalWorkloadKey(&v1alpha1.ExternalWorkload{ObjectMeta: metav1.ObjectMeta{Name: v.Name}}))
		e.Usage.MilliCPU += v.CPU.MilliValue()
		e.Usage.Memory += v.Memory.Value()
		out[v.Host] = e
	}
	return out
}

// waitForVMsInCache waits until /debug/cache counts the manager's running
// VMs as it lists them, and nothing else of outside Kubernetes.
func waitForVMsInCache(ctx context.Context, e *env) error {
	vms, err := e.vms.List(ctx)
	if err != nil {
		return err
	}
	want := vmUsage(vms)
	return harness.Poll(ctx, waitTimeout, "/debug/cache to count the VMs' usage as the VM manager lists them", e.sched.Alive, func() (bool, error) {
		d, err := e.sched.Dump(ctx)
		if err != nil {
			return false, err
		}
		for _, n := range d.Nodes {
			w := want[n.Name]
			if !harness.SameKeys(n.ExternalKeys, w.Keys) || n.External.String() != w.Usage.String() {
				return false, nil
			}
		}
		return true, nil
	})
}

// startVM asks the VM manager for v on its host and expects it placed
// (201), then waits until /debug/cache counts it.
func startVM(v harness.VMSpec) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		return progress(fmt.Sprintf("POST /vms %s: the VM manager places it and publishes its ExternalWorkload; waiting for /debug/cache to count it", v), func() error {
			got, status, err := e.vms.Create(ctx, v)
			if err != nil {
				return err
			}
			if status != http.StatusCreated || got.Host != v.Host {
				return fmt.Errorf("VM %s: answer %d, host %q, phase %s (%s); expected 201 on %s", v.Name, status, got.Host, got.Phase, got.Message, v.Host)
			}
			return waitForVMsInCache(ctx, e)
		})
	}
}

// refuseVM asks the VM manager for v and expects a refusal (409) whose
// message contains want, which it prints.
func refuseVM(v harness.VMSpec, want string) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		var refusal string
		err := progress(fmt.Sprintf("POST /vms %s: the VM manager should refuse it", v), func() error {
			_, status, err := e.vms.Create(ctx, v)
			var ae *harness.APIError
			if !errors.As(err, &ae) || status != http.StatusConflict || !strings.Contains(ae.Message, want) {
				return fmt.Errorf("VM %s: answer %d (%v); expected 409 with %q", v.Name, status, err, want)
			}
			refusal = fmt.Sprintf("%s: %s", ae.Reason, ae.Message)
			return nil
		})
		if err == nil {
			fmt.Println("    refused:", refusal)
		}
		return err
	}
}

// deleteVM deletes v through the admin API and, in the hybrid story,
// waits until /debug/cache no longer counts it.
func deleteVM(v harness.VMSpec) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		return progress(fmt.Sprintf("DELETE /vms/%s: its ExternalWorkload is deleted", v.Name), func() error {
			if err := e.vms.Delete(ctx, v.Name); err != nil || e.alloc != nil {
				return err
			}
			return waitForVMsInCache(ctx, e)
		})
	}
}

// applyAll applies changes in order, after a blank line that sets their
// progress lines apart from the expected outcome.
func applyAll(changes ...func(context.Context, *env) error) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		fmt.Println()
		for _, c := range changes {
			if err := c(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}
}

// informer is one customInformers entry of the scheduler configuration.
type informer struct{ name, resource, url string }

// writeConfig writes the scheduler configuration file: the custom
// informers, and the event handlers' sections (YAML lines, empty for the
// default handler).
func writeConfig(path string, informers []informer, handlers ...string) error {
	lines := []string{
		"# Written by the demo (hack/demo). See docs/external-resource-managers.md.",
		"apiVersion: batch-scheduler.io/v1alpha1",
		"kind: SchedulerConfiguration",
	}
	if len(handlers) > 0 {
		lines = append(lines, "eventHandlers:")
		lines = append(lines, handlers...)
	}
	lines = append(lines, "customInformers:")
	for _, i := range informers {
		lines = append(lines,
			"- name: "+i.name,
			"  resource: "+i.resource,
			"  source:",
			"    http:",
			"      url: "+i.url)
	}
	return writeConfigLines(path, lines)
}

// writeConfigLines writes the lines of a scheduler configuration to path.
func writeConfigLines(path string, lines []string) error {
	text := strings.Join(append(lines, ""), "\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the config directory: %w", err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("writing the scheduler config %s: %w", path, err)
	}
	return nil
}

// externalNote describes the external usage the cache counts, by node,
// e.g. "edge: externalworkload/vm-analytics"; empty when there is none.
func externalNote(d *cache.Dump) string {
	var parts []string
	for _, n := range d.Nodes {
		if len(n.ExternalKeys) > 0 {
			parts = append(parts, n.Name+": "+strings.Join(n.ExternalKeys, ", "))
		}
	}
	return strings.Join(parts, "; ")
}
