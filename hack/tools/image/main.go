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

// Command oci-image packages batch-scheduler binaries into a
// multi-architecture OCI image without a container engine, and copies the
// result to a registry. hack/build-image.sh (make image) cross-compiles the
// binaries and runs it; docs/image.md describes the image.
//
//	oci-image --binary linux/amd64=PATH [--binary linux/arm64=PATH ...] --output DIR \
//	          --version V --revision SHA --created RFC3339 [--tag T] [--tarball FILE] ...
//	oci-image push --layout DIR REGISTRY/REPOSITORY:TAG
//
// The first form writes an OCI image layout to DIR: one image index with an
// image per platform (no base image: a single layer holds the binary, a
// minimal /etc/passwd and /etc/group and an empty /tmp), and, as an OCI 1.1
// referrer of each platform's image, an SPDX 2.3 SBOM made from the
// binary's embedded build information. The second pushes that index and its
// SBOMs.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "push" {
		err = runPush(ctx, os.Args[2:])
	} else {
		err = runBuild(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "oci-image:", err)
		os.Exit(1)
	}
}
