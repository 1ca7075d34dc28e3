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
