// Package informerhost is what the scheduler's informers keep of each
// object: StripForScheduler, the transform every informer of the cache
// runs (native, dynamic and custom alike), which drops what the scheduler
// never reads and interns what thousands of pods repeat (container specs,
// tolerations, labels, owner references), and NewInformerFactory, the
// shared factory of native informers that applies it.
//
// It is the first part of the cache's informer host to live apart from
// the state store; the registration of handlers, the dispatcher and the
// backlog probe still live in pkg/cache (informers.go, dispatch.go,
// backlog.go, discovery.go).
package informerhost
