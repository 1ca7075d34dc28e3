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
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// scanError lists what is wrong with the directory's contents. Each
// problem names a file of the directory.
type scanError struct {
	dir      string
	problems []error
}

// scanErrorMax is how many problems a scanError spells out.
const scanErrorMax = 10

func (e *scanError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "inventory directory %s: ", e.dir)
	for i, p := range e.problems {
		if i == scanErrorMax {
			fmt.Fprintf(&b, "; and %d more", len(e.problems)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

func (e *scanError) Unwrap() []error { return e.problems }

// read reads every manifest of the directory and returns its objects by
// namespace/name, or everything that is wrong with them.
func (inv *inventory) read() (map[string]runtime.Object, error) {
	entries, err := os.ReadDir(inv.dir)
	if err != nil {
		return nil, fmt.Errorf("inventory directory %s: %w", inv.dir, unwrapPathError(err))
	}
	s := &dirReading{inv: inv, objects: map[string]runtime.Object{}, where: map[string]string{}}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !isManifestName(name) {
			continue
		}
		data, ok, err := readManifest(filepath.Join(inv.dir, name), e)
		switch {
		case err != nil:
			s.problems = append(s.problems, fmt.Errorf("%s: %w", name, err))
		case ok:
			s.file(name, data)
		}
	}
	if len(s.problems) > 0 {
		return nil, &scanError{dir: inv.dir, problems: s.problems}
	}
	return s.objects, nil
}

func isManifestName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readManifest returns the contents of the directory entry at path, or
// false for an entry that is not a manifest file after all: a directory,
// something that is not a regular file, a symlink that points nowhere or
// a file that went away meanwhile.
func readManifest(path string, e fs.DirEntry) ([]byte, bool, error) {
	if e.IsDir() {
		return nil, false, nil
	}
	fi, err := os.Stat(path) // follows symlinks
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unwrapPathError(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, nil
	}
	if fi.Size() > FileMaxBytes {
		return nil, false, fmt.Errorf("%d bytes, more than %d: %w", fi.Size(), FileMaxBytes, ErrTooLarge)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unwrapPathError(err)
	}
	defer f.Close()
	// It may have grown since.
	data, err := io.ReadAll(io.LimitReader(f, FileMaxBytes+1))
	if err != nil {
		return nil, false, unwrapPathError(err)
	}
	if len(data) > FileMaxBytes {
		return nil, false, fmt.Errorf("more than %d bytes: %w", FileMaxBytes, ErrTooLarge)
	}
	return data, true, nil
}

// dirReading collects the objects of one scan and its problems.
type dirReading struct {
	inv      *inventory
	objects  map[string]runtime.Object
	where    map[string]string // key -> "file: document N (line L)"
	problems []error
}

// file parses the documents of one manifest file; name is its name in
// the directory.
func (s *dirReading) file(name string, data []byte) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			// The parser cannot go on past a syntax error.
			s.problems = append(s.problems, fmt.Errorf("%s: document %d: %w", name, i, yamlError{err}))
			return
		}
		if len(doc.Content) == 0 {
			continue
		}
		n := doc.Content[0]
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			continue // an empty document
		}
		where := fmt.Sprintf("%s: document %d (line %d)", name, i, n.Line)
		obj, err := s.inv.decode(n)
		if err != nil {
			s.problems = append(s.problems, fmt.Errorf("%s: %w", where, err))
			continue
		}
		m := mustMeta(obj)
		key := m.GetNamespace() + "/" + m.GetName()
		if prev, dup := s.where[key]; dup {
			s.problems = append(s.problems, fmt.Errorf("%s: %s %s is already defined at %s",
				where, s.inv.gvk.Kind, objectName(m), prev))
			continue
		}
		s.where[key] = where
		s.objects[key] = obj
	}
}

func objectName(m metav1.Object) string {
	if m.GetNamespace() == "" {
		return strconv.Quote(m.GetName())
	}
	return strconv.Quote(m.GetNamespace() + "/" + m.GetName())
}
