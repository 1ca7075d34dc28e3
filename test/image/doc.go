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

// Package image tests the container image make image builds
// (hack/build-image.sh, hack/tools/image; see docs/image.md): it builds
// the image once for linux/amd64 and linux/arm64 into a temporary
// directory, then checks the OCI layout (the index, each platform's
// config and layer, the static binaries, the SPDX SBOMs attached as
// referrers, the docker tarball), that packing the same binaries again
// gives the same digests, that the push command copies the index and its
// SBOMs to a registry, and that the binary taken out of the image reports
// the version it was built with and binds a pod on a real kube-apiserver
// (test/controlplane).
//
// The build compiles batch-scheduler for both platforms (without the race
// detector, so apart from the test's own build): minutes on a cold build
// cache, about a minute once make image has run.
//
// The package holds tests only.
package image
