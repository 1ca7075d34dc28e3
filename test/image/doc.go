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
