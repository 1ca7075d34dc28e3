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

// Package debugger holds the tools that inspect a scheduler cache from the
// outside, apart from the cache itself, which keeps only state:
//
//   - Verify, the consistency checker: it lists the truth (the API
//     server's nodes and pods, every custom informer's objects), applies
//     the running handler's own rules for what the cache records
//     (eventhandlers.StateRules, when the handler has them), compares the
//     result with a cache.View, and re-checks each candidate difference
//     against fresh reads and a fresh View before it reports it
//     (docs/debugging.md).
//   - VerifyHandler and VerifyOnSignal serve the checker at VerifyPath
//     and run it on SIGUSR2; DumpHandler serves the cache's Dump at
//     DumpPath.
//
// It reads the cache only through its exported readers (View, Dump,
// StateRules, CustomInformers, JobIDForPod, IsResponsibleFor, Options,
// Metrics), so it holds none of the cache's locks itself: a View is taken
// in short sections of the cache's read lock (see pkg/cache's lock
// discipline), and nothing here runs on the scheduling path. Only the
// command imports this package; TestImportDirection in pkg/framework
// keeps it so.
package debugger
