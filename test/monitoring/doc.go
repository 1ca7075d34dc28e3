// Package monitoring tests the monitoring objects in deploy/monitoring/:
// every PromQL expression of the alerts and of the Grafana dashboard
// parses and names only metrics that the scheduler exports (found from
// the code that registers them, not from a list kept here); every alert
// is complete; the Service, the ServiceMonitor and the Deployment agree on
// labels and ports; and the kustomization builds every file of the
// directory.
//
// The tests need no control plane; they live under test/ because they
// read deploy/.
//
// The package holds tests only.
package monitoring
