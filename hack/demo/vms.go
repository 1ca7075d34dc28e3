package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
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

// httpClient talks to the example programs' plain HTTP APIs on loopback.
var httpClient = &http.Client{Timeout: 5 * time.Second}

// apiError is a 4xx or 5xx answer of an example program's admin API.
type apiError struct {
	method, url string
	status      int
	// body is the answer, e.g. {"error": "...", "reason": "..."}.
	body string
	// Error and Reason are decoded from body when it is such a JSON.
	Message string `json:"error"`
	Reason  string `json:"reason"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.url, e.status, strings.TrimSpace(e.body))
}

// callJSON sends in (if not nil) as JSON to url and decodes a 2xx answer
// into out (if not nil). It returns the status; other statuses are an
// *apiError.
func callJSON(ctx context.Context, method, url string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("%s %s: encoding the request: %w", method, url, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, url, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: reading the answer: %w", method, url, err)
	}
	if resp.StatusCode >= 300 {
		e := &apiError{method: method, url: url, status: resp.StatusCode, body: string(b)}
		_ = json.Unmarshal(b, e)
		return resp.StatusCode, e
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decoding the answer: %w", method, url, err)
		}
	}
	return resp.StatusCode, nil
}

// vmManager is examples/vm-manager, run as a separate process and driven
// through its admin API (POST /vms, DELETE /vms/{name}, GET /vms). It
// publishes every running VM as an ExternalWorkload, which the scheduler
// reads through a custom informer (source http).
type vmManager struct {
	*process
}

// startVMManager starts bin on a free loopback port, watching the cluster
// of kubeconfig. With framework and grantsURL set it runs in two-level
// mode (it places VMs only inside its grants); otherwise hybrid.
func startVMManager(ctx context.Context, bin, kubeconfig, framework, grantsURL string) (*vmManager, error) {
	args := []string{"--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "-v", "2", "--retry-interval", "1s"}
	if framework != "" {
		args = append(args, "--framework", framework, "--grants-url", grantsURL)
	}
	p, err := startProcess(ctx, "vm-manager", bin, args...)
	if err != nil {
		return nil, err
	}
	return &vmManager{p}, nil
}

// vmSpec is what the demo asks of a VM; node is optional.
type vmSpec struct {
	name, node  string
	cpu, memory string
}

func (v vmSpec) String() string {
	where := ""
	if v.node != "" {
		where = " on " + v.node
	}
	return fmt.Sprintf("%s%s (%s cpu, %s)", v.name, where, v.cpu, v.memory)
}

// vm is a VM as the manager's API shows it.
type vm struct {
	Name    string            `json:"name"`
	CPU     resource.Quantity `json:"cpu"`
	Memory  resource.Quantity `json:"memory"`
	Host    string            `json:"host,omitempty"`
	Phase   string            `json:"phase"`
	Message string            `json:"message,omitempty"`
	Created metav1.Time       `json:"created"`
}

// create asks for a VM: POST /vms. It returns the VM (201 placed, 202
// pending) or the manager's refusal as an *apiError.
func (m *vmManager) create(ctx context.Context, v vmSpec) (*vm, int, error) {
	body := map[string]string{"name": v.name, "cpu": v.cpu, "memory": v.memory}
	if v.node != "" {
		body["host"] = v.node
	}
	out := &vm{}
	status, err := callJSON(ctx, http.MethodPost, m.url()+"/vms", body, out)
	if err != nil {
		return nil, status, err
	}
	return out, status, nil
}

// remove deletes a VM: DELETE /vms/{name}.
func (m *vmManager) remove(ctx context.Context, name string) error {
	_, err := callJSON(ctx, http.MethodDelete, m.url()+"/vms/"+name, nil, nil)
	return err
}

// list returns the VMs, sorted by name: GET /vms.
func (m *vmManager) list(ctx context.Context) ([]vm, error) {
	var out struct {
		Items []vm `json:"items"`
	}
	if _, err := callJSON(ctx, http.MethodGet, m.url()+"/vms", nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// externalUsage is what the cache should count on one node for the VMs.
type externalUsage struct {
	keys  []string
	usage resources.Resource
}

// expected returns, by node, the usage the scheduler should account for
// the manager's VMs: every Running VM, on its host, under
// defaulthandler.ExternalWorkloadKey.
func (m *vmManager) expected(ctx context.Context) (map[string]externalUsage, error) {
	vms, err := m.list(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]externalUsage{}
	for _, v := range vms {
		if v.Phase != "Running" {
			continue
		}
		e := out[v.Host]
		e.keys = append(e.keys, defaulthandler.ExternalWorkloadKey(&v1alpha1.ExternalWorkload{ObjectMeta: metav1.ObjectMeta{Name: v.Name}}))
		e.usage.MilliCPU += v.CPU.MilliValue()
		e.usage.Memory += v.Memory.Value()
		out[v.Host] = e
	}
	return out, nil
}

// externalAgrees reports whether /debug/cache counts exactly the usage of
// want on each node: the same keys and the same amounts.
func externalAgrees(d *cache.Dump, want map[string]externalUsage) bool {
	seen := 0
	for _, n := range d.Nodes {
		w, ok := want[n.Name]
		if ok {
			seen++
		}
		if !sameKeys(n.ExternalKeys, w.keys) || n.External.String() != w.usage.String() {
			return false
		}
	}
	return seen == len(want)
}

// waitForVMsInCache waits until /debug/cache counts the manager's running
// VMs as it lists them.
func waitForVMsInCache(ctx context.Context, e *env) error {
	want, err := e.vms.expected(ctx)
	if err != nil {
		return err
	}
	_, err = e.sched.waitForDump(ctx, "the VMs' usage as the VM manager lists them", func(d *cache.Dump) bool {
		return externalAgrees(d, want)
	})
	return err
}

// startVM asks the VM manager for v on its node and expects it placed
// (201), then waits until /debug/cache counts it.
func startVM(v vmSpec) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		return progress(fmt.Sprintf("POST /vms %s: the VM manager places it and publishes its ExternalWorkload; waiting for /debug/cache to count it", v), func() error {
			got, status, err := e.vms.create(ctx, v)
			if err != nil {
				return err
			}
			if status != http.StatusCreated || got.Host != v.node {
				return fmt.Errorf("VM %s: answer %d, host %q, phase %s (%s); expected 201 on %s", v.name, status, got.Host, got.Phase, got.Message, v.node)
			}
			return waitForVMsInCache(ctx, e)
		})
	}
}

// refuseVM asks the VM manager for v and expects a refusal (409) whose
// message contains want, which it prints.
func refuseVM(v vmSpec, want string) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		var refusal string
		err := progress(fmt.Sprintf("POST /vms %s: the VM manager should refuse it", v), func() error {
			_, status, err := e.vms.create(ctx, v)
			ae, ok := err.(*apiError)
			if !ok || status != http.StatusConflict || !strings.Contains(ae.Message, want) {
				return fmt.Errorf("VM %s: answer %d (%v); expected 409 with %q", v.name, status, err, want)
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

// deleteVM deletes v through the admin API and waits until /debug/cache
// no longer counts it.
func deleteVM(v vmSpec) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		return progress(fmt.Sprintf("DELETE /vms/%s: its ExternalWorkload is deleted; waiting for /debug/cache to free its room", v.name), func() error {
			if err := e.vms.remove(ctx, v.name); err != nil {
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
