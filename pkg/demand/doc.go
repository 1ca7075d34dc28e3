// Package demand is the wire format a framework publishes for a two-level
// allocator: what it could not place (so the allocator can grow its grants
// where work waits) and what it uses per node (so the allocator never takes
// back capacity in use).
//
// batch-scheduler serves a Report as JSON at /demand; the reference VM
// manager (examples/vm-manager) serves the same format, and the reference
// allocator (examples/allocator) reads both with Fetch. docs/two-level.md
// documents the fields.
package demand
