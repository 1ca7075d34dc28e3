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
	"encoding/json"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// emptyJSON is the content of the OCI 1.1 empty descriptor: an artifact
// with nothing to configure points its config at these two bytes.
var emptyJSON = []byte("{}")

// attachSBOM writes sbom into the layout as an OCI 1.1 artifact whose
// subject is img's manifest, and lists it in index.json, where tools that
// read referrers from a layout (oras, regclient) look for it. It returns
// the artifact manifest's descriptor.
//
// go-containerregistry's mutate can set a subject but not a manifest's
// artifactType (nor a config of "{}"), so the manifest is put together
// here from its own types and written blob by blob.
func attachSBOM(p layout.Path, img v1.Image, sbom []byte, arch string, created time.Time) (v1.Descriptor, error) {
	subject, err := descriptorOf(img)
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("describing the subject image: %w", err)
	}
	sbomDesc, err := writeBlob(p, sbom, sbomMediaType)
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("writing the SBOM blob: %w", err)
	}
	sbomDesc.Annotations = map[string]string{annTitle: "sbom-" + arch + ".spdx.json"}
	config, err := writeBlob(p, emptyJSON, emptyConfigMediaType)
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("writing the empty config blob: %w", err)
	}
	// The spec suggests carrying the two bytes inline as well.
	config.Data = emptyJSON

	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  sbomMediaType,
		Config:        config,
		Layers:        []v1.Descriptor{sbomDesc},
		Subject:       &subject,
		Annotations:   map[string]string{annCreated: created.Format(time.RFC3339)},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("encoding the artifact manifest: %w", err)
	}
	desc, err := writeBlob(p, raw, types.OCIManifestSchema1)
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("writing the artifact manifest: %w", err)
	}
	desc.ArtifactType = sbomMediaType
	if err := p.AppendDescriptor(desc); err != nil {
		return v1.Descriptor{}, fmt.Errorf("listing the artifact manifest in index.json: %w", err)
	}
	return desc, nil
}

// writeBlob stores data under blobs/sha256/ and returns its descriptor.
func writeBlob(p layout.Path, data []byte, mt types.MediaType) (v1.Descriptor, error) {
	h, n, err := v1.SHA256(bytes.NewReader(data))
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := p.WriteBlob(h, io.NopCloser(bytes.NewReader(data))); err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Size: n, Digest: h}, nil
}
