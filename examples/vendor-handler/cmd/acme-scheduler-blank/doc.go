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

// Command acme-scheduler-blank is the stock batch-scheduler command in a
// binary that also knows the acme event handler, because it imports
// example.com/acme-scheduler/acme/register for the side effect of its
// init(): the handler is registered process-wide before main runs.
//
// It behaves exactly like cmd/acme-scheduler. The difference is where the
// handler is registered: here in the global registry, which every command
// and test in the process shares, there in the command's own copy. Prefer
// the option (cmd/acme-scheduler) when you write main yourself; use the
// blank import when the main package cannot take options, or when several
// commands in one binary should all know the handler.
//
// Usage:
//
//	acme-scheduler-blank --list-event-handlers
//	acme-scheduler-blank --kubeconfig=$HOME/.kube/config --event-handler=acme --config-path=acme.yaml
package main
