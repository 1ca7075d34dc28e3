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

package allocator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/frameworks"
)

// maxBody bounds an admin request's body.
const maxBody = 1 << 20

// apiError is the body of every error answer.
type apiError struct {
	// Error says what is wrong, naming the field.
	Error string `json:"error"`
	// Field is the offending field's path, when one is to blame.
	Field string `json:"field,omitempty"`
}

// Handler serves, on one listener:
//
//	GET    /apis/batch-scheduler.io/v1alpha1/grants   list and watch (custom informers)
//	GET    /frameworks                                the registered frameworks
//	PUT    /frameworks/{name}                         register or replace one
//	DELETE /frameworks/{name}                         unregister one
//	GET    /allocation                                the last round
//	POST   /grants/{name}/revoke                      revoke a grant
//	DELETE /grants/{name}/revocation                  lift a revocation
//	GET    /healthz                                   liveness
//	GET    /readyz                                    200 once the first round has published
//	GET    /metrics                                   Prometheus metrics
//
// Until the first round since the start has published, the grants and
// /allocation answer 503: a restarted allocator's store is empty until
// that round publishes again what the state file restored, and a
// framework or checker that read it meanwhile would take "no grants" for
// the allocator's word. Their clients keep what they last read and retry.
func (a *Allocator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/apis/", a.whenReady(a.store.Handler()))
	mux.HandleFunc("GET /frameworks", a.listFrameworks)
	mux.HandleFunc("PUT /frameworks/{name}", a.putFramework)
	mux.HandleFunc("DELETE /frameworks/{name}", a.deleteFramework)
	mux.Handle("GET /allocation", a.whenReady(http.HandlerFunc(a.getAllocation)))
	mux.HandleFunc("POST /grants/{name}/revoke", a.revoke)
	mux.HandleFunc("DELETE /grants/{name}/revocation", a.unrevoke)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /readyz", a.whenReady(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	})))
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.metrics.registry, promhttp.HandlerOpts{}))
	return mux
}

// whenReady serves h once the first round has published, and 503 with a
// Retry-After before.
func (a *Allocator) whenReady(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.ready.Load() {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "",
				"allocator %s has not finished its first round since it started: its grants are not published yet", a.opts.Name)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, fieldPath, format string, args ...any) {
	writeJSON(w, code, apiError{Error: fmt.Sprintf(format, args...), Field: fieldPath})
}

// decode strictly decodes r's JSON body into v; an empty body leaves v
// as it is when allowEmpty. It answers 400 itself and returns false on
// error, naming the field when the error is about one.
func decode(w http.ResponseWriter, r *http.Request, v any, allowEmpty bool) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "", "reading the body: %v", err)
		return false
	}
	if len(body) > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "", "body larger than %d bytes", maxBody)
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if allowEmpty {
			return true
		}
		writeError(w, http.StatusBadRequest, "", "empty body: want a JSON object")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			writeError(w, http.StatusBadRequest, typeErr.Field, "%s: expected %s, got JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			writeError(w, http.StatusBadRequest, name, "%s: unknown field", name)
		default:
			writeError(w, http.StatusBadRequest, "", "body is not valid JSON: %v", err)
		}
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "", "body holds more than one JSON value")
		return false
	}
	return true
}

// registryLocked is the registry, with what the state file counts as
// held, as a File. a.mu must be held.
func (a *Allocator) registryLocked() *frameworks.File {
	f := &frameworks.File{Frameworks: []frameworks.Framework{}}
	for _, fw := range a.fws {
		f.Frameworks = append(f.Frameworks, fw.spec)
	}
	sort.Slice(f.Frameworks, func(i, j int) bool { return f.Frameworks[i].Name < f.Frameworks[j].Name })
	for k, msg := range a.revoked {
		f.Revoked = append(f.Revoked, frameworks.Revocation{Grant: grantName(k), Message: msg})
	}
	sort.Slice(f.Revoked, func(i, j int) bool { return f.Revoked[i].Grant < f.Revoked[j].Grant })
	f.Held = heldEntries(a.persisted)
	return f
}

// saveLocked persists the registry to the state file, if there is one.
// a.mu must be held.
func (a *Allocator) saveLocked() error {
	if a.opts.StateFile == "" {
		return nil
	}
	return frameworks.Save(a.opts.StateFile, a.registryLocked())
}

func (a *Allocator) listFrameworks(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	f := a.registryLocked()
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, f.Frameworks)
}

// putBody is the body of PUT /frameworks/{name}: a Framework without its
// name, which is in the path.
type putBody struct {
	Weight                *float64 `json:"weight,omitempty"`
	DemandURL             string   `json:"demandURL,omitempty"`
	BearerTokenFile       string   `json:"bearerTokenFile,omitempty"`
	CAFile                string   `json:"caFile,omitempty"`
	InsecureSkipTLSVerify bool     `json:"insecureSkipTLSVerify,omitempty"`
}

func (a *Allocator) putFramework(w http.ResponseWriter, r *http.Request) {
	var b putBody
	if !decode(w, r, &b, true) {
		return
	}
	spec := frameworks.Framework{
		Name: r.PathValue("name"), Weight: b.Weight, DemandURL: b.DemandURL,
		BearerTokenFile: b.BearerTokenFile, CAFile: b.CAFile, InsecureSkipTLSVerify: b.InsecureSkipTLSVerify,
	}
	if errs := spec.Validate(nil); len(errs) > 0 {
		e := errs[0]
		writeError(w, http.StatusBadRequest, e.Field, "%s", errs.ToAggregate().Error())
		return
	}
	fw, err := newFramework(spec)
	if err != nil {
		writeError(w, http.StatusBadRequest, "caFile", "%v", err)
		return
	}
	a.mu.Lock()
	old, existed := a.fws[spec.Name]
	a.fws[spec.Name] = fw
	if err := a.saveLocked(); err != nil {
		if existed {
			a.fws[spec.Name] = old
		} else {
			delete(a.fws, spec.Name)
		}
		a.mu.Unlock()
		klog.ErrorS(err, "Saving the state failed; framework not changed", "framework", spec.Name)
		writeError(w, http.StatusInternalServerError, "", "saving the state: %v", err)
		return
	}
	a.mu.Unlock()
	klog.InfoS("Framework registered", "framework", spec.Name, "weight", spec.EffectiveWeight(), "demandURL", spec.DemandURL, "replaced", existed)
	a.Trigger()
	code := http.StatusCreated
	if existed {
		code = http.StatusOK
	}
	writeJSON(w, code, spec)
}

func (a *Allocator) deleteFramework(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	a.mu.Lock()
	old, ok := a.fws[name]
	if !ok {
		a.mu.Unlock()
		writeError(w, http.StatusNotFound, "name", "framework %q is not registered", name)
		return
	}
	delete(a.fws, name)
	lifted := map[drf.Key]string{}
	for k, msg := range a.revoked {
		if k.Framework == name {
			lifted[k] = msg
			delete(a.revoked, k)
		}
	}
	if err := a.saveLocked(); err != nil {
		a.fws[name] = old
		for k, msg := range lifted {
			a.revoked[k] = msg
		}
		a.mu.Unlock()
		klog.ErrorS(err, "Saving the state failed; framework kept", "framework", name)
		writeError(w, http.StatusInternalServerError, "", "saving the state: %v", err)
		return
	}
	a.mu.Unlock()
	klog.InfoS("Framework unregistered", "framework", name)
	a.Trigger()
	w.WriteHeader(http.StatusNoContent)
}

func (a *Allocator) getAllocation(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	st := a.status
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

// revokeBody is the body of POST /grants/{name}/revoke.
type revokeBody struct {
	Message string `json:"message,omitempty"`
}

// grantKey parses the {name} of a /grants path, answering 400 or 404
// itself when it is not a grant of a registered framework.
func (a *Allocator) grantKey(w http.ResponseWriter, r *http.Request) (drf.Key, bool) {
	f, n, err := frameworks.ParseGrantName(r.PathValue("name"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "name", "%v", err)
		return drf.Key{}, false
	}
	return drf.Key{Framework: f, Node: n}, true
}

func (a *Allocator) revoke(w http.ResponseWriter, r *http.Request) {
	k, ok := a.grantKey(w, r)
	if !ok {
		return
	}
	var b revokeBody
	if !decode(w, r, &b, true) {
		return
	}
	if len(b.Message) > 1024 {
		writeError(w, http.StatusBadRequest, "message", "message: %d bytes, at most 1024", len(b.Message))
		return
	}
	a.mu.Lock()
	if _, ok := a.fws[k.Framework]; !ok {
		a.mu.Unlock()
		writeError(w, http.StatusNotFound, "name", "grant %s: framework %q is not registered", grantName(k), k.Framework)
		return
	}
	old, had := a.revoked[k]
	a.revoked[k] = b.Message
	if err := a.saveLocked(); err != nil {
		if had {
			a.revoked[k] = old
		} else {
			delete(a.revoked, k)
		}
		a.mu.Unlock()
		writeError(w, http.StatusInternalServerError, "", "saving the state: %v", err)
		return
	}
	a.mu.Unlock()
	klog.InfoS("Grant revoked", "grant", grantName(k), "message", b.Message)
	a.Trigger()
	writeJSON(w, http.StatusOK, frameworks.Revocation{Grant: grantName(k), Message: b.Message})
}

func (a *Allocator) unrevoke(w http.ResponseWriter, r *http.Request) {
	k, ok := a.grantKey(w, r)
	if !ok {
		return
	}
	a.mu.Lock()
	old, had := a.revoked[k]
	if !had {
		a.mu.Unlock()
		writeError(w, http.StatusNotFound, "name", "grant %s is not revoked", grantName(k))
		return
	}
	delete(a.revoked, k)
	if err := a.saveLocked(); err != nil {
		a.revoked[k] = old
		a.mu.Unlock()
		writeError(w, http.StatusInternalServerError, "", "saving the state: %v", err)
		return
	}
	a.mu.Unlock()
	klog.InfoS("Grant revocation lifted", "grant", grantName(k))
	a.Trigger()
	w.WriteHeader(http.StatusNoContent)
}
