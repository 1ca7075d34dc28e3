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

package eventhandlers_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/registry"
)

// stubHandler is an eventhandlers.Interface that does nothing.
type stubHandler struct{ eventhandlers.Interface }

func returning(h eventhandlers.Interface, err error) eventhandlers.Factory {
	return func(context.Context, eventhandlers.Cache, io.Reader, *rest.Config) (eventhandlers.Interface, error) {
		return h, err
	}
}

func TestRegistry(t *testing.T) {
	t.Run("register and look up", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		want := &stubHandler{}
		if err := reg.Register("b", returning(want, nil)); err != nil {
			t.Fatal(err)
		}
		if err := reg.Register("a", returning(nil, nil)); err != nil {
			t.Fatal(err)
		}
		if got := reg.Names(); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("Names() = %q, want sorted [a b]", got)
		}
		h, err := eventhandlers.NewEventHandler(t.Context(), reg, "b", nil, nil, nil)
		if err != nil || h != want {
			t.Errorf("NewEventHandler = %v, %v; want the factory's handler", h, err)
		}
	})
	t.Run("empty name", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		for _, name := range []string{"", "  "} {
			if err := reg.Register(name, returning(nil, nil)); err == nil || !strings.Contains(err.Error(), "empty name") {
				t.Errorf("Register(%q) = %v, want an empty-name error", name, err)
			}
		}
		if len(reg.Names()) != 0 {
			t.Errorf("Names() = %q after failed registrations", reg.Names())
		}
	})
	t.Run("duplicate name", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		first := &stubHandler{}
		if err := reg.Register("x", returning(first, nil)); err != nil {
			t.Fatal(err)
		}
		err := reg.Register("x", returning(&stubHandler{}, nil))
		if err == nil || !strings.Contains(err.Error(), `event handler "x"`) || !strings.Contains(err.Error(), "already registered") {
			t.Errorf("second Register = %v, want an already-registered error naming x", err)
		}
		if h, _ := eventhandlers.NewEventHandler(t.Context(), reg, "x", nil, nil, nil); h != first {
			t.Error("the duplicate replaced the first factory")
		}
	})
	t.Run("unknown name lists the registered ones, sorted", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		for _, n := range []string{"zeta", "alpha", "mid"} {
			if err := reg.Register(n, returning(nil, nil)); err != nil {
				t.Fatal(err)
			}
		}
		_, err := eventhandlers.NewEventHandler(t.Context(), reg, "nope", nil, nil, nil)
		var unknown *registry.UnknownNameError
		if !errors.As(err, &unknown) {
			t.Fatalf("error = %v, want an *UnknownNameError", err)
		}
		if !strings.Contains(err.Error(), `unknown event handler "nope" (registered: alpha, mid, zeta`) {
			t.Errorf("error = %q, want it to name nope and list alpha, mid, zeta", err)
		}
	})
	t.Run("unknown name in an empty registry", func(t *testing.T) {
		_, err := eventhandlers.NewEventHandler(t.Context(), eventhandlers.NewRegistry(), "x", nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "registered: none") {
			t.Errorf("error = %v, want registered: none", err)
		}
	})
}

func TestNewEventHandler(t *testing.T) {
	errBad := errors.New("bad config")
	t.Run("arguments are passed through", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		type ctxKey struct{}
		ctx := context.WithValue(t.Context(), ctxKey{}, "v")
		cfg := strings.NewReader("dynamicResources: []\n")
		rc := &rest.Config{Host: "https://example"}
		var c eventhandlers.Cache = fakeCacheStub{}
		var gotCfg string
		err := reg.Register("h", func(gctx context.Context, gc eventhandlers.Cache, gcfg io.Reader, grc *rest.Config) (eventhandlers.Interface, error) {
			if gctx.Value(ctxKey{}) != "v" || gc != c || grc != rc {
				t.Errorf("factory got ctx %v, cache %v, rest config %v", gctx, gc, grc)
			}
			b, err := io.ReadAll(gcfg)
			if err != nil {
				return nil, err
			}
			gotCfg = string(b)
			return &stubHandler{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := eventhandlers.NewEventHandler(ctx, reg, "h", c, cfg, rc); err != nil {
			t.Fatal(err)
		}
		if gotCfg != "dynamicResources: []\n" {
			t.Errorf("factory read config %q", gotCfg)
		}
	})
	t.Run("nil config reaches the factory as nil", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		_ = reg.Register("h", func(_ context.Context, _ eventhandlers.Cache, cfg io.Reader, _ *rest.Config) (eventhandlers.Interface, error) {
			if cfg != nil {
				t.Errorf("config = %v, want nil", cfg)
			}
			return &stubHandler{}, nil
		})
		if _, err := eventhandlers.NewEventHandler(t.Context(), reg, "h", nil, nil, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("typed nil handler is an error", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		_ = reg.Register("typednil", func(context.Context, eventhandlers.Cache, io.Reader, *rest.Config) (eventhandlers.Interface, error) {
			var h *stubHandler
			return h, nil
		})
		h, err := eventhandlers.NewEventHandler(t.Context(), reg, "typednil", nil, nil, nil)
		if err == nil || h != nil || !strings.Contains(err.Error(), `"typednil"`) || !strings.Contains(err.Error(), "no handler") {
			t.Errorf("NewEventHandler = %v, %v; want an error naming the handler", h, err)
		}
	})
	t.Run("nil factory is refused at registration", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		if err := reg.Register("nilf", nil); err == nil || !strings.Contains(err.Error(), "nil factory") {
			t.Errorf("Register(nil) = %v, want a nil-factory error", err)
		}
		if reg.Has("nilf") {
			t.Error("nil factory was registered")
		}
	})
	t.Run("factory error is wrapped with the name", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		_ = reg.Register("broken", returning(&stubHandler{}, errBad))
		h, err := eventhandlers.NewEventHandler(t.Context(), reg, "broken", nil, nil, nil)
		if !errors.Is(err, errBad) {
			t.Errorf("error = %v, want it to wrap errBad", err)
		}
		if err == nil || !strings.Contains(err.Error(), `"broken"`) {
			t.Errorf("error = %v, want it to name the handler", err)
		}
		if h != nil {
			t.Errorf("handler = %v returned with an error", h)
		}
	})
	t.Run("factory returning nil", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		_ = reg.Register("empty", returning(nil, nil))
		h, err := eventhandlers.NewEventHandler(t.Context(), reg, "empty", nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), `"empty"`) || !strings.Contains(err.Error(), "no handler") {
			t.Errorf("error = %v, want one naming the handler and saying it returned none", err)
		}
		if h != nil {
			t.Errorf("handler = %v", h)
		}
	})
	t.Run("factory panic becomes an error", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		_ = reg.Register("panicky", func(context.Context, eventhandlers.Cache, io.Reader, *rest.Config) (eventhandlers.Interface, error) {
			panic("boom")
		})
		h, err := eventhandlers.NewEventHandler(t.Context(), reg, "panicky", nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), `"panicky"`) || !strings.Contains(err.Error(), "boom") {
			t.Errorf("error = %v, want one naming the handler and the panic", err)
		}
		if h != nil {
			t.Errorf("handler = %v", h)
		}
	})
	t.Run("factory may use the registry", func(t *testing.T) {
		reg := eventhandlers.NewRegistry()
		_ = reg.Register("base", returning(&stubHandler{}, nil))
		_ = reg.Register("wrapper", func(ctx context.Context, c eventhandlers.Cache, cfg io.Reader, rc *rest.Config) (eventhandlers.Interface, error) {
			if names := reg.Names(); !slices.Equal(names, []string{"base", "wrapper"}) {
				t.Errorf("Names() inside the factory = %q", names)
			}
			if _, err := reg.Lookup("wrapper"); err != nil {
				t.Errorf("Lookup inside the factory: %v", err)
			}
			if err := reg.Register("late", returning(&stubHandler{}, nil)); err != nil {
				t.Errorf("Register inside the factory: %v", err)
			}
			return eventhandlers.NewEventHandler(ctx, reg, "base", c, cfg, rc)
		})
		done := make(chan error, 1)
		go func() {
			_, err := eventhandlers.NewEventHandler(context.Background(), reg, "wrapper", nil, nil, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("NewEventHandler deadlocked when the factory used the registry")
		}
		if !reg.Has("late") {
			t.Error("registration made inside a factory was lost")
		}
	})
}

// fakeCacheStub is a comparable Cache value; its methods are never called.
type fakeCacheStub struct{ eventhandlers.Cache }

var (
	registerGlobalOnce sync.Once
	registerDupOnce    sync.Once
	globalWant         *stubHandler
)

func TestGlobalRegistry(t *testing.T) {
	// The global registry cannot be emptied: names are unique to this test.
	t.Run("register, list and build", func(t *testing.T) {
		want := &stubHandler{}
		// The names survive the test; register them once per process so
		// that -count=N works.
		registerGlobalOnce.Do(func() {
			eventhandlers.RegisterEventHandler("test-global-b", returning(want, nil))
			eventhandlers.RegisterEventHandler("test-global-a", returning(want, nil))
			globalWant = want
		})
		want = globalWant
		names := eventhandlers.Names()
		if !slices.IsSorted(names) {
			t.Errorf("Names() = %q, not sorted", names)
		}
		if !slices.Contains(names, "test-global-a") || !slices.Contains(names, "test-global-b") {
			t.Errorf("Names() = %q, missing the registered handlers", names)
		}
		if !eventhandlers.GlobalRegistry().Has("test-global-a") {
			t.Error("GlobalRegistry() does not hold what RegisterEventHandler registered")
		}
		h, err := eventhandlers.GetEventHandler(t.Context(), "test-global-a", nil, nil, nil)
		if err != nil || h != want {
			t.Errorf("GetEventHandler = %v, %v", h, err)
		}
		if _, err := eventhandlers.GetEventHandler(t.Context(), "test-global-none", nil, nil, nil); err == nil ||
			!strings.Contains(err.Error(), "test-global-a, test-global-b") {
			t.Errorf("GetEventHandler(unknown) = %v, want the registered names listed", err)
		}
	})
	t.Run("clone is independent", func(t *testing.T) {
		clone := eventhandlers.GlobalRegistry().Clone()
		if err := clone.Register("test-global-clone-only", returning(&stubHandler{}, nil)); err != nil {
			t.Fatal(err)
		}
		if eventhandlers.GlobalRegistry().Has("test-global-clone-only") {
			t.Error("registering in a clone changed the global registry")
		}
	})
	panics := []struct {
		name    string
		factory eventhandlers.Factory
		want    string
	}{
		{"", returning(nil, nil), "empty name"},
		{"test-global-dup", returning(nil, nil), "already registered"},
		{"test-global-nil", nil, "nil factory"},
	}
	registerDupOnce.Do(func() { eventhandlers.RegisterEventHandler("test-global-dup", returning(nil, nil)) })
	for _, tt := range panics {
		t.Run("panics on "+tt.want, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.Contains(msg, tt.want) || !strings.HasPrefix(msg, "eventhandlers: ") {
					t.Errorf("panic = %v, want an eventhandlers panic containing %q", r, tt.want)
				}
			}()
			eventhandlers.RegisterEventHandler(tt.name, tt.factory)
		})
	}
	if eventhandlers.GlobalRegistry().Has("test-global-nil") {
		t.Error("a nil factory was registered")
	}
}
