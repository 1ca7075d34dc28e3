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
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The parts of an SPDX 2.3 document (JSON serialization) this SBOM uses.
type spdxDocument23 struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
	Comment  string   `json:"comment,omitempty"`
}

type spdxPackage struct {
	Name                  string            `json:"name"`
	SPDXID                string            `json:"SPDXID"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	PackageFileName       string            `json:"packageFileName,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	LicenseConcluded      string            `json:"licenseConcluded,omitempty"`
	LicenseDeclared       string            `json:"licenseDeclared,omitempty"`
	CopyrightText         string            `json:"copyrightText,omitempty"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
	Comment               string            `json:"comment,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// sbomInput is what the SBOM says beyond the build information.
type sbomInput struct {
	platform v1.Platform
	version  string
	revision string
	source   string
	created  time.Time
	// sha256 is the binary's, in hex.
	sha256 string
}

const noAssertion = "NOASSERTION"

// spdxDocument describes the binary whose build information is bi: the
// program (the main module, at the version it was built as), the Go
// standard library it links, and each module it links, each named by
// module path and version with a purl, and for modules the checksum
// go.sum holds. It lists what the linker put in, not the module graph: a
// module required but not linked is not in it.
func spdxDocument(bi *buildinfo.BuildInfo, in sbomInput) ([]byte, error) {
	const mainID = "SPDXRef-Package-batch-scheduler"
	plat := in.platform.OS + "-" + in.platform.Architecture
	doc := spdxDocument23{
		SPDXVersion: "SPDX-2.3",
		DataLicense: "CC0-1.0",
		SPDXID:      "SPDXRef-DOCUMENT",
		Name:        "batch-scheduler-" + in.version + "-" + plat,
		// Unique per binary, and the same for the same binary: the URI
		// names what the document describes.
		DocumentNamespace: strings.TrimSuffix(in.source, "/") + "/spdx/" + url.PathEscape(in.version) + "/" + plat + "/" + in.sha256,
		CreationInfo: spdxCreationInfo{
			Created:  in.created.UTC().Format("2006-01-02T15:04:05Z"),
			Creators: []string{"Tool: batch-scheduler-hack-tools-image", "Organization: batch-scheduler"},
			Comment:  "Generated from the Go build information embedded in the binary (debug/buildinfo); lists the modules linked into it.",
		},
	}

	prog := spdxPackage{
		Name:                  bi.Main.Path,
		SPDXID:                mainID,
		VersionInfo:           in.version,
		PackageFileName:       entrypoint,
		DownloadLocation:      gitLocation(in.source, in.revision),
		Checksums:             []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: in.sha256}},
		LicenseConcluded:      licenses,
		LicenseDeclared:       licenses,
		CopyrightText:         noAssertion,
		PrimaryPackagePurpose: "APPLICATION",
		Comment:               "The checksum is the binary's (" + entrypoint + "), built from commit " + in.revision + " with " + buildSettings(bi),
		ExternalRefs:          []spdxExternalRef{purlRef(bi.Main.Path, in.version)},
	}
	doc.Packages = append(doc.Packages, prog)
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", mainID})

	stdlib := spdxPackage{
		Name:                  "stdlib",
		SPDXID:                "SPDXRef-Package-stdlib",
		VersionInfo:           bi.GoVersion,
		DownloadLocation:      "https://go.dev/dl/",
		LicenseConcluded:      noAssertion,
		LicenseDeclared:       "BSD-3-Clause",
		CopyrightText:         noAssertion,
		PrimaryPackagePurpose: "LIBRARY",
		Comment:               "The Go standard library and runtime of the toolchain that built the binary.",
		ExternalRefs:          []spdxExternalRef{purlRef("stdlib", bi.GoVersion)},
	}
	doc.Packages = append(doc.Packages, stdlib)
	doc.Relationships = append(doc.Relationships, spdxRelationship{mainID, "DEPENDS_ON", stdlib.SPDXID})

	for i, dep := range bi.Deps {
		pkg, err := modulePackage(i, dep)
		if err != nil {
			return nil, err
		}
		doc.Packages = append(doc.Packages, pkg)
		doc.Relationships = append(doc.Relationships, spdxRelationship{mainID, "DEPENDS_ON", pkg.SPDXID})
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the SPDX document: %w", err)
	}
	return append(out, '\n'), nil
}

// modulePackage is the SPDX package of a linked module. A replaced module
// is described by its replacement, which is what was compiled in.
func modulePackage(i int, dep *debug.Module) (spdxPackage, error) {
	linked := dep
	comment := ""
	if dep.Replace != nil {
		linked = dep.Replace
		comment = "Replaces " + dep.Path + " " + dep.Version + "."
	}
	pkg := spdxPackage{
		Name:        linked.Path,
		SPDXID:      fmt.Sprintf("SPDXRef-Package-%d-%s", i, spdxIDChars.ReplaceAllString(linked.Path, "-")),
		VersionInfo: linked.Version,
		// The module proxy serves it, but the module path alone does not
		// say from where; a purl does that for tools.
		DownloadLocation:      noAssertion,
		LicenseConcluded:      noAssertion,
		LicenseDeclared:       noAssertion,
		CopyrightText:         noAssertion,
		PrimaryPackagePurpose: "LIBRARY",
		Comment:               comment,
		ExternalRefs:          []spdxExternalRef{purlRef(linked.Path, linked.Version)},
	}
	if linked.Sum != "" {
		sum, err := h1Hex(linked.Sum)
		if err != nil {
			return spdxPackage{}, fmt.Errorf("module %s %s: %w", linked.Path, linked.Version, err)
		}
		pkg.Checksums = []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: sum}}
		pkg.Comment = strings.TrimSpace(pkg.Comment + " Checksum: the module's go.sum hash (" + linked.Sum + "), a SHA-256 over its file list, in hex.")
	}
	return pkg, nil
}

// spdxIDChars are the characters an SPDX identifier may not hold.
var spdxIDChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// h1Hex turns go.sum's "h1:" hash (base64 SHA-256 of the module's file
// list, see golang.org/x/mod/sumdb/dirhash) into the hex SPDX expects.
func h1Hex(sum string) (string, error) {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return "", fmt.Errorf("checksum %q is not an h1: hash", sum)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 32 {
		return "", fmt.Errorf("checksum %q is not a base64 SHA-256", sum)
	}
	return hex.EncodeToString(raw), nil
}

// purlRef is the package URL of a Go module. The module path keeps its
// case: paths that differ only in case are different modules (the proxy
// escapes capitals for that reason), and Go's own tools (govulncheck)
// write them so.
func purlRef(path, version string) spdxExternalRef {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	// "+" (as in +incompatible) is not literal in a purl version.
	v := strings.ReplaceAll(url.PathEscape(version), "+", "%2B")
	return spdxExternalRef{
		ReferenceCategory: "PACKAGE-MANAGER",
		ReferenceType:     "purl",
		ReferenceLocator:  "pkg:golang/" + strings.Join(segs, "/") + "@" + v,
	}
}

// gitLocation is the SPDX download location of the source at revision.
func gitLocation(source, revision string) string {
	if !strings.HasPrefix(source, "https://") {
		return noAssertion
	}
	return "git+" + strings.TrimSuffix(source, "/") + ".git@" + revision
}

// buildSettings are the build's settings as go version -m prints them,
// but -ldflags, which only repeats the version.
func buildSettings(bi *buildinfo.BuildInfo) string {
	s := []string{bi.GoVersion}
	for _, kv := range bi.Settings {
		if kv.Key == "-ldflags" {
			continue
		}
		s = append(s, kv.Key+"="+kv.Value)
	}
	return strings.Join(s, " ") + "."
}
