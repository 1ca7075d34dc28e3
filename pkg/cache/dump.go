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

package cache

import (
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
	"github.com/batch-scheduler/batch-scheduler/pkg/schedulingqueue"
)

// Dump is a JSON-serialisable picture of the cache for debugging, as
// /debug/cache serves it (pkg/cache/debugger). It is built from a View, so
// each node is consistent with its pods and each job with its tasks, but
// the parts are copied one after the other, not atomically together.
type Dump struct {
	// Generation is the cache's node generation.
	Generation int64      `json:"generation"`
	Nodes      []NodeDump `json:"nodes"`
	// OutsideSelector are the nodes that exist but do not match the node
	// selector and have pods or external usage accounted to them, kept
	// aside (see eventhandlers.ExternalUsageCache), sorted by name.
	OutsideSelector []NodeDump `json:"outsideSelector,omitempty"`
	// Jobs are the job records (see KeepsJobRecord): another scheduler's
	// bound pods outside any gang have none and appear on their nodes
	// only.
	Jobs     []JobDump                  `json:"jobs"`
	Queue    schedulingqueue.Dump       `json:"queue"`
	Handlers HandlersStatus             `json:"handlers"`
	Events   []informerhost.EventCounts `json:"events"`
}

// NodeDump describes one node, sorted by name in CacheDump.
type NodeDump struct {
	Name        string             `json:"name"`
	Placeholder bool               `json:"placeholder"`
	Generation  int64              `json:"generation"`
	Schedulable resources.Resource `json:"schedulable"`
	Requested   resources.Resource `json:"requested"`
	// External is the node's external usage (e.g. ExternalWorkloads).
	External resources.Resource `json:"external"`
	// OwnRequested is what this scheduler's own pods request there.
	OwnRequested resources.Resource `json:"ownRequested"`
	// Cap bounds OwnRequested under two-level scheduling (see
	// eventhandlers.NodeCapCache): absent when the node is uncapped, all
	// zero when it has no grant.
	Cap *resources.Resource `json:"cap,omitempty"`
	// CapExceeded is set when OwnRequested exceeds Cap.
	CapExceeded bool `json:"capExceeded,omitempty"`
	// Idle is what is left for this scheduler: the smaller of what the
	// node and what its cap have left.
	Idle resources.Resource `json:"idle"`
	// ExternalKeys are the keys, sorted, of the external usage.
	ExternalKeys []string `json:"externalKeys,omitempty"`
	// Pods are "namespace/name" keys, sorted, of the pods bound or assumed
	// to the node.
	Pods []string `json:"pods"`
	// AssumedPods are the keys, sorted, of the Pods that are assumed.
	AssumedPods []string `json:"assumedPods,omitempty"`
}

// JobDump describes one job, sorted by ID in CacheDump.
type JobDump struct {
	ID              string     `json:"id"`
	Gang            bool       `json:"gang"`
	MinAvailable    int32      `json:"minAvailable"`
	ValidationError string     `json:"validationError,omitempty"`
	Tasks           []TaskDump `json:"tasks"`
}

// TaskDump describes one task of a job, sorted by pod key.
type TaskDump struct {
	Pod    string               `json:"pod"`
	UID    types.UID            `json:"uid"`
	Phase  v1.PodPhase          `json:"phase"`
	Node   string               `json:"node,omitempty"`
	Status framework.TaskStatus `json:"status"`
	// Counted: the task's requests count against its node.
	Counted bool `json:"counted"`
	// Assumed says more about an assumed task.
	Assumed *AssumedDump `json:"assumed,omitempty"`
}

// AssumedDump describes the assumption of an assumed task.
type AssumedDump struct {
	// BindingFinished: the bind call succeeded (FinishBinding); the
	// assumption expires at Expires unless the informer reports the pod
	// bound first.
	BindingFinished bool       `json:"bindingFinished"`
	Expires         *time.Time `json:"expires,omitempty"`
	// InformerPending: the informer still reports the pod pending.
	InformerPending bool `json:"informerPending"`
}

// Dump returns a picture of the cache for debugging, built from a View.
func (c *SchedulerCache) Dump() *Dump {
	v := c.View()
	d := &Dump{Generation: v.Generation}
	d.Nodes = make([]NodeDump, 0, len(v.Nodes))
	for _, n := range v.Nodes {
		d.Nodes = append(d.Nodes, dumpNode(n))
	}
	sort.Slice(d.Nodes, func(i, j int) bool { return d.Nodes[i].Name < d.Nodes[j].Name })
	for _, n := range v.Outside {
		d.OutsideSelector = append(d.OutsideSelector, dumpNode(n))
	}
	sort.Slice(d.OutsideSelector, func(i, j int) bool { return d.OutsideSelector[i].Name < d.OutsideSelector[j].Name })

	d.Jobs = make([]JobDump, 0, len(v.Jobs))
	for id, j := range v.Jobs {
		jd := JobDump{ID: id.String(), Gang: id.Gang, MinAvailable: j.MinAvailable}
		if j.ValidationError != nil {
			jd.ValidationError = j.ValidationError.Error()
		}
		jd.Tasks = make([]TaskDump, 0, len(j.Tasks))
		for _, t := range j.Tasks {
			td := TaskDump{Pod: t.Key(), UID: t.GetUID(), Phase: t.Phase(),
				Node: t.NodeName, Status: t.Status, Counted: t.Counted}
			if a, ok := v.Assumed[t.GetUID()]; ok {
				td.Assumed = &AssumedDump{BindingFinished: a.BindingFinished, InformerPending: a.InformerPending}
				if a.BindingFinished {
					expires := a.Deadline
					td.Assumed.Expires = &expires
				}
			}
			jd.Tasks = append(jd.Tasks, td)
		}
		sort.Slice(jd.Tasks, func(a, b int) bool { return jd.Tasks[a].Pod < jd.Tasks[b].Pod })
		d.Jobs = append(d.Jobs, jd)
	}
	sort.Slice(d.Jobs, func(i, j int) bool { return d.Jobs[i].ID < d.Jobs[j].ID })
	d.Queue = c.queue.Dump()
	d.Handlers = c.Handlers()
	d.Events = c.EventCounts()
	return d
}

// dumpNode renders n, a View's clone: its amounts are its own, its Cap
// and ExternalKeys are shared with the cache and copied.
func dumpNode(n *framework.NodeInfo) NodeDump {
	pods := make([]string, len(n.Pods))
	var assumed []string
	for i, t := range n.Pods {
		pods[i] = t.Key()
		if t.Status == framework.TaskAssumed {
			assumed = append(assumed, t.Key())
		}
	}
	sort.Strings(pods)
	sort.Strings(assumed)
	return NodeDump{
		Name:         n.Name(),
		Placeholder:  n.Placeholder,
		Generation:   n.Generation,
		Schedulable:  n.Schedulable,
		Requested:    n.Requested,
		External:     n.External,
		OwnRequested: n.OwnRequested,
		Cap:          cloneCap(n.Cap), // shared with the cache
		CapExceeded:  n.CapExceeded(),
		Idle:         n.Idle(),
		ExternalKeys: slices.Clone(n.ExternalKeys), // shared with the cache
		Pods:         pods,
		AssumedPods:  assumed,
	}
}

func cloneCap(c *resources.Resource) *resources.Resource {
	if c == nil {
		return nil
	}
	cc := c.Clone()
	return &cc
}
