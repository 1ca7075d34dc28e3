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

package twolevel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

// sharedLabel marks the nodes batch-scheduler shares with the VM manager
// in the hybrid tests.
const sharedLabel = "twolevel-shared"

// hybridLedgerConfig is the configuration of batch-scheduler beside the VM
// manager at vmURL in ledger mode: it counts the VMs and commits every
// bind on the nodes of nodeSelector to their NodeLedger (docs/hybrid.md).
func hybridLedgerConfig(t *testing.T, vmURL, nodeSelector string) string {
	t.Helper()
	return writeConfig(t, fmt.Sprintf(`customInformers:
- name: vm-manager
  resource: ExternalWorkload
  source: {http: {url: %q}}
profiles:
- schedulerName: tl-hybrid-churn
  plugins:
    multiPoint: {enabled: [{name: NodeLedger}]}
  pluginConfig:
  - name: NodeLedger
    args: {nodeSelector: %q}
`, vmURL, nodeSelector))
}

// batch-scheduler and the VM manager (hybrid, ledger mode, no allocator)
// place at full speed onto the same three hosts: pods and gangs created,
// finished and deleted, VMs started and stopped, hosts resized, and the VM
// manager and batch-scheduler each killed with SIGKILL once and started
// again. The checker, reading only the API server and the VM manager,
// must find no host over-committed and no over-commit left unconfirmed.
func TestHybridChurn(t *testing.T) {
	ns := createNamespace(t)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.InstallCRDFile(t.Context(), dyn, filepath.Join(repoRootOrFail(t), "deploy", "crds", "batch-scheduler.io_nodeledgers.yaml")); err != nil {
		t.Fatal(err)
	}
	nodes := createNodesWith(t, "hyb", 3, "6", map[string]string{sharedLabel: "vms"})
	selector := sharedLabel + "=vms," + poolLabel + "=" + poolName(t)
	t.Cleanup(func() {
		ledgers := ledgerClient(t)
		for _, n := range nodes {
			_ = ledgers.Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	dir := t.TempDir()
	// TWOLEVEL_HYBRID_NO_LEDGER=1 runs the same churn without the ledger
	// (plain hybrid mode): it shows what the checker finds when nothing
	// arbitrates, and is expected to fail.
	noLedger := os.Getenv("TWOLEVEL_HYBRID_NO_LEDGER") != ""
	vm := startVMManagerWith(t, vmManagerOptions{listen: "127.0.0.1:" + strconv.Itoa(freePort(t)), ledger: !noLedger,
		hostSelector: selector, stateFile: filepath.Join(dir, "vm-state.json")})
	const name = "tl-hybrid-churn"
	cfg := hybridLedgerConfig(t, vm.url, selector)
	if noLedger {
		cfg = writeConfig(t, fmt.Sprintf("customInformers:\n- name: vm-manager\n  resource: ExternalWorkload\n  source: {http: {url: %q}}\n", vm.url))
	}
	s := launchSchedulerProc(t, name, poolName(t), freePort(t), "--config-path", cfg)
	s.waitReady(t)
	if !noLedger {
		waitJoined(t, nodes, "batch-scheduler", "vm-manager")
	}

	chk := startChecker(t, ns, nodes, map[string]string{}, "", vm, "")
	ch := newChurner(t, ns, []string{name}, nodes, vm)
	ch.resize, ch.resizeCPU = true, []string{"5", "6", "7"}
	// A third of the steps free room and race a VM for it with the
	// scheduler's waiting pods.
	ch.raceShare = 0.3
	// Full speed: the placers race for the same hosts.
	ch.pause = [2]time.Duration{10 * time.Millisecond, 60 * time.Millisecond}
	ch.faults = []*fault{
		{name: "vm-manager", at: 0.3, down: 3 * time.Second, kill: vm.kill, restart: vm.restart},
		{name: "scheduler " + name, at: 0.65, down: 3 * time.Second, kill: s.kill, restart: s.restart},
	}
	ch.run(t.Context())
	chk.finish(t)
	chk.requirePlacements(t)
}

// ledgerClient is a NodeLedger client of the control plane.
func ledgerClient(t *testing.T) interface {
	ledger.Client
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
} {
	t.Helper()
	cs, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs.BatchSchedulerV1alpha1().NodeLedgers()
}

// waitJoined waits until every placer has joined the ledger of every
// node.
func waitJoined(t *testing.T, nodes []string, placers ...string) {
	t.Helper()
	ledgers := ledgerClient(t)
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, n := range nodes {
			l, err := ledgers.Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if missing := ledger.Missing(l, placers); len(missing) > 0 {
				last = fmt.Sprintf("%s: %v not joined", n, missing)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for %v to join the ledgers of %v: %v (%s)", placers, nodes, err, last)
	}
}

// repoRootOrFail is repoRoot for a test.
func repoRootOrFail(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
