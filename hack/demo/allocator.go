package main

import (
	"context"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// allocatorInterval is the allocator's --interval: a round at least
	// this often.
	allocatorInterval = time.Second
	// idleTimeout is the allocator's --idle-timeout: how long granted
	// capacity must stay unused before it can move to a framework whose
	// jobs wait.
	idleTimeout = 5 * time.Second
)

// allocator is examples/allocator, run as a separate process: it divides
// the nodes among the frameworks and serves the grants.
type allocator struct {
	*process
}

// startAllocator starts bin on a free loopback port with no framework
// registered, dividing the nodes of the cluster of kubeconfig.
func startAllocator(ctx context.Context, bin, kubeconfig string) (*allocator, error) {
	p, err := startProcess(ctx, "allocator", bin, "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0", "-v", "2",
		"--interval", allocatorInterval.String(), "--idle-timeout", idleTimeout.String())
	if err != nil {
		return nil, err
	}
	return &allocator{p}, nil
}

// register registers (or replaces) a framework: PUT /frameworks/{name}.
func (a *allocator) register(ctx context.Context, name string, weight float64, demandURL string) error {
	_, err := callJSON(ctx, http.MethodPut, a.url()+"/frameworks/"+name,
		map[string]any{"weight": weight, "demandURL": demandURL}, nil)
	return err
}

// revoke revokes a grant: POST /grants/{framework}.{node}/revoke.
func (a *allocator) revoke(ctx context.Context, framework, node, message string) error {
	_, err := callJSON(ctx, http.MethodPost, a.url()+"/grants/"+framework+"."+node+"/revoke",
		map[string]string{"message": message}, nil)
	return err
}

// frameworkStatus is what GET /allocation says of a framework.
type frameworkStatus struct {
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

// allocation is the body of GET /allocation: the last round.
type allocation struct {
	Round      int64                      `json:"round"`
	Nodes      map[string]v1.ResourceList `json:"nodes"`
	Frameworks map[string]frameworkStatus `json:"frameworks"`
}

// allocation fetches GET /allocation.
func (a *allocator) allocation(ctx context.Context) (*allocation, error) {
	out := &allocation{}
	if _, err := callJSON(ctx, http.MethodGet, a.url()+"/allocation", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}
