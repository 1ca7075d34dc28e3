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

package acme

import (
	"context"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// Name is the name the handler is meant to be registered under, the value
// of --event-handler that selects it.
const Name = "acme"

// Factory is the eventhandlers.Factory of the acme handler: it decodes the
// handler's configuration section strictly into Args (a nil section means
// DefaultArgs) and builds the default handler with the acme Policy.
func Factory(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
	h, err := New(ctx, c, cfg, rc)
	if err != nil {
		// An untyped nil: a nil *Handler inside an Interface is not nil.
		return nil, err
	}
	return h, nil
}

// New is Factory with the concrete type, for callers that want to embed
// the handler further.
func New(_ context.Context, c eventhandlers.Cache, cfg io.Reader, _ *rest.Config) (*defaulthandler.Handler, error) {
	args := DefaultArgs()
	if err := config.DecodeStrict(cfg, &args); err != nil {
		return nil, fmt.Errorf("decoding the acme handler's args: %w", err)
	}
	return NewWithArgs(c, args)
}

// NewWithArgs builds the handler from already decoded settings.
func NewWithArgs(c eventhandlers.Cache, args Args) (*defaulthandler.Handler, error) {
	if err := args.Validate(); err != nil {
		return nil, err
	}
	h, err := defaulthandler.NewWithArgs(c, args.Default, defaulthandler.WithPolicy(NewPolicy(args)))
	if err != nil {
		return nil, fmt.Errorf("default: %w", err)
	}
	klog.V(2).InfoS("Built event handler", "handler", Name, "poolLabel", args.PoolLabel, "reserve", reserveForLog(args.Reserve))
	return h, nil
}

// NewPolicy returns the Policy of the acme handler for args, which must be
// valid (see Args.Validate). Only its Node hook is set: pods and external
// workloads are treated as the default handler treats them.
func NewPolicy(args Args) defaulthandler.Policy {
	// Copy the settings so that the hook stays a pure function of the
	// node even if the caller changes args afterwards.
	label := args.PoolLabel
	reserve := make(Reserve, len(args.Reserve))
	for name, q := range args.Reserve {
		reserve[name] = q.DeepCopy()
	}
	return defaulthandler.Policy{
		Node: func(node *v1.Node) *v1.Node {
			if _, inPool := node.Labels[label]; !inPool {
				return nil
			}
			return withReserve(node, reserve)
		},
	}
}

// withReserve returns node as the scheduler should see it: reserve taken
// off its allocatable, no resource going below zero. node itself belongs
// to the informer and is not modified; the result is a shallow copy with
// an allocatable list of its own (the cache never modifies what it is
// given, so sharing the rest is safe and saves a deep copy per event).
func withReserve(node *v1.Node, reserve Reserve) *v1.Node {
	if len(reserve) == 0 {
		return node
	}
	seen := *node
	seen.Status.Allocatable = make(v1.ResourceList, len(node.Status.Allocatable))
	for name, have := range node.Status.Allocatable {
		left := have.DeepCopy()
		if r, ok := reserve[name]; ok {
			left.Sub(r)
			if left.Sign() < 0 {
				left = *resource.NewQuantity(0, have.Format)
			}
		}
		seen.Status.Allocatable[name] = left
	}
	return &seen
}

// reserveForLog renders a reserve for a log line, in a stable order.
func reserveForLog(r Reserve) string {
	list := make(v1.ResourceList, len(r))
	for name, q := range r {
		list[name] = q
	}
	return resources.FromList(list).String()
}
