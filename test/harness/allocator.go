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
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bsv1 "github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Framework is one entry of the allocator's registry.
type Framework struct {
	Name      string  `json:"name"`
	Weight    float64 `json:"weight,omitempty"`
	DemandURL string  `json:"demandURL,omitempty"`
}

// AllocatorOptions are the flags of one run of examples/allocator.
type AllocatorOptions struct {
	// Bin is the built program; Dir holds its log, address and
	// configuration files; Kubeconfig is the cluster whose nodes it
	// divides.
	Bin, Dir, Kubeconfig string
	// Listen is --listen; empty means a free loopback port.
	Listen string
	// Frameworks are written to its --config file (none: no file).
	Frameworks []Framework
	// StateFile is --state-file, if any.
	StateFile string
	// Interval, IdleTimeout and GrantTTL are the flags of the same name;
	// zero leaves the program's default.
	Interval, IdleTimeout, GrantTTL time.Duration
}

// Allocator is examples/allocator running as a child process: it divides
// the nodes among the frameworks and serves the grants.
type Allocator struct {
	*Process
	Options AllocatorOptions
}

// StartAllocator runs the allocator with o and waits until it listens.
func StartAllocator(ctx context.Context, o AllocatorOptions) (*Allocator, error) {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	args := []string{"--kubeconfig", o.Kubeconfig, "--listen", o.Listen, "-v=2"}
	if len(o.Frameworks) > 0 {
		cfg, err := json.Marshal(map[string]any{"frameworks": o.Frameworks})
		if err != nil {
			return nil, fmt.Errorf("encoding the allocator's frameworks: %w", err)
		}
		path := filepath.Join(o.Dir, "frameworks.yaml") // JSON is YAML
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", o.Dir, err)
		}
		if err := os.WriteFile(path, cfg, 0o600); err != nil {
			return nil, fmt.Errorf("writing the allocator's frameworks: %w", err)
		}
		args = append(args, "--config", path)
	}
	for flag, d := range map[string]time.Duration{"--interval": o.Interval, "--idle-timeout": o.IdleTimeout, "--grant-ttl": o.GrantTTL} {
		if d > 0 {
			args = append(args, flag, d.String())
		}
	}
	if o.StateFile != "" {
		args = append(args, "--state-file", o.StateFile)
	}
	p, err := StartProcess(ctx, ProcessSpec{Name: "allocator", Bin: o.Bin, Dir: o.Dir, Args: args, AddressFile: true})
	if err != nil {
		return nil, err
	}
	a := &Allocator{Process: p, Options: o}
	// The allocator serves its grants once its first round has published
	// (503 before): callers get one that answers.
	if err := Poll(ctx, allocatorReadyTimeout, "the allocator's first round (/readyz)", p.Alive, func() (bool, error) {
		code, err := CallJSON(ctx, http.MethodGet, a.URL()+"/readyz", nil, nil)
		return err == nil && code == http.StatusOK, err
	}); err != nil {
		p.Kill()
		return nil, err
	}
	return a, nil
}

// allocatorReadyTimeout bounds StartAllocator's wait for the first round.
const allocatorReadyTimeout = 60 * time.Second

// Register registers (or replaces) a framework: PUT /frameworks/{name}.
func (a *Allocator) Register(ctx context.Context, f Framework) error {
	_, err := CallJSON(ctx, http.MethodPut, a.URL()+"/frameworks/"+f.Name,
		map[string]any{"weight": f.Weight, "demandURL": f.DemandURL}, nil)
	return err
}

// Revoke revokes a grant: POST /grants/{framework}.{node}/revoke.
func (a *Allocator) Revoke(ctx context.Context, framework, node, message string) error {
	_, err := CallJSON(ctx, http.MethodPost, a.URL()+"/grants/"+framework+"."+node+"/revoke",
		map[string]string{"message": message}, nil)
	return err
}

// FrameworkStatus is what GET /allocation says of a framework.
type FrameworkStatus struct {
	Weight        float64                    `json:"weight"`
	DominantShare float64                    `json:"dominantShare"`
	Hungry        bool                       `json:"hungry"`
	Granted       v1.ResourceList            `json:"granted"`
	Grants        map[string]v1.ResourceList `json:"grants"`
	Revoked       map[string]string          `json:"revoked,omitempty"`
	Unmet         v1.ResourceList            `json:"unmet,omitempty"`
	Used          map[string]v1.ResourceList `json:"used,omitempty"`
	LastReport    *metav1.Time               `json:"lastReport,omitempty"`
	LastError     string                     `json:"lastError,omitempty"`
}

// Allocation is the body of GET /allocation: the last round.
type Allocation struct {
	Round      int64                      `json:"round"`
	Nodes      map[string]v1.ResourceList `json:"nodes"`
	Frameworks map[string]FrameworkStatus `json:"frameworks"`
}

// Allocation fetches GET /allocation.
func (a *Allocator) Allocation(ctx context.Context) (*Allocation, error) {
	out := &Allocation{}
	if _, err := CallJSON(ctx, http.MethodGet, a.URL()+"/allocation", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Grants lists the allocator's grants.
func (a *Allocator) Grants(ctx context.Context) ([]bsv1.Grant, error) {
	var l bsv1.GrantList
	if _, err := CallJSON(ctx, http.MethodGet, a.URL()+"/apis/batch-scheduler.io/v1alpha1/grants", nil, &l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Write writes the allocation to w: each node's grants by framework
// (revoked ones with their message), then each framework's total,
// dominant share and unmet demand.
func (a *Allocation) Write(w io.Writer) {
	out := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fws := slices.Sorted(maps.Keys(a.Frameworks))
	fmt.Fprintf(out, "GRANTS (allocator, round %d)\tALLOCATABLE", a.Round)
	for _, f := range fws {
		fmt.Fprintf(out, "\t%s", f)
	}
	fmt.Fprintln(out)
	for _, node := range slices.Sorted(maps.Keys(a.Nodes)) {
		fmt.Fprintf(out, "%s\t%s", node, ShortList(a.Nodes[node]))
		for _, f := range fws {
			st := a.Frameworks[f]
			cell := ShortList(st.Grants[node])
			if msg, ok := st.Revoked[node]; ok {
				cell = "REVOKED (" + msg + ")"
			}
			fmt.Fprintf(out, "\t%s", cell)
		}
		fmt.Fprintln(out)
	}
	for _, f := range fws {
		st := a.Frameworks[f]
		hungry := "no"
		if st.Hungry {
			hungry = "yes, unmet " + ShortList(st.Unmet)
		}
		fmt.Fprintf(out, "  %s\ttotal %s\tdominant share %.2f, waiting: %s\n", f, ShortList(st.Granted), st.DominantShare, hungry)
	}
	out.Flush()
}

// Short renders cpu and memory, e.g. "4 cpu, 8Gi".
func Short(r resources.Resource) string {
	return fmt.Sprintf("%s cpu, %s", resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI), resource.NewQuantity(r.Memory, resource.BinarySI))
}

// ShortList renders a resource list as Short does, "-" when empty.
func ShortList(l v1.ResourceList) string {
	if len(l) == 0 {
		return "-"
	}
	return Short(resources.FromList(l))
}
