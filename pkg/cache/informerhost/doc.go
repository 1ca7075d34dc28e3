// Package informerhost holds the parts of the cache's informer host that
// do not need the cache's state:
//
//   - what the informers keep of each object: StripForScheduler, the
//     transform every informer of the cache runs (native, dynamic and
//     custom alike), which drops what the scheduler never reads and
//     interns what thousands of pods repeat (container specs,
//     tolerations, labels, owner references), and NewInformerFactory, the
//     shared factory of native informers that applies it;
//   - how events reach the handler: Dispatchers map a resource to the
//     event handler's methods for it (the one dispatch table), count every
//     event per resource and event, and keep a handler's panic from
//     reaching the informer;
//   - how far the handler is behind: an EventTracker per registration
//     counts the events that arrived (a probe registration) and those
//     handled, for the backlog metrics and /readyz.
//
// Starting the informers and wiring them to the handler (Run, custom
// informers, discovery of served resources) still lives in pkg/cache
// (informers.go, custom.go, discovery.go), behind the filters that need
// the cache (whose pods, which nodes).
package informerhost
