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
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VMManagerOptions are the flags of one run of examples/vm-manager.
type VMManagerOptions struct {
	// Bin is the built program; Dir holds its log and address file;
	// Kubeconfig is the cluster whose nodes host the VMs.
	Bin, Dir, Kubeconfig string
	// Listen is --listen; empty means a free loopback port (which a
	// restart does not keep).
	Listen string
	// Framework and GrantsURL make it a framework under the allocator at
	// GrantsURL (two-level); empty, it runs hybrid.
	Framework, GrantsURL string
	// StateFile is --state-file, if any.
	StateFile string
	// Ledger runs it in ledger mode (hybrid only) on the nodes of
	// HostSelector, waiting for batch-scheduler to join.
	Ledger       bool
	HostSelector string
	// RetryInterval is --retry-interval (default 500ms here).
	RetryInterval string
}

// VMManager is examples/vm-manager running as a child process, driven
// through its admin API (POST /vms, DELETE /vms/{name}, GET /vms, GET
// /hosts). It publishes every running VM as an ExternalWorkload.
type VMManager struct {
	*Process
	Options VMManagerOptions
}

// StartVMManager runs the VM manager with o and waits until it listens.
func StartVMManager(ctx context.Context, o VMManagerOptions) (*VMManager, error) {
	listen, retry := o.Listen, o.RetryInterval
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if retry == "" {
		retry = "500ms"
	}
	args := []string{"--kubeconfig", o.Kubeconfig, "--listen", listen, "--retry-interval", retry, "--sync-timeout", "60s", "-v=2"}
	if o.Framework != "" {
		args = append(args, "--framework", o.Framework, "--grants-url", o.GrantsURL)
	}
	if o.StateFile != "" {
		args = append(args, "--state-file", o.StateFile)
	}
	if o.Ledger {
		args = append(args, "--ledger")
	}
	if o.HostSelector != "" {
		args = append(args, "--host-selector", o.HostSelector)
	}
	p, err := StartProcess(ctx, ProcessSpec{Name: "vm-manager", Bin: o.Bin, Dir: o.Dir, Args: args, AddressFile: true})
	if err != nil {
		return nil, err
	}
	return &VMManager{Process: p, Options: o}, nil
}

// VMSpec is what is asked of a VM; Host is optional.
type VMSpec struct {
	Name, Host  string
	CPU, Memory string
}

func (v VMSpec) String() string {
	where := ""
	if v.Host != "" {
		where = " on " + v.Host
	}
	return fmt.Sprintf("%s%s (%s cpu, %s)", v.Name, where, v.CPU, v.Memory)
}

// VM is a VM as the manager's API shows it.
type VM struct {
	Name    string            `json:"name"`
	CPU     resource.Quantity `json:"cpu"`
	Memory  resource.Quantity `json:"memory"`
	Host    string            `json:"host,omitempty"`
	Phase   string            `json:"phase"`
	Message string            `json:"message,omitempty"`
	Created metav1.Time       `json:"created"`
}

// Create asks for a VM: POST /vms. It returns the VM and the status (201
// placed, 202 pending), or the manager's refusal as an *APIError.
func (m *VMManager) Create(ctx context.Context, v VMSpec) (*VM, int, error) {
	body := map[string]string{"name": v.Name, "cpu": v.CPU, "memory": v.Memory}
	if v.Host != "" {
		body["host"] = v.Host
	}
	out := &VM{}
	status, err := CallJSON(ctx, http.MethodPost, m.URL()+"/vms", body, out)
	if err != nil {
		return nil, status, err
	}
	return out, status, nil
}

// Delete deletes a VM: DELETE /vms/{name}.
func (m *VMManager) Delete(ctx context.Context, name string) error {
	_, err := CallJSON(ctx, http.MethodDelete, m.URL()+"/vms/"+name, nil, nil)
	return err
}

// List returns the VMs, sorted by name: GET /vms.
func (m *VMManager) List(ctx context.Context) ([]VM, error) {
	var out struct {
		Items []VM `json:"items"`
	}
	if _, err := CallJSON(ctx, http.MethodGet, m.URL()+"/vms", nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// Host is a host as GET /hosts shows it: what its pods use.
type Host struct {
	Name string          `json:"name"`
	Pods v1.ResourceList `json:"pods"`
}

// Hosts fetches GET /hosts.
func (m *VMManager) Hosts(ctx context.Context) ([]Host, error) {
	var out struct {
		Items []Host `json:"items"`
	}
	if _, err := CallJSON(ctx, http.MethodGet, m.URL()+"/hosts", nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// WriteVMs writes the VMs to w, with why those that wait do.
func WriteVMs(w io.Writer, vms []VM) {
	out := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(out, "VM (vm-manager)\tHOST\tCPU\tMEMORY\tPHASE\tWHY")
	if len(vms) == 0 {
		fmt.Fprintln(out, "(none)\t\t\t\t\t")
	}
	for _, v := range vms {
		host, why := v.Host, v.Message
		if host == "" {
			host = "-"
		}
		if why == "" {
			why = "-"
		}
		lines := Wrap(why, whyWidth)
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, host, v.CPU.String(), v.Memory.String(), v.Phase, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(out, "\t\t\t\t\t  %s\n", l)
		}
	}
	out.Flush()
}
