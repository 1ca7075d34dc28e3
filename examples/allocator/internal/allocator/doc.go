// Package allocator is the reference allocator's engine: it watches Nodes
// through a shared informer, keeps the registry of frameworks and revoked
// grants (persisting it to a state file on every admin change), reads each
// framework's demand report, runs drf.Allocate on every round, and
// publishes the resulting Grants in a resourcemanager.Store that
// batch-scheduler's custom informers list and watch. Handler serves that
// store, the admin API, /healthz and /metrics on one listener.
package allocator
