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

package frameworks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Framework is one registered framework.
type Framework struct {
	// Name is a DNS-1123 label; grants are named "<name>.<node>".
	Name string `json:"name" yaml:"name"`
	// Weight scales the framework's fair share; it must be positive.
	// Absent means DefaultWeight.
	Weight *float64 `json:"weight,omitempty" yaml:"weight,omitempty"`
	// DemandURL is the http(s) URL of the framework's demand report
	// (pkg/demand). Empty: the allocator never learns the framework's
	// usage or demand, and it only gets its weighted share.
	DemandURL string `json:"demandURL,omitempty" yaml:"demandURL,omitempty"`
	// BearerTokenFile holds a token sent with every request to DemandURL;
	// it is read again on each request, so it may rotate.
	BearerTokenFile string `json:"bearerTokenFile,omitempty" yaml:"bearerTokenFile,omitempty"`
	// CAFile holds PEM certificates that DemandURL's server certificate
	// must chain to, instead of the system roots.
	CAFile string `json:"caFile,omitempty" yaml:"caFile,omitempty"`
	// InsecureSkipTLSVerify accepts any server certificate.
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty" yaml:"insecureSkipTLSVerify,omitempty"`
}

// DefaultWeight is the weight of a framework that names none.
const DefaultWeight = 1.0

// EffectiveWeight is Weight, or DefaultWeight when absent.
func (f *Framework) EffectiveWeight() float64 {
	if f.Weight == nil {
		return DefaultWeight
	}
	return *f.Weight
}

// Validate checks f; each error names the field under path.
func (f *Framework) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if msgs := validation.IsDNS1123Label(f.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(path.Child("name"), f.Name, strings.Join(msgs, "; ")))
	}
	if f.Weight != nil && !(*f.Weight > 0 && *f.Weight < 1e9) {
		errs = append(errs, field.Invalid(path.Child("weight"), *f.Weight, "must be greater than 0 (and below 1e9)"))
	}
	if f.DemandURL != "" {
		u, err := url.Parse(f.DemandURL)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(path.Child("demandURL"), f.DemandURL, err.Error()))
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, field.Invalid(path.Child("demandURL"), f.DemandURL, "must be an http or https URL"))
		case u.Host == "":
			errs = append(errs, field.Invalid(path.Child("demandURL"), f.DemandURL, "has no host"))
		}
	} else {
		for name, set := range map[string]bool{
			"bearerTokenFile": f.BearerTokenFile != "", "caFile": f.CAFile != "",
			"insecureSkipTLSVerify": f.InsecureSkipTLSVerify,
		} {
			if set {
				errs = append(errs, field.Forbidden(path.Child(name), "only meaningful with demandURL"))
			}
		}
	}
	if f.CAFile != "" && f.InsecureSkipTLSVerify {
		errs = append(errs, field.Forbidden(path.Child("insecureSkipTLSVerify"), "and caFile both set: choose one"))
	}
	return errs
}

// Revocation is a grant an administrator revoked.
type Revocation struct {
	// Grant is the grant's name, "<framework>.<node>".
	Grant string `json:"grant" yaml:"grant"`
	// Message says why; it is published in the grant's status.
	Message string `json:"message,omitempty" yaml:"message,omitempty"`
}

// ParseGrantName splits a grant name into framework and node, checking
// both.
func ParseGrantName(name string) (framework, node string, err error) {
	framework, node, ok := strings.Cut(name, ".")
	if !ok {
		return "", "", fmt.Errorf("grant name %q: want <framework>.<node>", name)
	}
	if msgs := validation.IsDNS1123Label(framework); len(msgs) > 0 {
		return "", "", fmt.Errorf("grant name %q: framework %q: %s", name, framework, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(node); len(msgs) > 0 {
		return "", "", fmt.Errorf("grant name %q: node %q: %s", name, node, strings.Join(msgs, "; "))
	}
	return framework, node, nil
}

// Held is what a framework held on a node when the allocator last wrote
// its state file: per resource, the most it might occupy there (see
// examples/allocator/internal/held). A restarted allocator gives no other
// framework this capacity until the framework acknowledges a grant
// version of the new run.
type Held struct {
	// Grant is the name of the framework's grant on the node,
	// "<framework>.<node>"; the framework need not be registered.
	Grant string `json:"grant" yaml:"grant"`
	// Resources are quantities by resource name, e.g. cpu: 1500m.
	Resources map[v1.ResourceName]string `json:"resources" yaml:"resources"`
}

// List parses h's quantities.
func (h *Held) List() (v1.ResourceList, error) {
	l := v1.ResourceList{}
	for name, s := range h.Resources {
		if name == "" {
			return nil, fmt.Errorf("grant %s: empty resource name", h.Grant)
		}
		q, err := resource.ParseQuantity(s)
		if err != nil {
			return nil, fmt.Errorf("grant %s: resources[%s]: %q: %w", h.Grant, name, s, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("grant %s: resources[%s]: %s is negative", h.Grant, name, s)
		}
		l[name] = q
	}
	return l, nil
}

// HeldOf is the entry of grant holding l.
func HeldOf(grant string, l v1.ResourceList) Held {
	h := Held{Grant: grant, Resources: map[v1.ResourceName]string{}}
	for name, q := range l {
		h.Resources[name] = q.String()
	}
	return h
}

// File is the content of a --config or --state-file.
type File struct {
	// Frameworks are the registered frameworks.
	Frameworks []Framework `json:"frameworks" yaml:"frameworks"`
	// Revoked are the revoked grants.
	Revoked []Revocation `json:"revoked,omitempty" yaml:"revoked,omitempty"`
	// Held is what each framework held on each node, by grant name; the
	// allocator writes it, files written before it existed have none.
	Held []Held `json:"held,omitempty" yaml:"held,omitempty"`
}

// Validate checks every framework and revocation, and that names are
// unique and revocations name registered frameworks. line, if not nil,
// gives the line of a field path (e.g. "frameworks[1].weight") for the
// error message.
func (f *File) Validate(line func(path string) int) error {
	var errs field.ErrorList
	seen := map[string]bool{}
	root := field.NewPath("frameworks")
	for i := range f.Frameworks {
		fw := &f.Frameworks[i]
		p := root.Index(i)
		errs = append(errs, fw.Validate(p)...)
		if seen[fw.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), fw.Name))
		}
		seen[fw.Name] = true
	}
	for i, r := range f.Revoked {
		p := field.NewPath("revoked").Index(i).Child("grant")
		fw, _, err := ParseGrantName(r.Grant)
		if err != nil {
			errs = append(errs, field.Invalid(p, r.Grant, err.Error()))
		} else if !seen[fw] {
			errs = append(errs, field.NotFound(p, r.Grant))
		}
	}
	heldSeen := map[string]bool{}
	for i, h := range f.Held {
		p := field.NewPath("held").Index(i)
		if _, _, err := ParseGrantName(h.Grant); err != nil {
			errs = append(errs, field.Invalid(p.Child("grant"), h.Grant, err.Error()))
		} else if heldSeen[h.Grant] {
			errs = append(errs, field.Duplicate(p.Child("grant"), h.Grant))
		}
		heldSeen[h.Grant] = true
		names := make([]string, 0, len(h.Resources))
		for name := range h.Resources {
			names = append(names, string(name))
		}
		sort.Strings(names)
		for _, name := range names {
			s := h.Resources[v1.ResourceName(name)]
			rp := p.Child("resources").Key(name)
			if name == "" {
				errs = append(errs, field.Invalid(rp, s, "empty resource name"))
				continue
			}
			q, err := resource.ParseQuantity(s)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(rp, s, "not a quantity (e.g. 1500m, 4Gi)"))
			case q.Sign() < 0:
				errs = append(errs, field.Invalid(rp, s, "must not be negative"))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
		if line != nil {
			if n := line(e.Field); n > 0 {
				msgs[i] = fmt.Sprintf("line %d: %s", n, e.Error())
			}
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}

// Load reads and strictly decodes path, applies no defaults, and
// validates it. Errors name the file and, where known, the line.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading frameworks file: %w", err)
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var doc yaml.Node
	_ = yaml.Unmarshal(data, &doc)
	if err := f.Validate(func(p string) int { return lineOf(&doc, p) }); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// lineOf finds the line of the node at p in doc, or of its closest
// parent found; 0 if none.
func lineOf(doc *yaml.Node, path string) int {
	if len(doc.Content) == 0 {
		return 0
	}
	parts := strings.Split(strings.ReplaceAll(path, "[", ".["), ".")
	n := doc.Content[0]
	line := n.Line
	for _, part := range parts {
		if part == "" {
			continue
		}
		var next *yaml.Node
		if strings.HasPrefix(part, "[") && n.Kind == yaml.SequenceNode {
			var i int
			_, _ = fmt.Sscanf(part, "[%d]", &i)
			if i < len(n.Content) {
				next = n.Content[i]
			}
		} else if n.Kind == yaml.MappingNode {
			// A key: "name", or "[name]" for a map's entry.
			part = strings.TrimSuffix(strings.TrimPrefix(part, "["), "]")
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == part {
					next = n.Content[j+1]
					line = n.Content[j].Line
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
		line = n.Line
	}
	return line
}

// Save writes f to path atomically: a temporary file in the same
// directory, synced, then renamed over path.
func Save(path string, f *File) error {
	out := File{
		Frameworks: append([]Framework(nil), f.Frameworks...),
		Revoked:    append([]Revocation(nil), f.Revoked...),
		Held:       append([]Held(nil), f.Held...),
	}
	sort.Slice(out.Frameworks, func(i, j int) bool { return out.Frameworks[i].Name < out.Frameworks[j].Name })
	sort.Slice(out.Revoked, func(i, j int) bool { return out.Revoked[i].Grant < out.Revoked[j].Grant })
	sort.Slice(out.Held, func(i, j int) bool { return out.Held[i].Grant < out.Held[j].Grant })
	if out.Frameworks == nil {
		out.Frameworks = []Framework{}
	}
	data, err := yaml.Marshal(&out)
	if err != nil {
		return fmt.Errorf("encoding state for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("writing state file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing state file %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing state file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing state file %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing state file %s: %w", path, err)
	}
	return nil
}
