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

package custominformer

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

func newWorkloadStore(t *testing.T) *resourcemanager.Store {
	t.Helper()
	s, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         v1alpha1.ExternalWorkloadsResource,
		Example:          &v1alpha1.ExternalWorkload{},
		BookmarkInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func workload(ns, name, owner string) *v1alpha1.ExternalWorkload {
	return &v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ExternalWorkloadSpec{NodeName: "host-1", WorkloadKind: "vm", Owner: owner},
	}
}

func buildSource(t *testing.T, sourceType, args string) (Built, error) {
	t.Helper()
	ci := configapi.CustomInformer{Name: "workloads", Resource: "ExternalWorkload", SourceType: sourceType,
		SourceArgs: configapi.NewRawArgs("c.yaml", []byte(args))}
	return Build(context.Background(), NewInTreeSourceRegistry(), "c.yaml", 2, ci)
}

func buildHTTP(t *testing.T, args string) Built {
	t.Helper()
	b, err := buildSource(t, "http", args)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

// errorLog collects the informer's list/watch errors.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) { l.mu.Lock(); l.errs = append(l.errs, err); l.mu.Unlock() }

func (l *errorLog) list() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// waitFor polls cond until it holds, failing the test after 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// run starts b's informer, collecting the failures its source retries,
// and stops it at the end of the test.
func run(t *testing.T, b Built) *errorLog {
	t.Helper()
	log := &errorLog{}
	b.source.onError = log.add
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Informer.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return log
}

// waitForError waits for a reported error containing one of subs and
// checks the informer has not synced.
func waitForError(t *testing.T, b Built, log *errorLog, match func(error) bool) error {
	t.Helper()
	var got error
	waitFor(t, "a matching list/watch error", func() bool {
		for _, err := range log.list() {
			if match(err) {
				got = err
				return true
			}
		}
		return false
	})
	if b.Informer.HasSynced() {
		t.Fatalf("informer synced despite error %v", got)
	}
	return got
}

func contains(subs ...string) func(error) bool {
	return func(err error) bool {
		for _, s := range subs {
			if strings.Contains(err.Error(), s) {
				return true
			}
		}
		return false
	}
}

func TestHTTPSourceDeliversChangesInOrder(t *testing.T) {
	store := newWorkloadStore(t)
	srv := httptest.NewServer(store.Handler())
	t.Cleanup(srv.Close)
	if err := store.Create(workload("ns", "w1", "alice")); err != nil {
		t.Fatal(err)
	}

	b := buildHTTP(t, "url: "+srv.URL+"\ntimeout: 5s\n")
	var mu sync.Mutex
	var seen []string
	record := func(s string) { mu.Lock(); seen = append(seen, s); mu.Unlock() }
	owner := func(o any) string {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		w := o.(*v1alpha1.ExternalWorkload)
		return w.Name + "=" + w.Spec.Owner
	}
	if _, err := b.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { record("add " + owner(o)) },
		UpdateFunc: func(_, o any) { record("update " + owner(o)) },
		DeleteFunc: func(o any) { record("delete " + owner(o)) },
	}); err != nil {
		t.Fatal(err)
	}
	log := run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	waitFor(t, "a watcher", func() bool { return store.Watchers() > 0 })

	w1 := workload("ns", "w1", "bob")
	if err := store.Update(w1); err != nil {
		t.Fatal(err)
	}
	if err := store.Create(workload("other", "w2", "carol")); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete("ns", "w1"); err != nil {
		t.Fatal(err)
	}
	want := []string{"add w1=alice", "update w1=bob", "add w2=carol", "delete w1=bob"}
	waitFor(t, "all events", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) >= len(want) })
	mu.Lock()
	got := strings.Join(seen, ", ")
	mu.Unlock()
	if got != strings.Join(want, ", ") {
		t.Fatalf("events = %s\nwant     %s", got, strings.Join(want, ", "))
	}
	keys := b.Informer.GetStore().ListKeys()
	if len(keys) != 1 || keys[0] != "other/w2" {
		t.Fatalf("store keys = %v, want [other/w2]", keys)
	}
	obj, _, _ := b.Informer.GetStore().GetByKey("other/w2")
	if w := obj.(*v1alpha1.ExternalWorkload); w.ResourceVersion == "" || w.Spec.NodeName != "host-1" {
		t.Fatalf("decoded object = %+v", w)
	}
	if errs := log.list(); len(errs) != 0 {
		t.Fatalf("unexpected list/watch errors: %v", errs)
	}
}

func TestHTTPSourcePathOverride(t *testing.T) {
	store := newWorkloadStore(t)
	mux := http.NewServeMux()
	mux.Handle("/manager/", http.StripPrefix("/manager/custom", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = store.Path()
		store.Handler().ServeHTTP(w, r)
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if err := store.Create(workload("ns", "w1", "alice")); err != nil {
		t.Fatal(err)
	}
	b := buildHTTP(t, "url: "+srv.URL+"/manager\npath: /custom/workloads\n")
	run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	if keys := b.Informer.GetStore().ListKeys(); len(keys) != 1 {
		t.Fatalf("store keys = %v", keys)
	}
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// selfSigned returns a fresh self-signed certificate and its key, as PEM.
func selfSigned(t *testing.T) (certPEMBytes, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func TestHTTPSourceTLS(t *testing.T) {
	store := newWorkloadStore(t)
	if err := store.Create(workload("ns", "w1", "alice")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(store.Handler())
	t.Cleanup(srv.Close)

	t.Run("right CA", func(t *testing.T) {
		ca := writeFile(t, "ca.pem", certPEM(srv.Certificate()))
		b := buildHTTP(t, fmt.Sprintf("url: %s\ncaFile: %s\n", srv.URL, ca))
		run(t, b)
		waitFor(t, "sync", b.Informer.HasSynced)
		if keys := b.Informer.GetStore().ListKeys(); len(keys) != 1 {
			t.Fatalf("store keys = %v", keys)
		}
	})
	t.Run("wrong CA", func(t *testing.T) {
		other, _ := selfSigned(t)
		ca := writeFile(t, "ca.pem", other)
		b := buildHTTP(t, fmt.Sprintf("url: %s\ncaFile: %s\n", srv.URL, ca))
		log := run(t, b)
		err := waitForError(t, b, log, contains("x509", "certificate"))
		t.Logf("reported: %v", err)
	})
	t.Run("system roots", func(t *testing.T) {
		b := buildHTTP(t, "url: "+srv.URL+"\n")
		log := run(t, b)
		waitForError(t, b, log, contains("x509", "certificate"))
	})
	t.Run("insecureSkipTLSVerify", func(t *testing.T) {
		b := buildHTTP(t, "url: "+srv.URL+"\ninsecureSkipTLSVerify: true\n")
		run(t, b)
		waitFor(t, "sync", b.Informer.HasSynced)
	})
}

func TestHTTPSourceBearerTokenFile(t *testing.T) {

	store := newWorkloadStore(t)
	if err := store.Create(workload("ns", "w1", "alice")); err != nil {
		t.Fatal(err)
	}
	const token = "s3cret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		store.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	tokenFile := writeFile(t, "token", []byte("wrong\n"))
	b := buildHTTP(t, fmt.Sprintf("url: %s\nbearerTokenFile: %s\n", srv.URL, tokenFile))
	log := run(t, b)
	waitForError(t, b, log, func(err error) bool {
		return apierrors.IsUnauthorized(err) || strings.Contains(err.Error(), "401")
	})

	// The source re-reads the file when it changes (and after a 401), so
	// the next retry uses the new token; client-go's own token file
	// support would wait up to a minute.
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "sync after the token file was fixed", b.Informer.HasSynced)
	if keys := b.Informer.GetStore().ListKeys(); len(keys) != 1 {
		t.Fatalf("store keys = %v", keys)
	}
}

func TestHTTPSourceManagerDownAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	store := newWorkloadStore(t)
	if err := store.Create(workload("ns", "w1", "alice")); err != nil {
		t.Fatal(err)
	}
	b := buildHTTP(t, "url: http://"+addr+"\n")
	log := run(t, b)
	waitForError(t, b, log, contains("connection refused", "connect"))

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s was taken meanwhile (%v); the down-at-start part passed", addr, err)
	}
	srv := &http.Server{Handler: store.Handler()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	waitFor(t, "sync once the manager is up", b.Informer.HasSynced)
	if keys := b.Informer.GetStore().ListKeys(); len(keys) != 1 {
		t.Fatalf("store keys = %v", keys)
	}
}

func TestKubeconfigSource(t *testing.T) {

	store := newWorkloadStore(t)
	if err := store.Create(workload("ns", "w1", "alice")); err != nil {
		t.Fatal(err)
	}
	// TLS: client-go sends a kubeconfig's credentials to https servers
	// only.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer kc-token" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		store.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	kc := writeFile(t, "kubeconfig", []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: bad
  cluster: {server: "http://127.0.0.1:1"}
- name: good
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: u
  user: {token: kc-token}
contexts:
- name: bad
  context: {cluster: bad, user: u}
- name: good
  context: {cluster: good, user: u}
current-context: bad
`, srv.URL, base64.StdEncoding.EncodeToString(certPEM(srv.Certificate())))))
	b, err := buildSource(t, "kubeconfig", fmt.Sprintf("kubeconfig: %s\ncontext: good\nqps: 50\nburst: 100\n", kc))
	if err != nil {
		t.Fatal(err)
	}
	run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	if keys := b.Informer.GetStore().ListKeys(); len(keys) != 1 {
		t.Fatalf("store keys = %v", keys)
	}

	// A token file named by the kubeconfig is re-read when it changes.
	tokenFile := writeFile(t, "token", []byte("stale\n"))
	kcFile := writeFile(t, "kubeconfig-file", []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: good
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: u
  user: {tokenFile: %s}
contexts:
- name: good
  context: {cluster: good, user: u}
current-context: good
`, srv.URL, base64.StdEncoding.EncodeToString(certPEM(srv.Certificate())), tokenFile)))
	b2, err := buildSource(t, "kubeconfig", "kubeconfig: "+kcFile+"\n")
	if err != nil {
		t.Fatal(err)
	}
	log2 := run(t, b2)
	waitForError(t, b2, log2, func(err error) bool { return apierrors.IsUnauthorized(err) })
	if err := os.WriteFile(tokenFile, []byte("kc-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "sync after the kubeconfig's token file was fixed", b2.Informer.HasSynced)

	for _, tt := range []struct{ args, want string }{
		{"context: good\n", "kubeconfig: required"},
		{"kubeconfig: /nonexistent/kc\n", "kubeconfig: reading /nonexistent/kc: no such file"},
		{fmt.Sprintf("kubeconfig: %s\ncontext: nope\n", kc), `"nope"`},
		{"\n\nkubeconfig: x\nkontext: y\n", `c.yaml: line 2: custom informer "workloads": source kubeconfig: line 4: field kontext not found`},
	} {
		_, err := buildSource(t, "kubeconfig", tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("args %q: error %v, want it to contain %q", tt.args, err, tt.want)
		}
	}
}

func TestHTTPSourceArgErrors(t *testing.T) {
	cert, key := selfSigned(t)
	certFile := writeFile(t, "cert.pem", cert)
	keyFile := writeFile(t, "key.pem", key)
	tests := []struct{ args, want string }{
		{"\n\nurl: http://127.0.0.1:1\nbogus: 1\n", `c.yaml: line 2: custom informer "workloads": source http: line 4: field bogus not found`},
		{"timeout: 5s\n", "url: required"},
		{"", "url: required"},
		{"url: ftp://127.0.0.1\n", "url: must be http(s)"},
		{"url: 127.0.0.1:8080\n", "url: "},
		{"url: https://\n", "has no host"},
		{"url: https://127.0.0.1\ncaFile: /nonexistent/ca.pem\n", "caFile: reading /nonexistent/ca.pem: no such file"},
		{"url: https://127.0.0.1\ncaFile: " + keyFile + "\n", "caFile: " + keyFile + " holds no PEM certificate"},
		{"url: https://127.0.0.1\ncertFile: " + certFile + "\n", "keyFile: required with certFile"},
		{"url: https://127.0.0.1\nkeyFile: " + keyFile + "\n", "certFile: required with keyFile"},
		{"url: https://127.0.0.1\ncertFile: " + certFile + "\nkeyFile: " + certFile + "\n", "certFile/keyFile:"},
		{"url: https://127.0.0.1\nbearerTokenFile: /nonexistent/tok\n", "bearerTokenFile: reading /nonexistent/tok"},
		{"url: http://127.0.0.1\ncaFile: " + certFile + "\n", "need an https url"},
		{"url: https://127.0.0.1\ncaFile: " + certFile + "\ninsecureSkipTLSVerify: true\n", "insecureSkipTLSVerify: cannot be used with caFile"},
		{"url: https://127.0.0.1\ntimeout: soon\n", "line 2"},
		{"url: https://127.0.0.1\nqps: -1\n", "qps: must not be negative"},
		{"url: https://127.0.0.1\npath: grants\n", "path: \"grants\" must start with /"},
	}
	for _, tt := range tests {
		_, err := buildSource(t, "http", tt.args)
		if err == nil {
			t.Errorf("args %q: no error, want %q", tt.args, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `custom informer "workloads": source http`) {
			t.Errorf("args %q: error %q, want it to contain %q", tt.args, err, tt.want)
		}
	}
	// A valid client certificate pair is accepted.
	if _, err := buildSource(t, "http", "url: https://127.0.0.1\ncertFile: "+certFile+"\nkeyFile: "+keyFile+"\n"); err != nil {
		t.Errorf("valid cert/key: %v", err)
	}
}

func TestExampleObjectsHaveGVRs(t *testing.T) {
	want := map[string]string{
		"Node":             "/v1, Resource=nodes",
		"Pod":              "/v1, Resource=pods",
		"Grant":            "batch-scheduler.io/v1alpha1, Resource=grants",
		"ExternalWorkload": "batch-scheduler.io/v1alpha1, Resource=externalworkloads",
	}
	for r, w := range want {
		rt, ok := exampleObjects[eventhandlersResource(r)]
		if !ok {
			t.Errorf("%s missing", r)
			continue
		}
		if got := rt.gvr.String(); got != w {
			t.Errorf("%s: gvr %s, want %s", r, got, w)
		}
		if _, _, err := scheme.ObjectKinds(rt.newObj()); err != nil {
			t.Errorf("%s: not in the decoding scheme: %v", r, err)
		}
	}
}

func eventhandlersResource(s string) framework.EventResource { return framework.EventResource(s) }
