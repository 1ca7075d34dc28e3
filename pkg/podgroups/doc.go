// Package podgroups writes the status of the group objects of the gang
// dialects the way their own schedulers do, so that their tooling keeps
// working: the PodGroupInitiallyScheduled condition of a native
// scheduling.k8s.io PodGroup, and status.phase of scheduler-plugins and
// Volcano PodGroups.
//
// Which kinds are written, and how, is the table of gang dialects'
// (pkg/dialects, Dialect.Status): a StatusRule of this package per kind,
// given to New.
//
// A Writer is fed by the event handler: the group objects it sees, and
// the pods of their gangs as they change. A worker computes each group's
// status from the scheduler cache's job and the pods' own conditions, and
// patches it only when it differs from what the object says and from what
// the Writer last wrote; keys are coalesced and rate limited by a
// workqueue.
package podgroups
