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

package deploy

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestReleaseProcedure follows docs/releasing.md on a scratch clone of
// this commit: the tag is what the built binary reports as its version,
// and the chart packages under the release's version with the tag as its
// default image.
func TestReleaseProcedure(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git: %v (the release procedure needs it)", err)
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make: %v (the release procedure needs it)", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), name, args...)
		cmd.Dir = dir
		// The clone's version comes from its own tags only.
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out)
		}
		return string(out)
	}
	const version = "9.8.7"
	src := filepath.Join(t.TempDir(), "src")
	run(root, "git", "clone", "--quiet", "--no-tags", root, src)
	run(src, "git", "tag", "v"+version)

	// make build from the tagged, clean checkout stamps the tag.
	run(src, "make", "--no-print-directory", "build", "GO=go")
	got := run(src, filepath.Join("bin", "batch-scheduler"), "--version")
	if !strings.Contains(got, "v"+version) || strings.Contains(got, "dirty") {
		t.Errorf("--version of a build of tag v%s = %q, want the tag, not dirty", version, strings.TrimSpace(got))
	}

	// The chart, packaged with the release's version.
	out := t.TempDir()
	helm(t, "package", filepath.Join(src, "charts", "batch-scheduler"), "--version", version, "--app-version", "v"+version, "-d", out)
	pkg := filepath.Join(out, "batch-scheduler-"+version+".tgz")
	chart := chartYAML(t, pkg)
	if chart["version"] != version || chart["appVersion"] != "v"+version {
		t.Errorf("packaged Chart.yaml has version %v and appVersion %v, want %s and v%s", chart["version"], chart["appVersion"], version, version)
	}
	rendered := string(helm(t, "template", "batch-scheduler", pkg, "--namespace", "kube-system", "--kube-version", chartKubeVersion))
	if !strings.Contains(rendered, ":v"+version+"\"") && !strings.Contains(rendered, ":v"+version+"\n") {
		t.Errorf("the packaged chart's Deployment does not default to the image tag v%s", version)
	}
}

// chartYAML reads Chart.yaml out of a packaged chart.
func chartYAML(t *testing.T, pkg string) map[string]any {
	t.Helper()
	f, err := os.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", pkg, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("%s has no Chart.yaml", pkg)
		}
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		if h.Name != "batch-scheduler/Chart.yaml" {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		var chart map[string]any
		if err := yaml.Unmarshal(data, &chart); err != nil {
			t.Fatalf("%s: Chart.yaml: %v", pkg, err)
		}
		return chart
	}
}
