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
