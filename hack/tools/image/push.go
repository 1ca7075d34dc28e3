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
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// runPush copies the image index of a layout written by runBuild to a
// registry under the given tag, then each SBOM referrer of its images (by
// digest: the registry's referrers API, or the tag go-containerregistry
// maintains for registries without it, lists them under their subject).
//
// crane push cannot do this: it refuses a layout whose index.json lists
// more than one manifest, and the referrers are listed there too.
// Credentials come from the docker/podman configuration, as for crane.
func runPush(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("oci-image push", flag.ContinueOnError)
	dir := fs.String("layout", "_output/image/oci", "OCI image layout written by oci-image")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: oci-image push [--layout DIR] REGISTRY/REPOSITORY:TAG")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("push: want one destination, REGISTRY/REPOSITORY:TAG")
	}
	dst, err := name.NewTag(fs.Arg(0), name.StrictValidation)
	if err != nil {
		return fmt.Errorf("push: destination %q (want REGISTRY/REPOSITORY:TAG): %w", fs.Arg(0), err)
	}

	l, err := layout.ImageIndexFromPath(*dir)
	if err != nil {
		return fmt.Errorf("push: reading the OCI layout %s: %w", *dir, err)
	}
	top, err := l.IndexManifest()
	if err != nil {
		return fmt.Errorf("push: reading %s/index.json: %w", *dir, err)
	}
	var indexes, referrers []v1.Descriptor
	for _, d := range top.Manifests {
		switch {
		case d.ArtifactType != "":
			referrers = append(referrers, d)
		case d.MediaType.IsIndex():
			indexes = append(indexes, d)
		}
	}
	if len(indexes) != 1 {
		return fmt.Errorf("push: %s/index.json lists %d image indexes, want 1", *dir, len(indexes))
	}
	idx, err := l.ImageIndex(indexes[0].Digest)
	if err != nil {
		return fmt.Errorf("push: opening image index %s: %w", indexes[0].Digest, err)
	}
	children, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("push: reading image index %s: %w", indexes[0].Digest, err)
	}
	images := map[v1.Hash]bool{}
	for _, c := range children.Manifests {
		images[c.Digest] = true
	}

	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if err := remote.WriteIndex(dst, idx, opts...); err != nil {
		return fmt.Errorf("push: writing image index %s to %s: %w", indexes[0].Digest, dst, err)
	}
	fmt.Printf("%s@%s\n", dst, indexes[0].Digest)

	for _, r := range referrers {
		art, err := l.Image(r.Digest)
		if err != nil {
			return fmt.Errorf("push: opening referrer %s: %w", r.Digest, err)
		}
		m, err := art.Manifest()
		if err != nil {
			return fmt.Errorf("push: reading referrer %s: %w", r.Digest, err)
		}
		if m.Subject == nil || !images[m.Subject.Digest] {
			// Not about this index's images; leave it.
			continue
		}
		ref := dst.Context().Digest(r.Digest.String())
		if err := remote.Write(ref, art, opts...); err != nil {
			return fmt.Errorf("push: writing referrer %s (%s of %s): %w", r.Digest, r.ArtifactType, m.Subject.Digest, err)
		}
		fmt.Printf("%s  %s of %s\n", ref, r.ArtifactType, m.Subject.Digest)
	}
	return nil
}
