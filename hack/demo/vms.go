package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

const (
	// configPath is the scheduler configuration file the demo writes and
	// passes with --config-path, relative to the working directory.
	configPath = "_output/demo/batch-scheduler.yaml"
	// vmInformer names the custom informer that reads the VM manager, in
	// the scheduler's log, metrics and /readyz.
	vmInformer = "vm-manager"
	// vmManagerStopTimeout bounds the VM manager's stop: the wait for the
	// stopped scheduler's watch to close, and the HTTP server's shutdown.
	vmManagerStopTimeout = 5 * time.Second
)

// vmManager is the demo's external VM manager: it runs VMs on the same
// hosts as pods and publishes each as an ExternalWorkload in a
// resourcemanager.Store, served over HTTP on a loopback port, as a real
// manager would. The scheduler reads it through a custom informer (source
// http) and counts the VMs' resources against their nodes.
type vmManager struct {
	store *resourcemanager.Store
	srv   *http.Server
	url   string
	// served receives what the HTTP server's Serve returned.
	served chan error
}

// startVMManager starts an empty VM manager on a free loopback port.
func startVMManager() (*vmManager, error) {
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         v1alpha1.ExternalWorkloadsResource,
		Example:          &v1alpha1.ExternalWorkload{},
		// Above any resourceVersion an earlier run served, as a manager
		// that keeps its state in memory must.
		InitialResourceVersion: time.Now().UnixMicro(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the VM manager's store: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("listening for the VM manager: %w", err)
	}
	m := &vmManager{
		store: store,
		srv: &http.Server{
			Handler:           store.Handler(),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          klog.NewStandardLogger("ERROR"),
		},
		url:    "http://" + ln.Addr().String(),
		served: make(chan error, 1),
	}
	go func() { m.served <- m.srv.Serve(ln) }()
	return m, nil
}

// stop stops the manager after the scheduler has stopped: it checks that
// the scheduler's watch has closed, ends any watch stream still open, and
// shuts the HTTP server down, freeing the port.
func (m *vmManager) stop() error {
	var errs []error
	deadline := time.Now().Add(vmManagerStopTimeout)
	for m.store.Watchers() > 0 && time.Now().Before(deadline) {
		time.Sleep(pollInterval)
	}
	if n := m.store.Watchers(); n > 0 {
		errs = append(errs, fmt.Errorf("%d watch(es) of the VM manager still open after batch-scheduler stopped", n))
	}
	m.store.Close()
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(vmManagerStopTimeout))
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("shutting down the VM manager's HTTP server: %w", err), m.srv.Close())
	}
	if err := <-m.served; !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("the VM manager's HTTP server: %w", err))
	}
	return errors.Join(errs...)
}

// vmSpec is what the demo says of a VM.
type vmSpec struct {
	name, node  string
	cpu, memory string
}

func (v vmSpec) String() string {
	return fmt.Sprintf("%s on %s (%s cpu, %s)", v.name, v.node, v.cpu, v.memory)
}

// analyticsVM starts on node edge in a live change and stops later.
var analyticsVM = vmSpec{name: "vm-analytics", node: "edge", cpu: "3", memory: "4Gi"}

// create publishes a new running VM.
func (m *vmManager) create(v vmSpec) (*v1alpha1.ExternalWorkload, error) {
	cpu, err := resource.ParseQuantity(v.cpu)
	if err != nil {
		return nil, fmt.Errorf("VM %s: cpu: %w", v.name, err)
	}
	memory, err := resource.ParseQuantity(v.memory)
	if err != nil {
		return nil, fmt.Errorf("VM %s: memory: %w", v.name, err)
	}
	w := &v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: v.name},
		Spec: v1alpha1.ExternalWorkloadSpec{
			NodeName:     v.node,
			Resources:    v1.ResourceList{v1.ResourceCPU: cpu, v1.ResourceMemory: memory},
			WorkloadKind: "vm",
			Owner:        "analytics",
		},
		Status: v1alpha1.ExternalWorkloadStatus{Phase: v1alpha1.ExternalWorkloadRunning, Message: "booted"},
	}
	if errs := v1alpha1.ValidateExternalWorkload(w); len(errs) > 0 {
		return nil, fmt.Errorf("VM %s: %w", v.name, errs.ToAggregate())
	}
	if err := m.store.Create(w); err != nil {
		return nil, fmt.Errorf("publishing VM %s: %w", v.name, err)
	}
	klog.InfoS("Demo VM manager published a VM", "externalWorkload", klog.KObj(w), "node", w.Spec.NodeName,
		"phase", w.Status.Phase, "resourceVersion", w.ResourceVersion)
	return w, nil
}

// setStopped publishes that VM name has stopped: it is still listed, but
// its resources are released.
func (m *vmManager) setStopped(name string) (*v1alpha1.ExternalWorkload, error) {
	obj, ok := m.store.Get("", name)
	if !ok {
		return nil, fmt.Errorf("VM %s: not published", name)
	}
	w, ok := obj.(*v1alpha1.ExternalWorkload)
	if !ok {
		return nil, fmt.Errorf("VM %s: the store holds a %T", name, obj)
	}
	w.Status = v1alpha1.ExternalWorkloadStatus{Phase: v1alpha1.ExternalWorkloadStopped, Message: "shut down"}
	// w carries the stored resourceVersion: a compare-and-swap.
	if err := m.store.Update(w); err != nil {
		return nil, fmt.Errorf("publishing that VM %s stopped: %w", name, err)
	}
	klog.InfoS("Demo VM manager published a VM", "externalWorkload", klog.KObj(w), "node", w.Spec.NodeName,
		"phase", w.Status.Phase, "resourceVersion", w.ResourceVersion)
	return w, nil
}

// remove deletes VM name from the store.
func (m *vmManager) remove(name string) error {
	if err := m.store.Delete("", name); err != nil {
		return fmt.Errorf("deleting VM %s: %w", name, err)
	}
	klog.InfoS("Demo VM manager deleted a VM", "externalWorkload", klog.KRef("", name), "resourceVersion", m.store.ResourceVersion())
	return nil
}

// externalUsage is what the cache should count on one node for the VMs.
type externalUsage struct {
	keys  []string
	usage resources.Resource
}

// expected returns, by node, the usage the scheduler's default handler
// should account for the published VMs: every VM that is not Stopped, on
// its spec.nodeName, under defaulthandler.ExternalWorkloadKey.
func (m *vmManager) expected() map[string]externalUsage {
	objs, _ := m.store.List("")
	out := map[string]externalUsage{}
	for _, o := range objs {
		w, ok := o.(*v1alpha1.ExternalWorkload)
		if !ok || w.Status.Phase == v1alpha1.ExternalWorkloadStopped {
			continue
		}
		e := out[w.Spec.NodeName]
		e.keys = append(e.keys, defaulthandler.ExternalWorkloadKey(w))
		e.usage.Add(resources.FromList(w.Spec.Resources))
		out[w.Spec.NodeName] = e
	}
	return out
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

// vmChange is a step's change of the VM manager: do publishes it, and the
// demo then waits until /debug/cache counts the VMs as the manager
// publishes them.
func vmChange(what string, do func(*vmManager) error) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		return progress("VM manager: "+what+"; waiting for /debug/cache to agree", func() error {
			if err := do(e.vms); err != nil {
				return err
			}
			_, err := e.sched.waitForDump(ctx, "the VMs' usage as the VM manager publishes it", func(d *cache.Dump) bool {
				return externalAgrees(d, e.vms.expected())
			})
			return err
		})
	}
}

// vmChanges applies changes in order, after a blank line that sets their
// progress lines apart from the expected outcome.
func vmChanges(changes ...func(context.Context, *env) error) func(context.Context, *env) error {
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

// startVM publishes v as a running VM.
func startVM(v vmSpec) func(context.Context, *env) error {
	return vmChanges(vmChange(fmt.Sprintf("%s starts on %s (workloadKind vm, %s cpu, %s, phase Running)", v.name, v.node, v.cpu, v.memory),
		func(m *vmManager) error {
			_, err := m.create(v)
			return err
		}))
}

// stopVM publishes that v stopped (phase Stopped: still listed, resources
// released), then deletes it.
func stopVM(v vmSpec) func(context.Context, *env) error {
	return vmChanges(
		vmChange(v.name+" stops (phase Stopped): its resources are released", func(m *vmManager) error {
			_, err := m.setStopped(v.name)
			return err
		}),
		vmChange(v.name+" is deleted", func(m *vmManager) error { return m.remove(v.name) }),
	)
}

// writeConfig writes the scheduler configuration file: the default event
// handler, and a custom informer of ExternalWorkloads from the VM manager
// at url.
func writeConfig(path, url string) error {
	text := strings.Join([]string{
		"# Written by the demo (hack/demo): batch-scheduler reads the demo's VM manager",
		"# through a custom informer. See docs/external-resource-managers.md.",
		"apiVersion: batch-scheduler.io/v1alpha1",
		"kind: SchedulerConfiguration",
		"customInformers:",
		"- name: " + vmInformer,
		"  resource: ExternalWorkload",
		"  source:",
		"    http:",
		"      url: " + url,
		"",
	}, "\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the config directory: %w", err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("writing the scheduler config: %w", err)
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
