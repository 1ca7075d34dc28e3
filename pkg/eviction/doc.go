// Package eviction evicts pods through the Eviction API (policy/v1), which
// honours PodDisruptionBudgets and the pod's grace period, and classifies
// the answer: accepted, the pod already gone, or refused (HTTP 429, a
// budget that allows no disruption now). Preemption (pkg/scheduler) and the
// two-level handler's eviction above a grant (pkg/eventhandlers/twolevel)
// use it.
package eviction
