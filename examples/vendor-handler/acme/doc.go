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

// Package acme is an example of an event handler that a vendor ships
// outside the batch-scheduler repository: the "acme" handler is the
// default handler (pkg/eventhandlers/default) with a Policy that
//
//   - ignores every node that lacks the pool label (by default
//     acme.example.com/pool; any value counts), and
//   - hides a per-node safety margin from the scheduler: each resource
//     listed in the reserve is subtracted from the node's allocatable,
//     down to zero, never below.
//
// # Configuration
//
// The handler's entry in the --config-path file:
//
//	eventHandlers:
//	- name: acme
//	  args:
//	    poolLabel: acme.example.com/pool
//	    reserve: {cpu: 500m, memory: 512Mi}
//	    default:                 # the default handler's own settings
//	      dynamicResources: []
//
// Every field is optional; the args are decoded strictly, so a misspelt
// field is an error that names it and its line in the file.
//
// # Why a Policy and not overridden methods
//
// The default handler calls the Policy on every path a node can take: add,
// the old and the new version of an update, delete and tombstones. A node
// relabelled out of the pool therefore leaves the cache, and one
// relabelled into it enters, with its reserve applied. Overriding AddNode
// in a type that embeds *defaulthandler.Handler would not achieve that:
// Go methods are not virtual, so the embedded UpdateNode would keep
// adding unlabelled nodes and the embedded DeleteNode would know nothing
// of the override.
//
// # Using it
//
// Pass Factory to app.WithEventHandler in your main package, or import
// the register package for its side effect; see the README next to this
// module's go.mod for when to prefer which.
package acme
