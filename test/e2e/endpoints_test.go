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

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
)

// endpointAccess is how tests reach the schedulers' secure port.
type endpointAccess struct {
	// certFile and keyFile are the serving certificate every scheduler
	// of the package gets (--tls-cert-file, --tls-private-key-file):
	// generating one per scheduler would cost two RSA keys each time.
	certFile, keyFile string
	// client trusts that certificate.
	client *http.Client
	// token is a ServiceAccount token allowed "get" on /metrics and
	// /debug/*.
	token string
}

// endpointsNamespace holds the ServiceAccounts of the tokens.
const endpointsNamespace = "e2e-endpoints"

var (
	accessOnce sync.Once
	access     *endpointAccess
	accessErr  error
)

// endpoints returns the access shared by the package, setting it up on
// first use.
func endpoints(t *testing.T) *endpointAccess {
	t.Helper()
	accessOnce.Do(func() { access, accessErr = newEndpointAccess() })
	if accessErr != nil {
		t.Fatalf("setting up access to the schedulers' endpoints: %v", accessErr)
	}
	return access
}

func newEndpointAccess() (*endpointAccess, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return nil, fmt.Errorf("generating the serving certificate: %w", err)
	}
	dir := filepath.Join(cp.Dir, "serving")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	a := &endpointAccess{certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	if err := os.WriteFile(a.certFile, certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(a.keyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	// The file holds the certificate and the CA that signed it.
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		return nil, errors.New("no certificate in the generated PEM")
	}
	a.client = &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: endpointsNamespace}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", endpointsNamespace, err)
	}
	if a.token, err = serviceAccountToken(ctx, "endpoints-reader", true); err != nil {
		return nil, err
	}
	return a, nil
}

// serviceAccountToken creates the ServiceAccount name in
// endpointsNamespace, binds it to a ClusterRole allowing "get" on the
// non-resource URLs /metrics and /debug/* if allowed, and returns a token
// for it from the TokenRequest API, as kubectl create token does.
func serviceAccountToken(ctx context.Context, name string, allowed bool) (string, error) {
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: endpointsNamespace}}
	if _, err := cp.Client.CoreV1().ServiceAccounts(endpointsNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating ServiceAccount %s/%s: %w", endpointsNamespace, name, err)
	}
	if allowed {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + name},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/debug/*"}, Verbs: []string{"get"}}},
		}
		if _, err := cp.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating ClusterRole %s: %w", role.Name, err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: endpointsNamespace, Name: name}},
		}
		if _, err := cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating ClusterRoleBinding %s: %w", binding.Name, err)
		}
	}
	expiry := int64(2 * time.Hour / time.Second)
	tr, err := cp.Client.CoreV1().ServiceAccounts(endpointsNamespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", endpointsNamespace, name, err)
	}
	return tr.Status.Token, nil
}
