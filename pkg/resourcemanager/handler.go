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

package resourcemanager

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupVersionPath is the path prefix of the store's group and version:
// /api/<version> for the core group, /apis/<group>/<version> otherwise.
func (s *Store) GroupVersionPath() string {
	if s.gvk.Group == "" {
		return "/api/" + s.gvk.Version
	}
	return "/apis/" + s.gvk.Group + "/" + s.gvk.Version
}

// Path is the all-namespaces path of the resource, e.g. /api/v1/configmaps.
func (s *Store) Path() string { return s.GroupVersionPath() + "/" + s.resource }

// Handler returns an http.Handler serving list and watch at Path and at
// GroupVersionPath()/namespaces/{namespace}/<resource>. Mount it at the
// server root (or on a mux under those two patterns); other paths get 404
// and other methods 405.
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+s.Path(), s.serve)
	mux.HandleFunc("GET "+s.GroupVersionPath()+"/namespaces/{namespace}/"+s.resource, s.serve)
	return mux
}

func (s *Store) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	namespace := r.PathValue("namespace")
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		s.serveWatch(w, r, namespace)
		return
	}
	objs, rv := s.snapshot(namespace)
	items := make([]json.RawMessage, len(objs))
	for i, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			writeStatus(w, apierrors.NewInternalError(err))
			return
		}
		items[i] = b
	}
	list := struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta   `json:"metadata"`
		Items           []json.RawMessage `json:"items"`
	}{
		TypeMeta: metav1.TypeMeta{Kind: s.gvk.Kind + "List", APIVersion: s.gvk.GroupVersion().String()},
		Metadata: metav1.ListMeta{ResourceVersion: strconv.FormatInt(rv, 10)},
		Items:    items,
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func (s *Store) serveWatch(w http.ResponseWriter, r *http.Request, namespace string) {
	q := r.URL.Query()
	fromRV := int64(-1)
	if v := q.Get("resourceVersion"); v != "" && v != "0" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", v)))
			return
		}
		fromRV = n
	}
	var timeout <-chan time.Time
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", v)))
			return
		}
		if n > 0 {
			t := time.NewTimer(time.Duration(n) * time.Second)
			defer t.Stop()
			timeout = t.C
		}
	}
	var bookmarks <-chan time.Time
	if q.Get("allowWatchBookmarks") == "true" && s.bookmark > 0 {
		t := time.NewTicker(s.bookmark)
		defer t.Stop()
		bookmarks = t.C
	}
	flusher, _ := w.(http.Flusher)

	wt, initial, replay, startRV, err := s.startWatch(fromRV)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if err != nil {
		// Like kube-apiserver: 200 and an ERROR event, which the
		// reflector turns into a relist.
		st := apierrors.NewResourceExpired(err.Error()).Status()
		st.Kind, st.APIVersion = "Status", "v1"
		if line, e := encodeEvent("ERROR", st); e == nil {
			_, _ = w.Write(line)
		}
		if flusher != nil {
			flusher.Flush()
		}
		return
	}
	defer s.stopWatch(wt)

	lastRV := startRV
	write := func(line []byte) bool {
		if _, err := w.Write(line); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	for _, o := range initial {
		if namespace != "" && mustAccessor(o).GetNamespace() != namespace {
			continue
		}
		line, err := encodeEvent("ADDED", o)
		if err != nil || !write(line) {
			return
		}
	}
	if fromRV >= 0 {
		lastRV = fromRV
	}
	for _, e := range replay {
		lastRV = e.rv
		if namespace != "" && e.namespace != namespace {
			continue
		}
		if !write(e.line) {
			return
		}
	}
	if len(initial) == 0 && len(replay) == 0 && flusher != nil {
		flusher.Flush() // send the headers so the client's Watch returns
	}
	for {
		select {
		case e, ok := <-wt.ch:
			if !ok {
				return // fell behind or store closed: the client re-watches
			}
			if e.rv <= lastRV {
				continue
			}
			lastRV = e.rv
			if namespace != "" && e.namespace != namespace {
				continue
			}
			if !write(e.line) {
				return
			}
		case <-bookmarks:
			line, err := s.bookmarkLine(lastRV)
			if err != nil || !write(line) {
				return
			}
		case <-timeout:
			return
		case <-r.Context().Done():
			return
		}
	}
}

func writeStatus(w http.ResponseWriter, err apierrors.APIStatus) {
	st := err.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}
