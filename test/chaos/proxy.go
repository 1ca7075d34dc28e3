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

package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// FaultProxy is an HTTP proxy between the scheduler and kube-apiserver.
// The scheduler's kubeconfig points at it (plain HTTP on loopback); it
// forwards every request over TLS with the credentials of the rest.Config
// it was given. It can cut the watch streams open through it, hold new
// ones back, and answer a fraction of chosen requests with an error
// instead of forwarding them. It also logs every successful bind, so that
// a pod bound twice shows even though the API server refuses the second
// bind's effect.
type FaultProxy struct {
	// URL is where the proxy listens, e.g. http://127.0.0.1:34567.
	URL string

	srv    *http.Server
	proxy  *httputil.ReverseProxy
	served chan error

	mu      sync.Mutex
	watches map[int64]context.CancelFunc
	nextID  int64
	// held is non-nil while new watches are held back; closing it lets
	// them through.
	held chan struct{}
	// fail answers requests matched by failMatch with one of failCodes,
	// with probability failRate.
	failRate  float64
	failCodes []int
	failMatch func(*http.Request) bool
	rng       *rand.Rand
	// binds counts the successful binds of each pod, by namespace/name.
	binds map[string]int
	// bindDelay holds each bind before it is forwarded; bindsInFlight
	// counts the binds held or forwarded and not yet answered.
	bindDelay     time.Duration
	bindsInFlight int

	cuts      atomic.Int64
	injected  atomic.Int64
	expired   atomic.Int64
	watchesIn atomic.Int64
}

// NewFaultProxy listens on a free loopback port and forwards to the API
// server of cfg with cfg's credentials, until Close.
func NewFaultProxy(cfg *rest.Config) (*FaultProxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server address %q: %w", cfg.Host, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a transport to the API server %s: %w", cfg.Host, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the fault proxy: %w", err)
	}
	p := &FaultProxy{
		URL:     "http://" + ln.Addr().String(),
		served:  make(chan error, 1),
		watches: map[int64]context.CancelFunc{},
		binds:   map[string]int{},
		rng:     rand.New(rand.NewPCG(1, 2)),
	}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport: transport,
		// Watch events go out as they come.
		FlushInterval: -1,
		// Cut streams are expected; their errors are not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { p.served <- p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy and ends every stream through it.
func (p *FaultProxy) Close() error {
	p.HoldWatches(false)
	err := p.srv.Close()
	if serveErr := <-p.served; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err != nil {
		return fmt.Errorf("closing the fault proxy %s: %w", p.URL, err)
	}
	return nil
}

// CutWatches ends every watch stream open through the proxy, without a
// final chunk (the client sees the connection break), and returns how
// many it cut.
func (p *FaultProxy) CutWatches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.watches)
	for id, cancel := range p.watches {
		cancel()
		delete(p.watches, id)
	}
	return n
}

// OpenWatches returns how many watch streams are open through the proxy.
func (p *FaultProxy) OpenWatches() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.watches)
}

// HoldWatches, when on, makes new watch requests wait (without an
// answer) until it is turned off; requests that are not watches go on.
func (p *FaultProxy) HoldWatches(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.held == nil:
		p.held = make(chan struct{})
	case !on && p.held != nil:
		close(p.held)
		p.held = nil
	}
}

// FailRequests answers each request match accepts, with probability
// rate, with one of codes (chosen at random) instead of forwarding it. A
// rate of 0 turns it off.
func (p *FaultProxy) FailRequests(rate float64, match func(*http.Request) bool, codes ...int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failRate, p.failMatch, p.failCodes = rate, match, codes
}

// ProxyStats are the proxy's counters.
type ProxyStats struct {
	// WatchesCut counts the streams CutWatches ended.
	WatchesCut int64
	// Injected counts the requests answered with an injected error.
	Injected int64
	// Expired counts answers that told the client its resourceVersion is
	// too old (410 Gone), as a status code or inside a watch stream.
	Expired int64
	// Watches counts the watch requests the proxy forwarded.
	Watches int64
}

// Stats returns the proxy's counters.
func (p *FaultProxy) Stats() ProxyStats {
	return ProxyStats{WatchesCut: p.cuts.Load(), Injected: p.injected.Load(), Expired: p.expired.Load(), Watches: p.watchesIn.Load()}
}

// DoubleBinds returns each pod (namespace/name) the API server accepted
// more than one bind of, with the count.
func (p *FaultProxy) DoubleBinds() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, n := range p.binds {
		if n > 1 {
			out[k] = n
		}
	}
	return out
}

// Binds returns how many binds the API server accepted through the proxy.
func (p *FaultProxy) Binds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.binds {
		n += c
	}
	return n
}

// ServeHTTP forwards r, or fails it, or holds it (a watch while watches
// are held).
func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if code := p.injectedCode(r); code != 0 {
		p.injected.Add(1)
		writeStatus(w, code)
		return
	}
	if !isWatch(r) {
		rec := &recorder{ResponseWriter: w}
		if IsBind(r) {
			r = p.holdBind(r)
			defer func() {
				p.mu.Lock()
				p.bindsInFlight--
				p.mu.Unlock()
			}()
		}
		p.proxy.ServeHTTP(rec, r)
		if rec.code == http.StatusGone {
			p.expired.Add(1)
		}
		if key, ok := bindOf(r); ok && rec.code/100 == 2 {
			p.mu.Lock()
			p.binds[key]++
			p.mu.Unlock()
		}
		return
	}
	p.mu.Lock()
	held := p.held
	p.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	p.mu.Lock()
	id := p.nextID
	p.nextID++
	var cut atomic.Bool
	p.watches[id] = func() { p.cuts.Add(1); cut.Store(true); cancel() }
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.watches, id)
		p.mu.Unlock()
	}()
	p.watchesIn.Add(1)
	p.proxy.ServeHTTP(&recorder{ResponseWriter: w, scan: true, expired: &p.expired}, r.WithContext(ctx))
	if cut.Load() {
		// The upstream stream may have ended cleanly on the cancel; the
		// client must see a broken connection all the same.
		panic(http.ErrAbortHandler)
	}
}

// DelayBinds holds every bind d before forwarding it; once held, a bind
// goes to the API server even if its client has gone, as a bind already
// on the wire would. 0 turns it off.
func (p *FaultProxy) DelayBinds(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bindDelay = d
}

// BindsInFlight returns how many binds the proxy holds or waits for the
// answer of.
func (p *FaultProxy) BindsInFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bindsInFlight
}

// holdBind counts r in flight and holds it the bind delay; the returned
// request is not cancelled with its client once it was held.
func (p *FaultProxy) holdBind(r *http.Request) *http.Request {
	p.mu.Lock()
	p.bindsInFlight++
	d := p.bindDelay
	p.mu.Unlock()
	if d <= 0 {
		return r
	}
	time.Sleep(d)
	return r.WithContext(context.WithoutCancel(r.Context()))
}

// injectedCode returns the error code to answer r with, or 0 to forward
// it.
func (p *FaultProxy) injectedCode(r *http.Request) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failRate <= 0 || len(p.failCodes) == 0 || p.failMatch == nil || !p.failMatch(r) {
		return 0
	}
	if p.rng.Float64() >= p.failRate {
		return 0
	}
	return p.failCodes[p.rng.IntN(len(p.failCodes))]
}

// writeStatus answers with a metav1.Status of code, as the API server
// does; a 429 carries Retry-After: 1.
func writeStatus(w http.ResponseWriter, code int) {
	reason := metav1.StatusReasonInternalError
	if code == http.StatusTooManyRequests {
		reason = metav1.StatusReasonTooManyRequests
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the chaos fault proxy","reason":%q,"code":%d}`, reason, code)
}

// isWatch says whether r opens a watch stream.
func isWatch(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

// bindOf returns the namespace/name of the pod r binds, if r is a bind
// (POST .../namespaces/<ns>/pods/<name>/binding).
func bindOf(r *http.Request) (string, bool) {
	if r.Method != http.MethodPost {
		return "", false
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	n := len(parts)
	if n < 5 || parts[n-1] != "binding" || parts[n-3] != "pods" || parts[n-5] != "namespaces" {
		return "", false
	}
	return parts[n-4] + "/" + parts[n-2], true
}

// IsBind, IsStatusWrite and IsEventWrite match requests for
// FailRequests: binds, writes of a pod's status (patch or update of
// pods/status), and writes of events (core/v1 and events.k8s.io).
func IsBind(r *http.Request) bool { _, ok := bindOf(r); return ok }

// IsStatusWrite matches a patch or update of a pod's status.
func IsStatusWrite(r *http.Request) bool {
	return (r.Method == http.MethodPatch || r.Method == http.MethodPut) &&
		strings.HasSuffix(r.URL.Path, "/status") && strings.Contains(r.URL.Path, "/pods/")
}

// IsEventWrite matches a write of an event.
func IsEventWrite(r *http.Request) bool {
	return r.Method != http.MethodGet && strings.Contains(r.URL.Path, "/events")
}

// expiredMarker is in every answer that says a resourceVersion is too old
// (the cacher's "too old resource version", etcd's "is too old"), in JSON
// as in protobuf, where strings are stored as they are.
var expiredMarker = []byte("too old")

// recorder remembers the status code of a response and, with scan, counts
// the 410 answers inside a watch stream.
type recorder struct {
	http.ResponseWriter
	code    int
	scan    bool
	expired *atomic.Int64
	tail    []byte
}

func (r *recorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.scan {
		// Look across the boundary with the previous chunk too.
		buf := append(r.tail, b...)
		if n := bytes.Count(buf, expiredMarker); n > 0 {
			r.expired.Add(int64(n))
			buf = nil
		}
		if len(buf) > len(expiredMarker) {
			buf = buf[len(buf)-len(expiredMarker):]
		}
		r.tail = append([]byte(nil), buf...)
	}
	return r.ResponseWriter.Write(b)
}

// Flush lets the reverse proxy send watch events at once.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
