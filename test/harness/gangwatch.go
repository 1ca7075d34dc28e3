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
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// GangWatch is a pod watch (test/podwatch) of every namespace whose gangs
// are the pods of batch/v1 Jobs: it sees every transition of the pods and
// records the guarantees it saw broken. A gang runs whole or not at all:
// some but fewer than its quorum of pods running for longer than settle,
// after a bind (a partial start) or an eviction (a partial eviction), is
// a violation; members that succeed one by one are not. No node holds
// pods that request more than it has.
type GangWatch struct {
	*podwatch.Watcher
	nodes  int
	settle time.Duration
}

// WatchJobGangs starts a GangWatch of nodes, every Job a gang of
// quorum(its name) pods, until ctx ends (which must be before the control
// plane stops).
func WatchJobGangs(ctx context.Context, client kubernetes.Interface, nodes []*v1.Node, quorum func(job string) int, settle time.Duration) (*GangWatch, error) {
	capacity := map[string]podwatch.Capacity{}
	for _, n := range nodes {
		c := n.Status.Capacity
		capacity[n.Name] = podwatch.Capacity{MilliCPU: c.Cpu().MilliValue(), Memory: c.Memory().Value(), Pods: c.Pods().Value()}
	}
	w := podwatch.New(client, metav1.NamespaceAll, capacity, nil)
	w.GangOf = podwatch.ControllerGang("Job", quorum)
	w.Settle, w.Evictions = settle, true
	return &GangWatch{w, len(nodes), settle}, w.Start(ctx)
}

// Err returns the guarantees broken so far, nil if none.
func (g *GangWatch) Err() error {
	var broken []string
	for _, v := range g.Violations(nil) {
		broken = append(broken, v.String())
	}
	if len(broken) == 0 {
		return nil
	}
	return fmt.Errorf("the pod watch saw a guarantee broken: %s", strings.Join(broken, "; "))
}

// Summary says what the watch saw, one line per guarantee.
func (g *GangWatch) Summary() []string {
	binds, _ := g.Bound()
	gangs := g.Gangs()
	var longest time.Duration
	for _, s := range gangs {
		longest = max(longest, s.BelowQuorum)
	}
	return []string{
		fmt.Sprintf("no gang ran below its quorum: %d gangs and %d binds seen; the longest a gang ran some but not all of its pods was %s (allowed: %s at a time)",
			len(gangs), binds, longest.Round(time.Millisecond), g.settle),
		fmt.Sprintf("no node held more than it has (%d nodes watched)", g.nodes),
	}
}
