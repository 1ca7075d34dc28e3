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

// Package registry provides a small, generic, name-keyed registry of
// factories. It is the value type underneath the event-handler registry and
// the custom-informer source registry: tests build their own Registry values
// instead of touching package globals, and the globals are thin wrappers.
package registry

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
)

// Registry maps names to factories of type F.
//
// mu guards factories only. It is never held while a factory runs: Lookup
// copies the factory out under the read lock and returns it, so a factory
// may call back into the registry (for example to list Names) without
// deadlocking.
type Registry[F any] struct {
	// kind names what is registered ("event handler"); it prefixes errors.
	kind string

	mu        sync.RWMutex
	factories map[string]F
}

// New returns an empty registry. kind is used in error messages, e.g.
// "event handler".
func New[F any](kind string) *Registry[F] {
	return &Registry[F]{kind: kind, factories: map[string]F{}}
}

// Register adds factory under name. It fails on an empty name or a name that
// is already registered.
func (r *Registry[F]) Register(name string, factory F) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("cannot register %s: empty name", r.kind)
	}
	if isNil(factory) {
		return fmt.Errorf("cannot register %s %q: nil factory", r.kind, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.factories[name]; dup {
		return fmt.Errorf("cannot register %s %q: the name is already registered", r.kind, name)
	}
	r.factories[name] = factory
	return nil
}

// Lookup returns the factory registered under name. An unknown name yields
// an error that names it and lists every registered name, sorted.
func (r *Registry[F]) Lookup(name string) (F, error) {
	r.mu.RLock()
	f, ok := r.factories[name]
	r.mu.RUnlock()
	if !ok {
		var zero F
		return zero, &UnknownNameError{Kind: r.kind, Name: name, Registered: r.Names()}
	}
	return f, nil
}

// Has reports whether name is registered.
func (r *Registry[F]) Has(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.factories[name]
	return ok
}

// Names returns the registered names in ascending order. The slice is a
// fresh copy owned by the caller.
func (r *Registry[F]) Names() []string {
	r.mu.RLock()
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	r.mu.RUnlock()
	sort.Strings(names)
	return names
}

// Merge registers every factory of other into r. It fails on the first name
// that r already has, leaving the names merged before it in place.
func (r *Registry[F]) Merge(other *Registry[F]) error {
	for _, name := range other.Names() {
		f, err := other.Lookup(name)
		if err != nil {
			return err
		}
		if err := r.Register(name, f); err != nil {
			return err
		}
	}
	return nil
}

// Clone returns an independent copy of r.
func (r *Registry[F]) Clone() *Registry[F] {
	c := New[F](r.kind)
	r.mu.RLock()
	defer r.mu.RUnlock()
	for n, f := range r.factories {
		c.factories[n] = f
	}
	return c
}

// isNil reports whether v is a nil func, pointer, interface, map or chan.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Interface, reflect.Map, reflect.Chan, reflect.Slice:
		return rv.IsNil()
	}
	return false
}

// IsNil reports whether v is nil or a typed nil (a nil pointer, func, map,
// chan, slice or interface stored in an interface).
func IsNil(v any) bool { return isNil(v) }

// UnknownNameError is returned by Lookup for a name nobody registered.
type UnknownNameError struct {
	Kind       string
	Name       string
	Registered []string
}

func (e *UnknownNameError) Error() string {
	registered := "none"
	if len(e.Registered) > 0 {
		registered = strings.Join(e.Registered, ", ")
	}
	return fmt.Sprintf("unknown %s %q (registered: %s; forgotten import?)", e.Kind, e.Name, registered)
}
