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

// Package custominformer builds informers whose objects come from outside
// the cluster's own apiserver: external resource managers such as a
// Mesos-like allocator or a VM manager.
//
// A custom informer is an ordinary client-go SharedIndexInformer built from
// a cache.ListerWatcher, so the store, the DeltaFIFO and the fan-out to
// handlers are client-go's. What this package adds is
//   - New, which builds the informer for a source that is not an
//     apiserver (it opts out of watch-list semantics), behind a check that
//     rejects what must not be stored (a list or object of the wrong type
//     or kind, a response that is not a list, a missing name or
//     resourceVersion) and counts every event, error, rejection and relist
//     in Metrics, labelled with the informer's name;
//   - retries in the source rather than in client-go's reflector, whose
//     backoff grows to a minute: attempts are 1-2 s apart at most, a watch
//     that ends is resumed, and a relist (after a 410, an error or
//     resourceVersions going backwards) is delivered to the reflector as
//     the difference from what it holds (resilient.go), so the informer
//     agrees with a restarted manager within seconds;
//   - a registry of source types (RegisterSource), following the same rules
//     as the event-handler registry, so vendors can add their own;
//   - the built-in sources: http (the Kubernetes list/watch JSON protocol
//     through client-go's REST client, with TLS, a rotating bearer token
//     file and size limits), kubeconfig (another cluster's apiserver) and
//     file (a directory of manifests);
//   - Build, which turns one customInformers entry of the configuration
//     file into an informer.
//
// Rejection is fail-closed: a rejected list fails whole and a rejected
// watch event ends the watch, so the informer keeps its last good state
// and lists again after a pause. Dropping a bad object instead would delete
// it from the store, and a forgotten VM frees capacity that is in use.
//
// The scheduler cache runs these informers next to the native ones and
// dispatches their events to the same event handler (see
// SchedulerCache.AddCustomInformer).
package custominformer
