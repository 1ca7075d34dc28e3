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

// Package eventhandlers is the contract between the scheduler cache and the
// code that turns informer events into cache state: the event handler.
//
// It defines
//   - Interface, the handler, composed of one small interface per resource
//     (PodEventHandler, NodeEventHandler, ...), plus optional interfaces
//     (DynamicResourceRequester, Runner) found by type assertion;
//   - Cache, the narrow API of the scheduler cache that handlers call;
//   - ClusterEvent and ActionType, which say what changed so that waiting
//     work is retried only when it may now fit;
//   - Factory and the registry that picks a handler by name at start-up
//     (--event-handler).
//
// pkg/cache implements Cache, runs the informers and dispatches every event
// to one Interface. This package imports neither pkg/cache nor any handler,
// so handlers (the default one in pkg/eventhandlers/default, or a vendor's)
// depend only on it.
//
// A vendor changes how the default handler treats nodes, pods and external
// workloads with a defaulthandler.Policy, which every event path obeys
// (add, update, delete, tombstone); overriding AddNode on an embedded
// handler would not change what UpdateNode does. Embedding is for adding
// resources the default handler ignores, as pkg/eventhandlers/twolevel
// does for Grants:
//
//	func factory(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
//		return defaulthandler.New(ctx, c, cfg, rc, defaulthandler.WithPolicy(defaulthandler.Policy{
//			Node: func(n *v1.Node) *v1.Node {
//				if n.Labels["acme.example.com/pool"] == "" {
//					return nil // not ours, on every path
//				}
//				return n
//			},
//		}))
//	}
//
// The handler is selected with --event-handler=acme in a binary built with
// app.NewSchedulerCommand(app.WithEventHandler("acme", factory)), or by
// registering the factory with RegisterEventHandler from an init() in a
// package the binary imports. examples/vendor-handler builds both and
// docs/writing-an-event-handler.md walks through it.
package eventhandlers
