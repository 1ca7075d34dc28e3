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
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The tarball (IMAGE_TARBALL) is the host platform's image, tagged
// REPOSITORY:TAG, for docker load: the same config and layer.
func TestTarball(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	l := openLayout(t, filepath.Join(out, "oci"))
	if _, ok := l.images[platform]; !ok {
		t.Skipf("the image has no %s platform", platform)
	}
	want := l.image(t, platform)
	opener := func() (io.ReadCloser, error) { return os.Open(hostTarball) }
	m, err := tarball.LoadManifest(opener)
	if err != nil {
		t.Fatalf("reading the tarball's manifest.json: %v", err)
	}
	if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{repository + ":" + tag}) {
		t.Errorf("tarball manifest.json %+v, want one image tagged %s:%s", m, repository, tag)
	}
	got, err := tarball.Image(opener, nil)
	if err != nil {
		t.Fatalf("reading the tarball's image: %v", err)
	}
	gotConfig, err := got.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	wantConfig, err := want.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if gotConfig != wantConfig {
		t.Errorf("tarball config %s, want the layout's %s config %s", gotConfig, platform, wantConfig)
	}
	gotLayers, err := got.Layers()
	if err != nil {
		t.Fatal(err)
	}
	wantLayers, err := want.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(gotLayers) != 1 || len(wantLayers) != 1 {
		t.Fatalf("tarball has %d layers, layout %d; want 1", len(gotLayers), len(wantLayers))
	}
	gd, err := gotLayers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := wantLayers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	if gd != wd {
		t.Errorf("tarball layer %s, want the layout's %s", gd, wd)
	}
}

// Packing the same binaries with the same flags again gives the same
// digests, SBOMs included: nothing of the packing machine or of the
// moment goes in. (The binaries themselves are reproducible by Go's
// -trimpath build, given the same toolchain.)
func TestPackingIsReproducible(t *testing.T) {
	again := t.TempDir()
	args := []string{"--output", filepath.Join(again, "oci"), "--sbom-dir", again,
		"--version", version, "--revision", revision, "--created", buildDate}
	for _, p := range platforms {
		args = append(args, "--binary", p+"="+filepath.Join(out, "bin", strings.TrimPrefix(p, "linux/"), "batch-scheduler"))
	}
	runTool(t, args...)

	first := openLayout(t, filepath.Join(out, "oci"))
	second := openLayout(t, filepath.Join(again, "oci"))
	if first.indexDesc.Digest != second.indexDesc.Digest {
		t.Errorf("image index %s, then %s", first.indexDesc.Digest, second.indexDesc.Digest)
	}
	digests := func(ds []v1.Descriptor) []string {
		var s []string
		for _, d := range ds {
			s = append(s, d.Digest.String())
		}
		slices.Sort(s)
		return s
	}
	if a, b := digests(first.referrers), digests(second.referrers); !slices.Equal(a, b) || len(a) != len(platforms) {
		t.Errorf("SBOM referrers %v, then %v", a, b)
	}
}

// The push command of docs/image.md copies the image index and its SBOM
// referrers to a registry, where the referrers API lists each SBOM under
// its image.
func TestPush(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	runTool(t, "push", "--layout", filepath.Join(out, "oci"), host+"/batch-scheduler:pushed")

	l := openLayout(t, filepath.Join(out, "oci"))
	resp := get(t, reg.URL+"/v2/batch-scheduler/manifests/pushed", string(types.OCIImageIndex))
	if got := resp.Header.Get("Docker-Content-Digest"); got != l.indexDesc.Digest.String() {
		t.Errorf("the registry's batch-scheduler:pushed is %s, want the layout's index %s", got, l.indexDesc.Digest)
	}
	for _, platform := range platforms {
		d := l.images[platform]
		resp := get(t, reg.URL+"/v2/batch-scheduler/referrers/"+d.Digest.String(), string(types.OCIImageIndex))
		var refs v1.IndexManifest
		if err := json.NewDecoder(resp.Body).Decode(&refs); err != nil {
			t.Fatalf("%s: decoding the referrers of %s: %v", platform, d.Digest, err)
		}
		// Compared by digest, which covers the manifest's artifactType:
		// the in-process registry reports the config's media type as every
		// referrer's artifactType, which is only right for manifests
		// without one of their own.
		var sboms []string
		for _, r := range refs.Manifests {
			sboms = append(sboms, r.Digest.String())
		}
		var want []string
		for _, r := range l.referrers {
			if m := artifactManifest(t, l, r); m.Subject != nil && m.Subject.Digest == d.Digest {
				want = append(want, r.Digest.String())
			}
		}
		if len(want) != 1 || !slices.Equal(sboms, want) {
			t.Errorf("%s: the registry lists referrers %v for image %s, want the layout's %v", platform, sboms, d.Digest, want)
		}
	}
}

// runTool runs bin/oci-image, which make image built.
func runTool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "bin", "oci-image"), args...)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bin/oci-image %s: %v\n%s", strings.Join(args, " "), err, output)
	}
}

func get(t *testing.T, url, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	return resp
}
