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

// Package frameworks is the reference allocator's registry file format:
// the frameworks it divides nodes among (name, weight, where to read their
// demand report and how to authenticate) and the grants an administrator
// revoked. The same format is the --config file written by hand and the
// --state-file the allocator rewrites (temporary file and rename) after
// every admin change.
//
//	frameworks:
//	- name: batch
//	  weight: 2
//	  demandURL: http://127.0.0.1:10259/demand
//	- name: vms
//	  demandURL: https://vm-manager.example:8443/demand
//	  bearerTokenFile: /var/run/secrets/allocator/token
//	  caFile: /etc/allocator/vm-manager-ca.crt
//	revoked:
//	- grant: vms.node-3
//	  message: maintenance
//	held:
//	- grant: batch.node-1
//	  resources: {cpu: 3500m, memory: 6Gi}
//
// The held section is written by the allocator, never by hand: per grant,
// what the framework might occupy on the node (its grant versions not yet
// acknowledged, or its usage), so that a restarted allocator does not
// hand that capacity to anyone else. Files without it load as before.
//
// Load decodes strictly: unknown fields, duplicate names and invalid
// values are errors naming the file and line.
package frameworks
