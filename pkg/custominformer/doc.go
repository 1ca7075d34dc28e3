// Package custominformer builds informers whose objects come from outside
// the cluster's own apiserver: external resource managers such as a
// Mesos-like allocator or a VM manager.
//
// A custom informer is an ordinary client-go SharedIndexInformer built from
// a cache.ListerWatcher, so the store, the DeltaFIFO and the fan-out to
// handlers are client-go's. What this package adds is
//   - New, which builds the informer for a source that is not an
//     apiserver (it opts out of watch-list semantics);
//   - a registry of source types (RegisterSource), following the same rules
//     as the event-handler registry, so vendors can add their own;
//   - Build, which turns one customInformers entry of the configuration
//     file into an informer.
//
// The scheduler cache runs these informers next to the native ones and
// dispatches their events to the same event handler (see
// SchedulerCache.AddCustomInformer).
package custominformer
