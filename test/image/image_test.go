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

package image

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// The image's promises (docs/image.md).
const (
	entrypoint = "/batch-scheduler"
	user       = "65532:65532"
)

// ociLayout is the layout make image wrote, its index.json sorted out.
type ociLayout struct {
	path layout.Path
	// indexDesc is index.json's entry for the image index; index is the
	// index itself.
	indexDesc v1.Descriptor
	index     v1.ImageIndex
	// images are the index's entries by platform ("linux/amd64").
	images map[string]v1.Descriptor
	// referrers are index.json's entries with an artifactType.
	referrers []v1.Descriptor
}

func openLayout(t *testing.T, dir string) *ociLayout {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("opening the OCI layout %s: %v", dir, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatalf("reading %s/index.json: %v", dir, err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatalf("reading %s/index.json: %v", dir, err)
	}
	l := &ociLayout{path: p, images: map[string]v1.Descriptor{}}
	var indexes []v1.Descriptor
	for _, d := range tm.Manifests {
		switch {
		case d.ArtifactType != "":
			l.referrers = append(l.referrers, d)
		case d.MediaType == types.OCIImageIndex:
			indexes = append(indexes, d)
		default:
			t.Errorf("index.json lists %s (%s), neither the image index nor a referrer", d.Digest, d.MediaType)
		}
	}
	if len(indexes) != 1 {
		t.Fatalf("index.json lists %d OCI image indexes, want 1: %+v", len(indexes), tm.Manifests)
	}
	l.indexDesc = indexes[0]
	if l.index, err = top.ImageIndex(l.indexDesc.Digest); err != nil {
		t.Fatalf("opening image index %s: %v", l.indexDesc.Digest, err)
	}
	im, err := l.index.IndexManifest()
	if err != nil {
		t.Fatalf("reading image index %s: %v", l.indexDesc.Digest, err)
	}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("image index entry %s has no platform", d.Digest)
		}
		l.images[d.Platform.String()] = d
	}
	return l
}

func (l *ociLayout) image(t *testing.T, platform string) v1.Image {
	t.Helper()
	d, ok := l.images[platform]
	if !ok {
		t.Fatalf("the image index has no %s image", platform)
	}
	img, err := l.index.Image(d.Digest)
	if err != nil {
		t.Fatalf("opening the %s image %s: %v", platform, d.Digest, err)
	}
	return img
}

func TestIndex(t *testing.T) {
	l := openLayout(t, filepath.Join(out, "oci"))
	if got := l.indexDesc.Annotations["org.opencontainers.image.ref.name"]; got != tag {
		t.Errorf("index.json: ref.name %q, want %q (the version, '+' replaced)", got, tag)
	}
	if got, want := l.indexDesc.Annotations["io.containerd.image.name"], repository+":"+tag; got != want {
		t.Errorf("index.json: io.containerd.image.name %q, want %q", got, want)
	}
	im, err := l.index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range im.Manifests {
		got = append(got, d.Platform.String())
		if d.MediaType != types.OCIManifestSchema1 || d.ArtifactType != "" {
			t.Errorf("%s: media type %s, artifactType %q; want %s and none (an image, not an artifact)", d.Platform, d.MediaType, d.ArtifactType, types.OCIManifestSchema1)
		}
	}
	if !slices.Equal(got, platforms) {
		t.Errorf("image index platforms %v, want %v", got, platforms)
	}
	checkLabels(t, "image index annotations", im.Annotations)
	// Digests, sizes and diff IDs agree with the blobs, the manifests
	// parse: what a registry or a runtime would check on pull.
	if err := validate.Index(l.index); err != nil {
		t.Errorf("the image index does not validate: %v", err)
	}
}

func TestConfig(t *testing.T) {
	l := openLayout(t, filepath.Join(out, "oci"))
	for _, platform := range platforms {
		img := l.image(t, platform)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatalf("%s: reading the config: %v", platform, err)
		}
		if got := cf.OS + "/" + cf.Architecture; got != platform || cf.Variant != "" {
			t.Errorf("%s: config is for %s (variant %q)", platform, got, cf.Variant)
		}
		if want := l.images[platform].Platform; want.OS != cf.OS || want.Architecture != cf.Architecture {
			t.Errorf("%s: index entry platform %s, config %s/%s", platform, want, cf.OS, cf.Architecture)
		}
		if cf.Config.User != user {
			t.Errorf("%s: User %q, want %q", platform, cf.Config.User, user)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{entrypoint}) || len(cf.Config.Cmd) > 0 {
			t.Errorf("%s: Entrypoint %q Cmd %q, want [%s] and none", platform, cf.Config.Entrypoint, cf.Config.Cmd, entrypoint)
		}
		if got := cf.Created.UTC().Format(time.RFC3339); got != buildDate {
			t.Errorf("%s: created %s, want %s", platform, got, buildDate)
		}
		checkLabels(t, platform+" config labels", cf.Config.Labels)
		m, err := img.Manifest()
		if err != nil {
			t.Fatalf("%s: reading the manifest: %v", platform, err)
		}
		checkLabels(t, platform+" manifest annotations", m.Annotations)
		if m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
			t.Errorf("%s: manifest config %s, layers %+v; want an OCI config and one %s layer", platform, m.Config.MediaType, m.Layers, types.OCILayer)
		}
	}
}

// checkLabels checks the OCI labels (or annotations) of the image.
func checkLabels(t *testing.T, what string, labels map[string]string) {
	t.Helper()
	want := map[string]string{
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.title":    "batch-scheduler",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.created":  buildDate,
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, labels[k], v)
		}
	}
}

func TestLayer(t *testing.T) {
	l := openLayout(t, filepath.Join(out, "oci"))
	mtime, err := time.Parse(time.RFC3339, buildDate)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		typ      byte
		mode     int64
		uid, gid int
	}
	wants := map[string]want{
		"batch-scheduler": {tar.TypeReg, 0o755, 0, 0},
		"etc/":            {tar.TypeDir, 0o755, 0, 0},
		"etc/group":       {tar.TypeReg, 0o644, 0, 0},
		"etc/passwd":      {tar.TypeReg, 0o644, 0, 0},
		"tmp/":            {tar.TypeDir, 0o1777, 65532, 65532},
	}
	for _, platform := range platforms {
		files := layerFiles(t, l, platform)
		var names []string
		for _, f := range files {
			names = append(names, f.hdr.Name)
			w, ok := wants[f.hdr.Name]
			if !ok {
				t.Errorf("%s: unexpected file %s in the layer", platform, f.hdr.Name)
				continue
			}
			if f.hdr.Typeflag != w.typ || f.hdr.Mode != w.mode || f.hdr.Uid != w.uid || f.hdr.Gid != w.gid {
				t.Errorf("%s: %s: type %q mode %#o owner %d:%d, want type %q mode %#o owner %d:%d",
					platform, f.hdr.Name, f.hdr.Typeflag, f.hdr.Mode, f.hdr.Uid, f.hdr.Gid, w.typ, w.mode, w.uid, w.gid)
			}
			if !f.hdr.ModTime.Equal(mtime) {
				t.Errorf("%s: %s: modified %s, want BUILD_DATE %s", platform, f.hdr.Name, f.hdr.ModTime.UTC(), buildDate)
			}
		}
		slices.Sort(names)
		if wantNames := slices.Sorted(maps.Keys(wants)); !slices.Equal(names, wantNames) {
			t.Errorf("%s: layer holds %v, want %v", platform, names, wantNames)
		}
		if p := string(file(files, "etc/passwd")); !strings.Contains(p, "\nnonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no nonroot user 65532:\n%s", platform, p)
		}
		if g := string(file(files, "etc/group")); !strings.Contains(g, "\nnonroot:x:65532:") {
			t.Errorf("%s: /etc/group has no nonroot group 65532:\n%s", platform, g)
		}
		checkStatic(t, platform, file(files, "batch-scheduler"))
	}
}

// checkStatic checks that bin is a static Go binary for platform: no
// program interpreter (the dynamic loader a scratch image lacks), no
// dynamic section and so no shared library it needs, built with cgo off
// and -trimpath.
func checkStatic(t *testing.T, platform string, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Errorf("%s: the binary is not ELF: %v", platform, err)
		return
	}
	machine := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}[platform]
	if f.Machine != machine || f.Type != elf.ET_EXEC {
		t.Errorf("%s: ELF %s %s, want %s %s", platform, f.Type, f.Machine, elf.ET_EXEC, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: the binary has a %s program header: it is dynamically linked", platform, p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s: the binary needs shared libraries %v (%v)", platform, libs, err)
	}
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		t.Errorf("%s: reading the binary's build information: %v", platform, err)
		return
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, v := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": "linux", "GOARCH": strings.TrimPrefix(platform, "linux/")} {
		if settings[k] != v {
			t.Errorf("%s: the binary was built with %s=%q, want %q", platform, k, settings[k], v)
		}
	}
}

type layerFile struct {
	hdr  *tar.Header
	data []byte
}

var (
	layerCacheMu sync.Mutex
	layerCache   = map[v1.Hash][]layerFile{}
)

// layerFiles reads the files of the only layer of the platform's image
// (cached: the layers are tens of MB).
func layerFiles(t *testing.T, l *ociLayout, platform string) []layerFile {
	t.Helper()
	img := l.image(t, platform)
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: %d layers (%v), want 1", platform, len(layers), err)
	}
	d, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	layerCacheMu.Lock()
	defer layerCacheMu.Unlock()
	if files, ok := layerCache[d]; ok {
		return files
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatalf("%s: reading layer %s: %v", platform, d, err)
	}
	defer rc.Close()
	var files []layerFile
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: reading layer %s: %v", platform, d, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: reading %s from layer %s: %v", platform, hdr.Name, d, err)
		}
		files = append(files, layerFile{hdr: hdr, data: data})
	}
	layerCache[d] = files
	return files
}

// file returns the content of the file name, nil if there is none.
func file(files []layerFile, name string) []byte {
	for _, f := range files {
		if f.hdr.Name == name {
			return f.data
		}
	}
	return nil
}
