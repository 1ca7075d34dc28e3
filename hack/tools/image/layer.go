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
	"archive/tar"
	"bytes"
	"fmt"
	"strings"
	"time"
)

// nonroot is the user and group the image runs as (its config's User). The
// files name it so that tools that look the user up (ps, id, a debugger
// attached to the container) find a name; the runtime needs none.
const nonroot = 65532

// The whole of /etc/passwd and /etc/group: root, because uid 0 exists in
// every container, and nonroot. Neither has a shell or a home of its own
// (the image holds neither), hence "/" and a nologin that is not there.
var (
	passwd = fmt.Sprintf("root:x:0:0:root:/:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/:/sbin/nologin\n", nonroot, nonroot)
	group  = fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonroot)
)

// layerTar returns the image's only layer, an uncompressed tar:
//
//	/batch-scheduler  0755 root  the binary (the entrypoint)
//	/etc/             0755 root
//	/etc/group        0644 root
//	/etc/passwd       0644 root
//	/tmp/             1777 nonroot
//
// Every entry has the modification time mtime and no user or group
// names, access or change times, so the bytes depend on nothing but the
// binary and mtime, and the digest of the same build is the same on any
// machine. /tmp is nonroot's and world-writable with the sticky bit, as
// on any system; with a read-only root file system a volume mounted there
// takes its place.
func layerTar(binary []byte, mtime time.Time) ([]byte, error) {
	type entry struct {
		name     string
		mode     int64
		uid      int
		data     []byte
		typeflag byte
	}
	// In lexical order, parents first: the order a runtime extracts them
	// in does not matter, but a fixed one keeps the bytes fixed.
	entries := []entry{
		{name: strings.TrimPrefix(entrypoint, "/"), mode: 0o755, data: binary, typeflag: tar.TypeReg},
		{name: "etc/", mode: 0o755, typeflag: tar.TypeDir},
		{name: "etc/group", mode: 0o644, data: []byte(group), typeflag: tar.TypeReg},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd), typeflag: tar.TypeReg},
		{name: "tmp/", mode: 0o1777, uid: nonroot, typeflag: tar.TypeDir},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Typeflag: e.typeflag,
			Name:     e.name,
			Mode:     e.mode,
			Uid:      e.uid,
			Gid:      e.uid,
			Size:     int64(len(e.data)),
			ModTime:  mtime,
			// PAX would add records (and their own fields) for
			// nothing here; USTAR holds every value above.
			Format: tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar header of %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("tar data of %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the tar: %w", err)
	}
	return buf.Bytes(), nil
}
