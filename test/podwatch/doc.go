// Package podwatch judges a scheduler from outside, by what the API
// server shows: a Watcher follows every transition of the pods of one
// namespace and records the guarantees it saw broken (a pod bound twice, a
// node over-committed, a gang running below its quorum, a pod it may have
// missed). The chaos suite and the tests of real workloads (Jobs,
// operators) use it; it knows nothing of the scheduler under test, so it
// judges kube-scheduler the same way.
package podwatch
