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
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Pod is what the API says of a pod.
type Pod struct {
	Key       string
	Scheduler string
	Node      string
	Phase     v1.PodPhase
	// Deleting: the pod has a deletion timestamp.
	Deleting bool
	// Job is the "namespace/name" of the batch/v1 Job that controls the
	// pod, if one does.
	Job string
	// Requests is what the pod requests on its node.
	Requests resources.Resource
	// Unschedulable: PodScheduled=False with reason Unschedulable, and
	// its message.
	Unschedulable bool
	Message       string
	// Started is status.startTime: when its kubelet started it (to the
	// second); zero before.
	Started time.Time
}

// Counted reports whether the pod takes room on a node: bound and not
// finished.
func (p Pod) Counted() bool {
	return p.Node != "" && p.Phase != v1.PodSucceeded && p.Phase != v1.PodFailed
}

// ObservePods lists every pod through the API, by "namespace/name".
func ObservePods(ctx context.Context, client kubernetes.Interface) (map[string]Pod, error) {
	list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := make(map[string]Pod, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		s := Pod{Key: p.Namespace + "/" + p.Name, Scheduler: p.Spec.SchedulerName, Node: p.Spec.NodeName,
			Phase: p.Status.Phase, Deleting: p.DeletionTimestamp != nil, Requests: resources.PodRequests(p)}
		if owner := metav1.GetControllerOf(p); owner != nil && owner.Kind == "Job" && strings.HasPrefix(owner.APIVersion, "batch/") {
			s.Job = p.Namespace + "/" + owner.Name
		}
		if p.Status.StartTime != nil {
			s.Started = p.Status.StartTime.Time
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				s.Unschedulable, s.Message = true, c.Message
			}
		}
		out[s.Key] = s
	}
	return out, nil
}

// External is the usage the cache should count on one node for workloads
// outside Kubernetes: their keys and what they use.
type External struct {
	Keys  []string
	Usage resources.Resource
}

// Consistent is the consistency check of a scheduler seen from outside:
// /debug/cache (d) holds on each node exactly the pods the API has bound
// there, none of them merely assumed, and counts what the unfinished ones
// request; when external is not nil, it counts exactly that external
// usage on each node; and no node that has joined holds pods and external
// usage beyond what it can schedule. A disagreement may be an event in
// flight (an error to wait on); an over-committed node is Final.
func Consistent(d *cache.Dump, pods map[string]Pod, external map[string]External) error {
	want := map[string][]string{}
	requested := map[string]resources.Resource{}
	for _, p := range pods {
		if p.Node != "" {
			want[p.Node] = append(want[p.Node], p.Key)
		}
		if p.Counted() {
			r := requested[p.Node]
			r.Add(p.Requests)
			requested[p.Node] = r
		}
	}
	var over []string
	for _, n := range d.Nodes {
		switch {
		case len(n.AssumedPods) > 0:
			return fmt.Errorf("/debug/cache: node %s has assumed pods %v", n.Name, n.AssumedPods)
		case !SameKeys(n.Pods, want[n.Name]):
			return fmt.Errorf("/debug/cache: node %s holds pods %v; the API binds %v there", n.Name, n.Pods, want[n.Name])
		case !sameAmounts(n.Requested, requested[n.Name]):
			return fmt.Errorf("/debug/cache: node %s counts %s requested; its pods request %s", n.Name, Amounts(n.Requested), Amounts(requested[n.Name]))
		}
		if external != nil {
			w := external[n.Name]
			if !SameKeys(n.ExternalKeys, w.Keys) || n.External.String() != w.Usage.String() {
				return fmt.Errorf("/debug/cache: node %s counts external usage %v (%s); expected %v (%s)", n.Name, n.ExternalKeys, Amounts(n.External), w.Keys, Amounts(w.Usage))
			}
		}
		delete(want, n.Name)
		if n.Placeholder {
			continue // pods bound to a node that has not joined yet
		}
		u := requested[n.Name]
		u.Add(n.External)
		if !n.Schedulable.Fits(u) {
			over = append(over, fmt.Sprintf("node %s: its pods and external usage need %s, more than its %s", n.Name, Amounts(u), Amounts(n.Schedulable)))
		}
	}
	if len(over) > 0 {
		return Final(errors.New(strings.Join(over, "; ")))
	}
	if len(want) > 0 {
		return fmt.Errorf("/debug/cache has no node for the pods bound to %v", slices.Sorted(maps.Keys(want)))
	}
	for name := range external {
		if !slices.ContainsFunc(d.Nodes, func(n cache.NodeDump) bool { return n.Name == name }) {
			return fmt.Errorf("/debug/cache has no node %s for its external usage", name)
		}
	}
	return nil
}

// sameAmounts reports whether a and b request the same cpu, memory and
// extended resources.
func sameAmounts(a, b resources.Resource) bool {
	return a.MilliCPU == b.MilliCPU && a.Memory == b.Memory && maps.Equal(nonZero(a.Scalar), nonZero(b.Scalar))
}

func nonZero(m map[v1.ResourceName]int64) map[v1.ResourceName]int64 {
	out := map[v1.ResourceName]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// SameKeys reports whether a and b hold the same keys, in any order.
func SameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Amounts renders cpu, memory and extended resources briefly, e.g.
// "1500m cpu, 2Gi" or "8 cpu, 32Gi, 4 nvidia.com/gpu"; "0" when empty.
func Amounts(r resources.Resource) string {
	var parts []string
	if r.MilliCPU != 0 {
		parts = append(parts, resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI).String()+" cpu")
	}
	if r.Memory != 0 {
		parts = append(parts, resource.NewQuantity(r.Memory, resource.BinarySI).String())
	}
	for _, name := range slices.Sorted(maps.Keys(r.Scalar)) {
		if v := r.Scalar[name]; v != 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v, name))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}
