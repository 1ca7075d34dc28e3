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

// Package dialects owns the gang dialects: the ways pods and objects of
// other projects say "these pods start together, at least n of them".
// Its Table has one Dialect per kind of group object (the native,
// scheduler-plugins and Volcano PodGroups, the native CompositePodGroup
// its child PodGroups name, the batch/v1 Job, and the owners gangs are
// inferred from: RayCluster, JobSet, LeaderWorkerSet, MPIJob,
// PyTorchJob), each with
//
//   - its kind and the resources its objects come from;
//   - how a pod names its group (Match: a label, an annotation, a field)
//     or is put in its owner's gang (Infer), or that pods reach it only
//     through the group objects that name it as their parent
//     (Composite);
//   - how an object is read (Policy: quorum, topology constraint, queue,
//     schedule timeout, the sub-group rules of a multi-level gang), with
//     the paths it reads (Fields) so the informer keeps only those;
//   - whether and how its status is written (Status, a rule of
//     pkg/podgroups, whose Writer does the writing).
//
// The default event handler (pkg/eventhandlers/default) watches what the
// table says and turns objects into group policies; the cache
// (pkg/cache) puts pods in gangs by the table's rules, a
// framework.GroupMatcher. Objects are read with the readers of fields.go
// only, which never panic and name the field in their errors.
//
// This package is the only home of the rules that match a pod to a gang:
// the table's Match and Infer, and IgnoredGroupSignals (the signals the
// scheduler ignores, and why). pkg/framework, which this package imports,
// names the labels and annotations but reads none of them; it resolves a
// pod's group by the GroupMatcher it is handed, and a GroupResolver
// without one matches no group. A caller with no table of its own uses
// Resolver, the built-in table without inferred gangs.
//
// Adding a dialect is one entry: dialects.Builtin().With(d) given to the
// handler with defaulthandler.WithDialects, or an entry of builtin.go.
package dialects
