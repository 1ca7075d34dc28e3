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

package manager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/demand"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// MaxRequestBytes bounds the body of POST /vms.
const MaxRequestBytes = 64 << 10

// ErrorBody is the JSON body of every 4xx and 5xx answer of the admin API.
type ErrorBody struct {
	// Error says what is wrong, naming the VM, field or host.
	Error string `json:"error"`
	// Field is the request field at fault, for bad input.
	Field string `json:"field,omitempty"`
	// Reason is a Reason constant for a VM that does not fit or whose
	// ledger could not be written, "AlreadyExists", "NotFound" or
	// "Placing".
	Reason string `json:"reason,omitempty"`
}

// VMList is the body of GET /vms.
type VMList struct {
	Items []VM `json:"items"`
}

// HostList is the body of GET /hosts.
type HostList struct {
	Items []Host `json:"items"`
}

// NewHandler returns the manager's HTTP API on one mux:
//
//	POST   /vms          create a VM (201 placed, 202 pending, 400, 409, 422;
//	                     503 when its ledger could not be written)
//	GET    /vms          list the VMs
//	GET    /vms/{name}   one VM (404 if unknown)
//	DELETE /vms/{name}   delete a VM, pending or running (404 if unknown,
//	                     409 while it is being placed)
//	GET    /hosts        each host's accounting: allocatable, pods, VMs, free
//	GET    /healthz      200 "ok"
//	GET    /demand       the demand report (pkg/demand)
//	GET    /metrics      Prometheus metrics from gatherer
//
// and, under store's group-version path, the list/watch protocol of the
// published ExternalWorkloads.
func NewHandler(m *Manager, store *resourcemanager.Store, gatherer prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /vms", m.serveCreate)
	mux.HandleFunc("GET /vms", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, VMList{Items: m.List()})
	})
	mux.HandleFunc("GET /vms/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		v, ok := m.Get(name)
		if !ok {
			writeJSON(w, http.StatusNotFound, ErrorBody{Error: "VM " + name + ": not found", Reason: "NotFound"})
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("DELETE /vms/{name}", m.serveDelete)
	mux.HandleFunc("GET /hosts", func(w http.ResponseWriter, _ *http.Request) {
		hosts, err := m.Hosts()
		if err != nil {
			klog.ErrorS(err, "Could not account for the hosts")
			writeJSON(w, http.StatusInternalServerError, ErrorBody{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, HostList{Items: hosts})
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("GET "+demand.Path, demand.Handler(m.Demand))
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorLog: klog.NewStandardLogger("ERROR")}))
	mux.Handle(store.GroupVersionPath()+"/", store.Handler())
	return mux
}

func (m *Manager) serveCreate(w http.ResponseWriter, r *http.Request) {
	req, err := decodeCreate(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			writeJSON(w, http.StatusUnprocessableEntity, ErrorBody{Error: fe.Error(), Field: fe.Field})
			return
		}
		writeJSON(w, http.StatusBadRequest, ErrorBody{Error: err.Error()})
		return
	}
	v, err := m.Create(req)
	var (
		fe      *FieldError
		refused *RefusedError
	)
	switch {
	case err == nil && v.Phase == PhasePending:
		writeJSON(w, http.StatusAccepted, v)
	case err == nil:
		writeJSON(w, http.StatusCreated, v)
	case errors.As(err, &fe):
		writeJSON(w, http.StatusUnprocessableEntity, ErrorBody{Error: fe.Error(), Field: fe.Field})
	case errors.Is(err, ErrExists):
		writeJSON(w, http.StatusConflict, ErrorBody{Error: err.Error(), Field: "name", Reason: "AlreadyExists"})
	case errors.As(err, &refused) && refused.Reason == ReasonLedgerUnavailable:
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusServiceUnavailable, ErrorBody{Error: "VM " + req.Name + " not placed: " + refused.Message, Reason: refused.Reason})
	case errors.As(err, &refused):
		writeJSON(w, http.StatusConflict, ErrorBody{Error: "VM " + req.Name + " does not fit: " + refused.Message, Reason: refused.Reason})
	default:
		klog.ErrorS(err, "Could not create a VM", "vm", req.Name)
		writeJSON(w, http.StatusInternalServerError, ErrorBody{Error: err.Error()})
	}
}

func (m *Manager) serveDelete(w http.ResponseWriter, r *http.Request) {
	v, err := m.Delete(r.PathValue("name"))
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, v)
	case errors.Is(err, ErrNotFound):
		writeJSON(w, http.StatusNotFound, ErrorBody{Error: err.Error(), Reason: "NotFound"})
	case errors.Is(err, ErrPlacing):
		writeJSON(w, http.StatusConflict, ErrorBody{Error: err.Error(), Reason: "Placing"})
	default:
		klog.ErrorS(err, "Could not delete a VM", "vm", r.PathValue("name"))
		writeJSON(w, http.StatusInternalServerError, ErrorBody{Error: err.Error()})
	}
}

// createBody is POST /vms as sent: each field is decoded on its own so
// that an error names it, and cpu and memory may be JSON numbers.
type createBody struct {
	Name   json.RawMessage `json:"name"`
	CPU    json.RawMessage `json:"cpu"`
	Memory json.RawMessage `json:"memory"`
	Host   json.RawMessage `json:"host"`
}

// decodeCreate reads one JSON object from body. Malformed JSON, unknown
// fields and trailing data are plain errors; a field of the wrong type is
// a *FieldError.
func decodeCreate(body io.Reader) (CreateRequest, error) {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	var b createBody
	if err := dec.Decode(&b); err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			return CreateRequest{}, fmt.Errorf("request body: larger than %d bytes", tooLarge.Limit)
		case errors.Is(err, io.EOF):
			return CreateRequest{}, errors.New("request body: empty; want a JSON object with name, cpu, memory and optionally host")
		}
		return CreateRequest{}, fmt.Errorf("request body: not a JSON object of name, cpu, memory and host: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return CreateRequest{}, errors.New("request body: data after the JSON object")
	}
	var req CreateRequest
	var err error
	if req.Name, err = stringField("name", b.Name, false); err != nil {
		return req, err
	}
	if req.CPU, err = stringField("cpu", b.CPU, true); err != nil {
		return req, err
	}
	if req.Memory, err = stringField("memory", b.Memory, true); err != nil {
		return req, err
	}
	if req.Host, err = stringField("host", b.Host, false); err != nil {
		return req, err
	}
	return req, nil
}

// stringField decodes a JSON string (or, if number is true, a JSON
// number, kept as written); absent and null give "".
func stringField(field string, raw json.RawMessage, number bool) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	if number {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err == nil {
			return n.String(), nil
		}
		return "", &FieldError{field, fmt.Sprintf("must be a string or a number, not %.40s", raw)}
	}
	return "", &FieldError{field, fmt.Sprintf("must be a string, not %.40s", raw)}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
