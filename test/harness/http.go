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

package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// httpClient talks to the example programs' plain HTTP APIs on loopback.
var httpClient = &http.Client{Timeout: 10 * time.Second}

// APIError is a 3xx, 4xx or 5xx answer of a program's HTTP API.
type APIError struct {
	Method, URL string
	Status      int
	// Body is the answer, e.g. {"error": "...", "reason": "..."}.
	Body string
	// Message and Reason are decoded from Body when it is such a JSON.
	Message string `json:"error"`
	Reason  string `json:"reason"`
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Status, strings.TrimSpace(e.Body))
}

// CallJSON sends in (if not nil) as JSON to url and decodes a 2xx answer
// into out (if not nil). It returns the status; other statuses are an
// *APIError.
func CallJSON(ctx context.Context, method, url string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("%s %s: encoding the request: %w", method, url, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, url, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: reading the answer: %w", method, url, err)
	}
	if resp.StatusCode >= 300 {
		e := &APIError{Method: method, URL: url, Status: resp.StatusCode, Body: string(b)}
		_ = json.Unmarshal(b, e)
		return resp.StatusCode, e
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decoding the answer: %w", method, url, err)
		}
	}
	return resp.StatusCode, nil
}
