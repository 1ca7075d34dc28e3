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
