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

package standing

import (
	"encoding/json"
	"net/http"

	"k8s.io/klog/v2"
)

// Handler serves report() as indented JSON at Path. It answers GET (and
// HEAD) only; other methods get 405 Method Not Allowed.
func Handler(report func() Report) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := json.MarshalIndent(report(), "", "  ")
		if err != nil {
			klog.ErrorS(err, "Encoding the pending jobs' standing")
			http.Error(w, "encoding the standing failed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if _, err := w.Write(append(body, '\n')); err != nil {
			klog.V(4).InfoS("Writing the pending jobs' standing", "err", err)
		}
	})
}
