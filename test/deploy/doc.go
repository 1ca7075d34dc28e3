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

// Package deploy tests the manifests in deploy/ against a real
// kube-apiserver (test/controlplane): the kustomization builds and every
// object is accepted (server-side dry run); the scheduler's pod passes the
// "restricted" Pod Security Standard; the RBAC rules are exactly the
// permissions the code needs, as listed in a table here, and the API
// server's authorizer agrees; and the scheduler, run with the deployed
// configuration and the ServiceAccount's token, binds pods with those
// permissions alone.
//
// The package holds tests only.
package deploy
