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

package nodeledger

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "NodeLedger"

// NodeLedger commits pods bound to shared nodes to their NodeLedger.
type NodeLedger struct {
	p *placer
}

var (
	_ framework.ReservePlugin     = &NodeLedger{}
	_ framework.BindPlugin        = &NodeLedger{}
	_ framework.EnqueueExtensions = &NodeLedger{}
)

// New is the plugin's framework.PluginFactory. It needs a handle with a
// clientset, the scheduler's informers and framework.RESTConfigProvider
// (for the NodeLedger client); with framework.SharedStore, every profile's
// instance shares one placer.
func New(ctx context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	a, sel, err := decodeArgs(args)
	if err != nil {
		return nil, err
	}
	rc, ok := h.(framework.RESTConfigProvider)
	if !ok || rc.RESTConfig() == nil {
		return nil, errors.New(Name + ": the handle gives no client configuration for NodeLedgers")
	}
	return build(ctx, a, sel, h, func() (ledger.Client, error) {
		cs, err := versioned.NewForConfig(rc.RESTConfig())
		if err != nil {
			return nil, fmt.Errorf("%s: creating the NodeLedger client: %w", Name, err)
		}
		return cs.BatchSchedulerV1alpha1().NodeLedgers(), nil
	}, true)
}

// build is New with the ledger client made by newClient. With loop false
// the placer's join-and-release loop is not started (unit tests call tick
// themselves; the loop ticks once as soon as the informers sync, which
// would race with what they count).
func build(ctx context.Context, a Args, sel labels.Selector, h framework.Handle, newClient func() (ledger.Client, error), loop bool) (*NodeLedger, error) {
	if h == nil || h.SharedInformerFactory() == nil {
		return nil, errors.New(Name + ": the handle has no informer factory")
	}
	create := func() (any, error) {
		client, err := newClient()
		if err != nil {
			return nil, err
		}
		p, err := newPlacer(a, sel, ledger.New(client), h.SharedInformerFactory())
		if err != nil {
			return nil, err
		}
		if loop {
			go p.run(ctx)
		}
		return p, nil
	}
	var v any
	var err error
	if s, ok := h.(framework.SharedStore); ok {
		v, err = s.Shared(Name, create)
	} else {
		v, err = create()
	}
	if err != nil {
		return nil, err
	}
	p := v.(*placer)
	if p.args != a {
		return nil, fmt.Errorf("%s args: every profile must give the same args (a profile gives %+v, another %+v): they commit as one placer", Name, a, p.args)
	}
	return &NodeLedger{p: p}, nil
}

// Name implements framework.Plugin.
func (*NodeLedger) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions: none. The
// plugin rejects only at Bind, where a rejected job is tried again after
// its backoff, not on an event.
func (*NodeLedger) EventsToRegister() []framework.ClusterEventWithHint {
	return nil
}

// Reserve implements framework.ReservePlugin: it remembers that pod goes
// to nodeName until its bind is seen, so that a ledger joined meanwhile
// records it.
func (pl *NodeLedger) Reserve(_ context.Context, _ *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	pl.p.reserve(pod, nodeName)
	return nil
}

// Unreserve implements framework.ReservePlugin: it forgets the placement
// and, if it was committed, removes its entry (in the background; the
// release loop retries what fails).
func (pl *NodeLedger) Unreserve(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeName string) {
	pl.p.unreserve(ctx, pod, nodeName)
}

// Bind implements framework.BindPlugin: on a shared node it commits pod
// to the node's ledger, then returns Skip for DefaultBinder to bind. A
// pod that no longer fits fails with a conflict, which ends the bind's
// retries; an API error is retried as any bind error.
func (pl *NodeLedger) Bind(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	if !pl.p.shared(nodeName) {
		return framework.NewStatus(framework.Skip)
	}
	err := pl.p.commit(ctx, pod, nodeName)
	var full *fullError
	switch {
	case err == nil:
		klog.FromContext(ctx).V(4).Info("Committed pod to the node's ledger", "pod", klog.KObj(pod), "node", nodeName)
		return framework.NewStatus(framework.Skip)
	case errors.As(err, &full):
		klog.FromContext(ctx).V(2).Info("The node's ledger has no room for the pod any more; trying again later", "pod", klog.KObj(pod), "node", nodeName, "reason", err)
		return framework.AsStatus(apierrors.NewConflict(v1alpha1.Resource(v1alpha1.NodeLedgersResource), nodeName, err))
	default:
		pl.p.forget(nodeName)
		return framework.AsStatus(fmt.Errorf("committing pod %s to the ledger of node %s: %w", klog.KObj(pod), nodeName, err))
	}
}
