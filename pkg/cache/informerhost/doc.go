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

// Package informerhost is the cache's informer host: it starts every
// informer the scheduler needs and delivers their events to the event
// handler. The cache (pkg/cache) owns one Host, gives it the filters that
// need the cache's state (whose pods, which nodes, which owner kinds may
// be listed) and starts its own loops beside it.
//
//   - Host.Run starts the native informers the handler and the plugins
//     need (Options.Resources), a dynamic informer for each resource the
//     handler asks for, the custom informers (AddCustomInformer), and,
//     through discovery, an informer for each resource the handler would
//     like watched where the API server serves it (discovery.go). It
//     knows when their handlers have synced (HandlersSynced,
//     WaitForHandlersSync).
//   - StripForScheduler, the transform every informer runs, drops what
//     the scheduler never reads and interns what thousands of pods
//     repeat; NewInformerFactory is the shared factory of native
//     informers that applies it. NewInformerClient is the clientset to
//     build it on: it reads pods and nodes from a protobuf watch without
//     copying the frame and leaves out on the wire what the transform
//     would drop (streamdecode.go).
//   - Dispatchers map a resource to the handler's methods for it (the one
//     dispatch table), count every event per resource and event, and keep
//     a handler's panic from reaching the informer.
//   - An EventTracker per registration counts the events that arrived (a
//     probe registration) and those handled: EventBacklog and its gauges,
//     and /readyz.
//
// Its lock (Host.runMu) and the dispatchers' are steps 3 and 4 of the
// lock discipline written down in pkg/cache.
package informerhost
