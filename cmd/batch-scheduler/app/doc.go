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
