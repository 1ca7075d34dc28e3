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

package manager

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricsNamespace prefixes the manager's metric names.
const MetricsNamespace = "vm_manager"

// Limits a host can be over, the limit label of Metrics.Overcommitted.
const (
	// LimitAllocatable: pods and VMs together request more than the
	// host's allocatable (a pod was bound in the race window).
	LimitAllocatable = "allocatable"
	// LimitGrant: the VMs use more than the framework's live grants on
	// the host (a grant shrank, was revoked or expired).
	LimitGrant = "grant"
)

// Results of a VM's commit to a ledger, the result label of
// Metrics.LedgerCommits.
const (
	// CommitCommitted: the VM's entry was written.
	CommitCommitted = "committed"
	// CommitRefused: the ledger refused the VM (no room, a required
	// placer missing).
	CommitRefused = "refused"
	// CommitFailed: the ledger could not be read or written.
	CommitFailed = "failed"
)

// Metrics are the manager's Prometheus metrics.
type Metrics struct {
	// VMs counts the VMs by phase (Pending, Running).
	VMs *prometheus.GaugeVec
	// Refusals counts VMs refused (hybrid mode), by reason.
	Refusals *prometheus.CounterVec
	// Overcommitted counts hosts over a limit, by limit (allocatable,
	// grant), as of the last check.
	Overcommitted *prometheus.GaugeVec
	// LedgerCommits counts the commits of VMs to ledgers, by result
	// (committed, refused, failed); ledger mode only.
	LedgerCommits *prometheus.CounterVec
	// LedgerEntriesRemoved counts the ledger entries the manager removed,
	// by kind: "vm" for its own VMs gone, "Pod" for other placers' pods
	// found gone.
	LedgerEntriesRemoved *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (none if reg
// is nil).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		VMs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: MetricsNamespace, Name: "vms",
			Help: "VMs known to the manager, by phase.",
		}, []string{"phase"}),
		Refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: MetricsNamespace, Name: "refusals_total",
			Help: "VMs refused because they did not fit, by reason.",
		}, []string{"reason"}),
		Overcommitted: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: MetricsNamespace, Name: "overcommitted_hosts",
			Help: "Hosts where the manager's VMs exceed a limit, by limit: allocatable (with the pods) or grant.",
		}, []string{"limit"}),
		LedgerCommits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: MetricsNamespace, Name: "ledger_commits_total",
			Help: "Commits of VMs to node ledgers (ledger mode), by result: committed, refused or failed.",
		}, []string{"result"}),
		LedgerEntriesRemoved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: MetricsNamespace, Name: "ledger_entries_removed_total",
			Help: "Node ledger entries removed by the manager (ledger mode), by kind: vm (its VMs gone) or Pod (other placers' pods gone).",
		}, []string{"kind"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.VMs, m.Refusals, m.Overcommitted, m.LedgerCommits, m.LedgerEntriesRemoved} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering the VM manager's metrics: %w", err)
			}
		}
	}
	return m, nil
}
