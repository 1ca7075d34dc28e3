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

// Command acme-scheduler is batch-scheduler with the acme event handler
// built in, the way a vendor ships it: its own main package, in its own
// module, with no fork of batch-scheduler.
//
// The handler is passed to the command as an option
// (app.WithEventHandler), so it lives in the command's private copy of the
// registry and the process-wide registry is left alone. This is the
// variant to prefer; cmd/acme-scheduler-blank shows the other one.
//
// Usage:
//
//	acme-scheduler --list-event-handlers
//	acme-scheduler --kubeconfig=$HOME/.kube/config --event-handler=acme --config-path=acme.yaml
//
// Every flag of batch-scheduler is available; see acme-scheduler --help.
package main
