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
