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

// Package app builds the batch-scheduler command. Out-of-tree builds call
// NewSchedulerCommand with WithEventHandler (or WithCustomInformerSource) to
// add their own implementations without forking:
//
//	func main() {
//		os.Exit(app.Execute(app.NewSchedulerCommand(
//			app.WithEventHandler("acme", acme.New),
//		)))
//	}
//
// The command follows the conventions of Kubernetes components, with
// their libraries: logging flags and --feature-gates from
// k8s.io/component-base/logs (logging.go), --version from its verflag,
// the metric flags of k8s.io/component-base/metrics (metricsoptions.go),
// and the endpoints of kube-scheduler (serving.go, health.go): HTTPS with
// delegated authentication and authorization from k8s.io/apiserver,
// /healthz, /livez and /readyz for anyone, /metrics (component-base's
// legacy registry and the scheduler's own component-base metrics) and
// /debug/* for users the API server authorizes. Execute maps errors to
// exit codes: 2 for an *ExitError of a usage or configuration error, 1
// for anything else.
package app
