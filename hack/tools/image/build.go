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

package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What every image of the index shares. The entrypoint sits at the root
// of the file system, as there is nothing else in it to keep it apart
// from; User is numeric so that a runtime (and the kubelet's
// runAsNonRoot check) needs no /etc/passwd lookup to see it is not root.
const (
	entrypoint  = "/batch-scheduler"
	imageUser   = "65532:65532"
	title       = "batch-scheduler"
	licenses    = "Apache-2.0"
	description = "Kubernetes batch (gang) scheduler"
)

// Annotation keys of the OCI image spec, used as config labels and as
// manifest and index annotations.
const (
	annCreated  = "org.opencontainers.image.created"
	annSource   = "org.opencontainers.image.source"
	annRevision = "org.opencontainers.image.revision"
	annVersion  = "org.opencontainers.image.version"
	annTitle    = "org.opencontainers.image.title"
	annLicenses = "org.opencontainers.image.licenses"
	annDesc     = "org.opencontainers.image.description"
	annRefName  = "org.opencontainers.image.ref.name"
	// The full image name, which containerd reads from index.json on
	// import (ref.name holds only the tag).
	annContainerdName = "io.containerd.image.name"
)

// The SBOM referrers: the artifact type and blob media type of SPDX JSON,
// and the empty config OCI 1.1 prescribes for artifacts without one.
const (
	sbomMediaType                        = "application/spdx+json"
	emptyConfigMediaType types.MediaType = "application/vnd.oci.empty.v1+json"
)

// A valid tag (the distribution spec's grammar): VERSION's "+" must become
// something else before it can be one.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// platformBinary is one --binary flag: a binary and the platform it is for.
type platformBinary struct {
	platform v1.Platform
	path     string
}

// binaryFlags collects repeated --binary flags.
type binaryFlags []platformBinary

func (b *binaryFlags) String() string { return fmt.Sprint(len(*b), " binaries") }

func (b *binaryFlags) Set(s string) error {
	plat, path, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return fmt.Errorf("%q: want OS/ARCH=PATH", s)
	}
	p, err := v1.ParsePlatform(plat)
	if err != nil || p.OS == "" || p.Architecture == "" || p.Variant != "" {
		return fmt.Errorf("%q: platform %q is not OS/ARCH", s, plat)
	}
	for _, have := range *b {
		if have.platform.Equals(*p) {
			return fmt.Errorf("%q: a second binary for %s", s, plat)
		}
	}
	*b = append(*b, platformBinary{platform: *p, path: path})
	return nil
}

type buildOptions struct {
	binaries   binaryFlags
	output     string
	sbomDir    string
	tarball    string
	version    string
	revision   string
	source     string
	created    time.Time
	mtime      time.Time
	repository string
	tag        string
}

func parseBuildFlags(args []string) (*buildOptions, error) {
	var o buildOptions
	var created string
	epoch := int64(-1)
	fs := flag.NewFlagSet("oci-image", flag.ContinueOnError)
	fs.Var(&o.binaries, "binary", "OS/ARCH=PATH of a static batch-scheduler binary; repeat for each platform of the index")
	fs.StringVar(&o.output, "output", "", "directory of the OCI image layout to write; must not exist or be empty")
	fs.StringVar(&o.sbomDir, "sbom-dir", "", "where to write sbom-ARCH.spdx.json as well (default: the parent of --output)")
	fs.StringVar(&o.tarball, "tarball", "", "also write the host platform's image as a tarball for 'docker load' (optional)")
	fs.StringVar(&o.version, "version", "", "version of the binaries (label "+annVersion+")")
	fs.StringVar(&o.revision, "revision", "", "commit the binaries were built from (label "+annRevision+")")
	fs.StringVar(&o.source, "source", "https://github.com/batch-scheduler/batch-scheduler", "source repository URL (label "+annSource+")")
	fs.StringVar(&created, "created", "", "build time, RFC 3339 (label "+annCreated+", the config's created, the SBOM's creation time)")
	fs.Int64Var(&epoch, "source-date-epoch", -1, "modification time of the layer's files, in seconds since the epoch (default: --created)")
	fs.StringVar(&o.repository, "repository", "batch-scheduler", "repository the image is meant for (containerd's name for the layout, the tarball's tag)")
	fs.StringVar(&o.tag, "tag", "", "tag of the image index in index.json ("+annRefName+"; default: --version with '+' turned into '-')")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var errs []error
	if len(o.binaries) == 0 {
		errs = append(errs, errors.New("no --binary given"))
	}
	if o.output == "" {
		errs = append(errs, errors.New("--output is required"))
	}
	if o.version == "" || o.revision == "" {
		errs = append(errs, errors.New("--version and --revision are required"))
	}
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		errs = append(errs, fmt.Errorf("--created %q: %w", created, err))
	}
	// Whole seconds in UTC: the labels, the config and the tar headers
	// then write the same instant the same way.
	o.created = t.UTC().Truncate(time.Second)
	o.mtime = o.created
	if epoch >= 0 {
		o.mtime = time.Unix(epoch, 0).UTC()
	}
	if o.tag == "" {
		o.tag = strings.ReplaceAll(o.version, "+", "-")
	}
	if !tagPattern.MatchString(o.tag) {
		errs = append(errs, fmt.Errorf("tag %q is not a valid image tag (letters, digits, '_', '.', '-'; pass --tag)", o.tag))
	}
	if _, err := name.NewRepository(o.repository); err != nil {
		errs = append(errs, fmt.Errorf("--repository %q: %w", o.repository, err))
	}
	if o.sbomDir == "" && o.output != "" {
		o.sbomDir = filepath.Dir(filepath.Clean(o.output))
	}
	return &o, errors.Join(errs...)
}

// platformImage is one platform's image and the SBOM of its binary.
type platformImage struct {
	platform v1.Platform
	image    v1.Image
	sbom     []byte
}

func runBuild(args []string) error {
	o, err := parseBuildFlags(args)
	if err != nil {
		return err
	}
	if entries, err := os.ReadDir(o.output); err == nil && len(entries) > 0 {
		// Blobs of an earlier build would stay behind, unreferenced.
		return fmt.Errorf("--output %s is not empty; remove it first", o.output)
	}

	var images []platformImage
	for _, b := range o.binaries {
		pi, err := buildPlatform(o, b)
		if err != nil {
			return err
		}
		images = append(images, pi)
	}

	anns := o.annotations()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, pi := range images {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        plainImage{pi.image},
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: pi.platform.OS, Architecture: pi.platform.Architecture}},
		})
	}
	idx = mutate.Annotations(idx, anns).(v1.ImageIndex)

	p, err := layout.Write(o.output, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the OCI layout %s: %w", o.output, err)
	}
	refAnns := map[string]string{annRefName: o.tag, annContainerdName: o.repository + ":" + o.tag}
	if err := p.AppendIndex(idx, layout.WithAnnotations(refAnns)); err != nil {
		return fmt.Errorf("writing the image index to %s: %w", o.output, err)
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("computing the digest of the image index: %w", err)
	}
	fmt.Printf("image index %s:%s  %s  (%s)\n", o.repository, o.tag, idxDigest, o.output)

	for _, pi := range images {
		arch := pi.platform.Architecture
		sbomDesc, err := attachSBOM(p, pi.image, pi.sbom, arch, o.created)
		if err != nil {
			return fmt.Errorf("attaching the SBOM of %s: %w", pi.platform, err)
		}
		file := filepath.Join(o.sbomDir, "sbom-"+arch+".spdx.json")
		if err := os.WriteFile(file, pi.sbom, 0o644); err != nil {
			return fmt.Errorf("writing the SBOM of %s: %w", pi.platform, err)
		}
		if err := printImage(pi, sbomDesc, file); err != nil {
			return err
		}
	}

	if o.tarball != "" {
		if err := writeTarball(o, images); err != nil {
			return err
		}
	}
	return nil
}

// buildPlatform makes the image of one binary and its SBOM.
func buildPlatform(o *buildOptions, b platformBinary) (platformImage, error) {
	bin, err := os.ReadFile(b.path)
	if err != nil {
		return platformImage{}, fmt.Errorf("reading the %s binary: %w", b.platform, err)
	}
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		return platformImage{}, fmt.Errorf("reading the Go build information of %s: %w", b.path, err)
	}
	if err := checkBuild(bi, b.platform); err != nil {
		return platformImage{}, fmt.Errorf("%s: %w", b.path, err)
	}

	tarBytes, err := layerTar(bin, o.mtime)
	if err != nil {
		return platformImage{}, fmt.Errorf("writing the layer of %s: %w", b.platform, err)
	}
	// The layer is compressed once (cached) at gzip's best level: it is
	// pulled far more often than it is built. Go's gzip writes no name or
	// time in its header, so the same tar gives the same blob.
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithCompressedCaching)
	if err != nil {
		return platformImage{}, fmt.Errorf("making the layer of %s: %w", b.platform, err)
	}

	cf := &v1.ConfigFile{
		Architecture: b.platform.Architecture,
		OS:           b.platform.OS,
		Created:      v1.Time{Time: o.created},
		Config: v1.Config{
			User:       imageUser,
			Entrypoint: []string{entrypoint},
			WorkingDir: "/",
			Labels:     o.annotations(),
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return platformImage{}, fmt.Errorf("setting the config of %s: %w", b.platform, err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: o.created},
			CreatedBy: "hack/build-image.sh: " + entrypoint + ", /etc/passwd, /etc/group, /tmp",
			Comment:   "batch-scheduler " + o.version + " for " + b.platform.String(),
		},
	})
	if err != nil {
		return platformImage{}, fmt.Errorf("adding the layer of %s: %w", b.platform, err)
	}
	img = mutate.Annotations(img, o.annotations()).(v1.Image)

	sum := sha256.Sum256(bin)
	sbom, err := spdxDocument(bi, sbomInput{
		platform: b.platform,
		version:  o.version,
		revision: o.revision,
		source:   o.source,
		created:  o.created,
		sha256:   hex.EncodeToString(sum[:]),
	})
	if err != nil {
		return platformImage{}, fmt.Errorf("the SBOM of %s: %w", b.platform, err)
	}
	return platformImage{platform: b.platform, image: img, sbom: sbom}, nil
}

// checkBuild refuses a binary that is not what the image promises: built
// for another platform, or with cgo (a scratch image has no C library
// for it to load).
func checkBuild(bi *buildinfo.BuildInfo, p v1.Platform) error {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOOS"] != p.OS || settings["GOARCH"] != p.Architecture {
		return fmt.Errorf("built for %s/%s, given as %s", settings["GOOS"], settings["GOARCH"], p)
	}
	if settings["CGO_ENABLED"] != "0" {
		return fmt.Errorf("built with CGO_ENABLED=%q; the image has no C library, build with CGO_ENABLED=0", settings["CGO_ENABLED"])
	}
	return nil
}

// annotations are the OCI labels of the config, also set as annotations
// of the manifests and the index, where registries look for them.
func (o *buildOptions) annotations() map[string]string {
	return map[string]string{
		annCreated:  o.created.Format(time.RFC3339),
		annSource:   o.source,
		annRevision: o.revision,
		annVersion:  o.version,
		annTitle:    title,
		annLicenses: licenses,
		annDesc:     description,
	}
}

// printImage reports what was written for one platform, with the sizes a
// pull transfers.
func printImage(pi platformImage, sbom v1.Descriptor, sbomFile string) error {
	d, err := pi.image.Digest()
	if err != nil {
		return fmt.Errorf("computing the digest of the %s image: %w", pi.platform, err)
	}
	m, err := pi.image.Manifest()
	if err != nil {
		return fmt.Errorf("reading the manifest of the %s image: %w", pi.platform, err)
	}
	raw, err := pi.image.RawManifest()
	if err != nil {
		return fmt.Errorf("reading the manifest of the %s image: %w", pi.platform, err)
	}
	total := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	layers, err := pi.image.Layers()
	if err != nil {
		return fmt.Errorf("reading the layers of the %s image: %w", pi.platform, err)
	}
	var unpacked int64
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return fmt.Errorf("reading a layer of the %s image: %w", pi.platform, err)
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("reading a layer of the %s image: %w", pi.platform, err)
		}
		unpacked += n
	}
	fmt.Printf("  %-12s %s  %d bytes compressed (%.1f MB; layer tar %.1f MB)\n",
		pi.platform.String(), d, total, float64(total)/1e6, float64(unpacked)/1e6)
	fmt.Printf("  %-12s SBOM referrer %s (%s)\n", "", sbom.Digest, sbomFile)
	return nil
}

// writeTarball writes the host platform's image as a docker-style tarball
// ("docker load", "ctr image import"), tagged REPOSITORY:TAG.
func writeTarball(o *buildOptions, images []platformImage) error {
	host := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	for _, pi := range images {
		if !pi.platform.Equals(host) {
			continue
		}
		tag, err := name.NewTag(o.repository + ":" + o.tag)
		if err != nil {
			return fmt.Errorf("tagging the tarball: %w", err)
		}
		if err := tarball.WriteToFile(o.tarball, tag, pi.image); err != nil {
			return fmt.Errorf("writing the tarball %s: %w", o.tarball, err)
		}
		fmt.Printf("tarball of %s: %s (%s)\n", host, o.tarball, tag)
		return nil
	}
	return fmt.Errorf("--tarball: no --binary for the host platform %s", host)
}

// plainImage is an image listed in the index as images are, without the
// artifactType go-containerregistry gives an index entry by default (the
// config's media type): that field is for artifacts, such as the SBOMs,
// and a plain multi-platform index, as docker and buildah write it, has
// none.
type plainImage struct{ v1.Image }

// ArtifactType is read by partial.Descriptor in place of the config's.
func (plainImage) ArtifactType() (string, error) { return "", nil }

// descriptorOf is the descriptor by which a referrer names its subject.
func descriptorOf(img v1.Image) (v1.Descriptor, error) {
	d, err := partial.Descriptor(img)
	if err != nil {
		return v1.Descriptor{}, err
	}
	// Only what identifies the manifest: a subject carries no
	// annotations or platform of its own.
	return v1.Descriptor{MediaType: d.MediaType, Size: d.Size, Digest: d.Digest}, nil
}
