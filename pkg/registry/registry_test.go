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

package registry

import (
	"errors"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := New[func() int]("widget")
	if err := r.Register("b", func() int { return 2 }); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("a", func() int { return 1 }); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "  ", "a"} {
		if err := r.Register(bad, func() int { return 0 }); err == nil || !strings.Contains(err.Error(), "widget") {
			t.Errorf("Register(%q) = %v, want an error naming the kind", bad, err)
		}
	}
	if err := r.Register("nil", nil); err == nil {
		t.Error("a nil factory was accepted")
	}
	if got := strings.Join(r.Names(), ","); got != "a,b" {
		t.Errorf("Names = %s", got)
	}
	f, err := r.Lookup("b")
	if err != nil || f() != 2 {
		t.Errorf("Lookup(b) = %v", err)
	}
	_, err = r.Lookup("zz")
	var unknown *UnknownNameError
	if !errors.As(err, &unknown) || err.Error() != `unknown widget "zz" (registered: a, b; forgotten import?)` {
		t.Errorf("Lookup(zz) = %v", err)
	}
	if _, err := New[int]("thing").Lookup("x"); err == nil || !strings.Contains(err.Error(), "registered: none") {
		t.Errorf("empty registry lookup = %v", err)
	}

	c := r.Clone()
	_ = c.Register("c", func() int { return 3 })
	if r.Has("c") || !c.Has("a") {
		t.Error("Clone is not independent")
	}
	m := New[func() int]("widget")
	if err := m.Merge(c); err != nil || len(m.Names()) != 3 {
		t.Errorf("Merge = %v, names %v", err, m.Names())
	}
	if err := m.Merge(r); err == nil {
		t.Error("Merge of a duplicate name succeeded")
	}
}
