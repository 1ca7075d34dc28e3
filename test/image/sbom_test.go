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
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const sbomType = "application/spdx+json"

// spdx is what the test reads of an SPDX 2.3 JSON document.
type spdx struct {
	SPDXVersion       string `json:"spdxVersion"`
	DataLicense       string `json:"dataLicense"`
	SPDXID            string `json:"SPDXID"`
	DocumentNamespace string `json:"documentNamespace"`
	CreationInfo      struct {
		Created  string   `json:"created"`
		Creators []string `json:"creators"`
	} `json:"creationInfo"`
	Packages []struct {
		Name             string `json:"name"`
		SPDXID           string `json:"SPDXID"`
		VersionInfo      string `json:"versionInfo"`
		DownloadLocation string `json:"downloadLocation"`
		Checksums        []struct {
			Algorithm     string `json:"algorithm"`
			ChecksumValue string `json:"checksumValue"`
		} `json:"checksums"`
		ExternalRefs []struct {
			ReferenceType    string `json:"referenceType"`
			ReferenceLocator string `json:"referenceLocator"`
		} `json:"externalRefs"`
	} `json:"packages"`
	Relationships []struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	} `json:"relationships"`
}

var spdxID = regexp.MustCompile(`^SPDXRef-[A-Za-z0-9.-]+$`)

// Each platform's image has exactly one SBOM referrer in the layout, an
// OCI 1.1 artifact whose subject is that image's manifest; its one blob is
// the SPDX document also written beside the layout, and the document
// describes the binary in that image, with the modules it links.
func TestSBOM(t *testing.T) {
	l := openLayout(t, filepath.Join(out, "oci"))
	if len(l.referrers) != len(platforms) {
		t.Errorf("index.json lists %d referrers, want one per platform (%d)", len(l.referrers), len(platforms))
	}
	// What the main module requires of client-go, from go.mod and go.sum
	// rather than from the binary, which the SBOM is made from.
	clientGoVersion, clientGoSum := requiredModule(t, "k8s.io/client-go")

	for _, platform := range platforms {
		arch := strings.TrimPrefix(platform, "linux/")
		subject := l.images[platform]
		var found []v1.Descriptor
		for _, r := range l.referrers {
			m := artifactManifest(t, l, r)
			if m.Subject != nil && m.Subject.Digest == subject.Digest {
				found = append(found, r)
			}
		}
		if len(found) != 1 {
			t.Errorf("%s: %d referrers of image %s, want 1", platform, len(found), subject.Digest)
			continue
		}
		r := found[0]
		m := artifactManifest(t, l, r)
		if r.ArtifactType != sbomType || m.ArtifactType != sbomType || r.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: referrer %s: artifactType %q (manifest %q), media type %s; want %s, an OCI manifest", platform, r.Digest, r.ArtifactType, m.ArtifactType, r.MediaType, sbomType)
		}
		if m.Subject.MediaType != subject.MediaType || m.Subject.Size != subject.Size {
			t.Errorf("%s: referrer subject %+v does not describe the image's manifest %+v", platform, *m.Subject, subject)
		}
		emptyDigest := sha256.Sum256([]byte("{}"))
		if m.Config.MediaType != "application/vnd.oci.empty.v1+json" || m.Config.Digest.Hex != hex.EncodeToString(emptyDigest[:]) {
			t.Errorf("%s: referrer config %+v, want the OCI empty descriptor", platform, m.Config)
		}
		if len(m.Layers) != 1 || m.Layers[0].MediaType != sbomType {
			t.Fatalf("%s: referrer layers %+v, want one %s blob", platform, m.Layers, sbomType)
		}
		blob := readBlob(t, l, m.Layers[0].Digest)
		written, err := os.ReadFile(filepath.Join(out, "sbom-"+arch+".spdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(blob, written) {
			t.Errorf("%s: the SBOM in the layout differs from sbom-%s.spdx.json", platform, arch)
		}

		var doc spdx
		if err := json.Unmarshal(blob, &doc); err != nil {
			t.Fatalf("%s: the SBOM is not JSON: %v", platform, err)
		}
		if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.SPDXID != "SPDXRef-DOCUMENT" || doc.DocumentNamespace == "" {
			t.Errorf("%s: SBOM header %q %q %q %q, want SPDX-2.3, CC0-1.0, SPDXRef-DOCUMENT and a namespace", platform, doc.SPDXVersion, doc.DataLicense, doc.SPDXID, doc.DocumentNamespace)
		}
		if doc.CreationInfo.Created != buildDate || len(doc.CreationInfo.Creators) == 0 {
			t.Errorf("%s: SBOM created %q by %q, want %s and a creator", platform, doc.CreationInfo.Created, doc.CreationInfo.Creators, buildDate)
		}

		ids := map[string]bool{"SPDXRef-DOCUMENT": true}
		purls := map[string]string{} // name -> purl
		sums := map[string]string{}  // name -> SHA256
		versions := map[string]string{}
		idOf := map[string]string{}
		for _, p := range doc.Packages {
			if !spdxID.MatchString(p.SPDXID) || ids[p.SPDXID] {
				t.Errorf("%s: package %s: SPDXID %q is not a valid, unique identifier", platform, p.Name, p.SPDXID)
			}
			ids[p.SPDXID] = true
			idOf[p.Name] = p.SPDXID
			versions[p.Name] = p.VersionInfo
			if p.DownloadLocation == "" {
				t.Errorf("%s: package %s has no downloadLocation (NOASSERTION at least)", platform, p.Name)
			}
			for _, r := range p.ExternalRefs {
				if r.ReferenceType == "purl" {
					purls[p.Name] = r.ReferenceLocator
				}
			}
			for _, c := range p.Checksums {
				if c.Algorithm == "SHA256" {
					sums[p.Name] = c.ChecksumValue
				}
			}
		}
		for _, r := range doc.Relationships {
			if !ids[r.Element] || !ids[r.Related] {
				t.Errorf("%s: relationship %s %s %s names an unknown element", platform, r.Element, r.Type, r.Related)
			}
		}

		const mainModule = "github.com/batch-scheduler/batch-scheduler"
		bin := file(layerFiles(t, l, platform), "batch-scheduler")
		binSum := sha256.Sum256(bin)
		if versions[mainModule] != version || purls[mainModule] != "pkg:golang/"+mainModule+"@v1.2.3-imagetest%2Babc" {
			t.Errorf("%s: main module package: version %q purl %q, want %s", platform, versions[mainModule], purls[mainModule], version)
		}
		if sums[mainModule] != hex.EncodeToString(binSum[:]) {
			t.Errorf("%s: main module package checksum %q, want the SHA-256 of the binary in the layer %x", platform, sums[mainModule], binSum)
		}
		if !hasRelationship(doc, "SPDXRef-DOCUMENT", "DESCRIBES", idOf[mainModule]) {
			t.Errorf("%s: the SBOM does not DESCRIBE the main module", platform)
		}
		wantSum, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(clientGoSum, "h1:"))
		if err != nil {
			t.Fatal(err)
		}
		if versions["k8s.io/client-go"] != clientGoVersion || purls["k8s.io/client-go"] != "pkg:golang/k8s.io/client-go@"+clientGoVersion ||
			sums["k8s.io/client-go"] != hex.EncodeToString(wantSum) {
			t.Errorf("%s: k8s.io/client-go: version %q purl %q checksum %q; want %s (%s)",
				platform, versions["k8s.io/client-go"], purls["k8s.io/client-go"], sums["k8s.io/client-go"], clientGoVersion, clientGoSum)
		}
		if !hasRelationship(doc, idOf[mainModule], "DEPENDS_ON", idOf["k8s.io/client-go"]) {
			t.Errorf("%s: the main module does not DEPEND_ON k8s.io/client-go", platform)
		}
	}
}

// requiredModule returns the version of path the main module builds
// with (go list -m) and its hash in go.sum.
func requiredModule(t *testing.T, path string) (version, sum string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Version}}", path)
	cmd.Dir = root
	v, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", path, err)
	}
	version = strings.TrimSpace(string(v))
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(gosum), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == path && f[1] == version {
			return version, f[2]
		}
	}
	t.Fatalf("go.sum has no hash of %s %s", path, version)
	return "", ""
}

func hasRelationship(doc spdx, from, typ, to string) bool {
	for _, r := range doc.Relationships {
		if r.Element == from && r.Type == typ && r.Related == to && from != "" && to != "" {
			return true
		}
	}
	return false
}

func artifactManifest(t *testing.T, l *ociLayout, d v1.Descriptor) *v1.Manifest {
	t.Helper()
	m, err := v1.ParseManifest(bytes.NewReader(readBlob(t, l, d.Digest)))
	if err != nil {
		t.Fatalf("parsing manifest %s: %v", d.Digest, err)
	}
	return m
}

// readBlob reads a blob of the layout, checking its digest.
func readBlob(t *testing.T, l *ociLayout, h v1.Hash) []byte {
	t.Helper()
	rc, err := l.path.Blob(h)
	if err != nil {
		t.Fatalf("opening blob %s: %v", h, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading blob %s: %v", h, err)
	}
	if got, _, _ := v1.SHA256(bytes.NewReader(data)); got != h {
		t.Fatalf("blob %s has digest %s", h, got)
	}
	return data
}
