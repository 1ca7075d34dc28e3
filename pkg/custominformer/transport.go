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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"
)

// ErrTooLarge is wrapped by the errors for a watch event or a list response
// over the source's size limits.
var ErrTooLarge = errors.New("response exceeds the size limit")

// ErrNotAList is wrapped by the error for a list response whose items are
// not a JSON array.
var ErrNotAList = errors.New("not a list")

// limitedSerializer is a NegotiatedSerializer whose stream framers refuse
// a watch event larger than maxFrame bytes. Everything else is the wrapped
// serializer's.
type limitedSerializer struct {
	runtime.NegotiatedSerializer
	maxFrame int64
}

func (s limitedSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := s.NegotiatedSerializer.SupportedMediaTypes()
	out := make([]runtime.SerializerInfo, len(infos))
	for i, info := range infos {
		if info.StreamSerializer != nil && info.StreamSerializer.Framer != nil {
			ss := *info.StreamSerializer
			ss.Framer = limitedFramer{Framer: ss.Framer, max: s.maxFrame}
			info.StreamSerializer = &ss
		}
		out[i] = info
	}
	return out
}

// limitedFramer bounds the frames, that is the watch events, its readers
// return.
type limitedFramer struct {
	runtime.Framer
	max int64
}

// NewFrameReader bounds both the frame handed to the decoder and the
// bytes read from the body while looking for the end of a frame, so that
// a source cannot make the scheduler buffer an endless event. The second
// bound allows for the framer's read-ahead.
func (f limitedFramer) NewFrameReader(body io.ReadCloser) io.ReadCloser {
	fr := &limitedFrameReader{max: f.max}
	fr.body = &budgetReader{ReadCloser: body, frames: fr}
	fr.ReadCloser = f.Framer.NewFrameReader(fr.body)
	return fr
}

// limitedFrameReader counts the bytes of the frame being read. It is used
// by one goroutine, the watch decoder's.
type limitedFrameReader struct {
	io.ReadCloser
	body *budgetReader
	max  int64
	// frame is the size of the frame read so far.
	frame int64
}

func (r *limitedFrameReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.frame += int64(n)
	if r.frame > r.max {
		return 0, fmt.Errorf("watch event of more than %d bytes (maxObjectBytes): %w", r.max, ErrTooLarge)
	}
	if err != io.ErrShortBuffer {
		// The frame is complete (or the stream ended).
		r.frame = 0
		r.body.sinceFrame = 0
	}
	return n, err
}

// budgetReader fails once far more than a frame's worth of bytes has been
// read without the framer completing a frame.
type budgetReader struct {
	io.ReadCloser
	frames     *limitedFrameReader
	sinceFrame int64
}

// readAhead is the slack over maxObjectBytes for bytes buffered by the
// framer beyond the frame it is decoding.
const readAhead = 64 << 10

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.sinceFrame > b.frames.max+readAhead {
		return 0, fmt.Errorf("watch event of more than %d bytes (maxObjectBytes): %w", b.frames.max, ErrTooLarge)
	}
	n, err := b.ReadCloser.Read(p)
	b.sinceFrame += int64(n)
	return n, err
}

// listLimiter bounds the body of every response that is not a watch
// stream.
type listLimiter struct {
	rt  http.RoundTripper
	max int64
}

func (l *listLimiter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(req)
	if err != nil || req.URL.Query().Get("watch") == "true" {
		return resp, err
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: l.max, max: l.max}
	return resp, nil
}

func (l *listLimiter) WrappedRoundTripper() http.RoundTripper { return l.rt }

var _ utilnet.RoundTripperWrapper = (*listLimiter)(nil)

// limitedBody fails a read past max bytes.
type limitedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Tell a body of exactly max bytes from a longer one.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("list response of more than %d bytes (maxListBytes): %w", b.max, ErrTooLarge)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// tokenFile is a bearer token kept in a file. It is re-read when the file
// changes (its modification time or size) and after the server answered
// 401, so a rotated token is picked up by the next request.
type tokenFile struct {
	path string

	// mu guards the fields below. File reads happen under it, so that
	// concurrent requests read a changed file once.
	mu      sync.Mutex
	token   string
	modTime time.Time
	size    int64
	stale   bool
}

// load reads the file if it changed. On failure the last token stays.
func (t *tokenFile) load() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loadLocked()
}

func (t *tokenFile) loadLocked() error {
	fi, err := os.Stat(t.path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", t.path, unwrapPathError(err))
	}
	if !t.stale && t.token != "" && fi.ModTime().Equal(t.modTime) && fi.Size() == t.size {
		return nil
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", t.path, unwrapPathError(err))
	}
	token := string(bytes.TrimSpace(data))
	if token == "" {
		return fmt.Errorf("%s is empty", t.path)
	}
	t.token, t.modTime, t.size, t.stale = token, fi.ModTime(), fi.Size(), false
	return nil
}

// get returns the current token, re-reading the file if it changed.
func (t *tokenFile) get() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.loadLocked(); err != nil {
		klog.ErrorS(err, "Keeping the last bearer token", "file", t.path)
	}
	return t.token
}

func (t *tokenFile) markStale() {
	t.mu.Lock()
	t.stale = true
	t.mu.Unlock()
}

func (t *tokenFile) wrap(rt http.RoundTripper) http.RoundTripper {
	return &tokenTransport{rt: rt, token: t}
}

// tokenTransport sets "Authorization: Bearer" from a tokenFile.
type tokenTransport struct {
	rt    http.RoundTripper
	token *tokenFile
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") == "" {
		req = utilnet.CloneRequest(req)
		req.Header.Set("Authorization", "Bearer "+t.token.get())
	}
	resp, err := t.rt.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.token.markStale()
	}
	return resp, err
}

func (t *tokenTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

var _ utilnet.RoundTripperWrapper = (*tokenTransport)(nil)

// jsonKind names the JSON type of a value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}

// checkItemSizes fails if an item of the JSON list in body is larger than
// max bytes, if body is not a JSON object, or (with ErrNotAList) if its
// items are not an array. It only measures: decoding
// is left to the codec.
func checkItemSizes(body []byte, max int64) error {
	var list struct {
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("decoding the list response: %w", err)
	}
	var items []json.RawMessage
	if len(list.Items) > 0 && !bytes.Equal(list.Items, []byte("null")) {
		if list.Items[0] != '[' {
			return fmt.Errorf("the list response's items are %s, not an array: %w", jsonKind(list.Items[0]), ErrNotAList)
		}
		if err := json.Unmarshal(list.Items, &items); err != nil {
			return fmt.Errorf("decoding the list response: %w", err)
		}
	}
	for i, item := range items {
		if int64(len(item)) > max {
			return fmt.Errorf("list item %d has %d bytes, more than %d (maxObjectBytes): %w", i, len(item), max, ErrTooLarge)
		}
	}
	return nil
}
