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

package custominformer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// ewYAML is an ExternalWorkload manifest (8 lines).
func ewYAML(name, owner string) string {
	return fmt.Sprintf(`apiVersion: batch-scheduler.io/v1alpha1
kind: ExternalWorkload
metadata:
  name: %s
spec:
  nodeName: host-1
  workloadKind: vm
  owner: %s
`, name, owner)
}

// put writes a file atomically, the way tools should: a hidden temporary
// file renamed into place.
func put(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp-"+name)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func buildFile(t *testing.T, dir string) Built {
	t.Helper()
	return buildFilePolling(t, dir, "200ms")
}

// buildFilePolling builds a file source informer that polls every poll;
// with "1h", only change notifications find changes during a test.
func buildFilePolling(t *testing.T, dir, poll string) Built {
	t.Helper()
	b, err := buildSource(t, FileSource, "directory: "+dir+"\npollInterval: "+poll+"\n")
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

// fileLW builds the file source's ListerWatcher directly.
func fileLW(t *testing.T, dir string) *inventory {
	t.Helper()
	ci := configapi.CustomInformer{Name: "inv", Resource: "ExternalWorkload", SourceType: FileSource,
		SourceArgs: configapi.NewRawArgs("c.yaml", []byte("directory: "+dir+"\npollInterval: 200ms\n"))}
	lw, err := newFileSource(context.Background(), ci, &v1alpha1.ExternalWorkload{})
	if err != nil {
		t.Fatal(err)
	}
	return lw.(*inventory)
}

// eventRecorder records an informer's events as "add w1=alice".
type eventRecorder struct {
	mu     sync.Mutex
	events []string
	rvs    []int64
}

func recordWorkloads(t *testing.T, b Built) *eventRecorder {
	t.Helper()
	r := &eventRecorder{}
	rec := func(kind string, o any) {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		w := o.(*v1alpha1.ExternalWorkload)
		rv, _ := strconv.ParseInt(w.ResourceVersion, 10, 64)
		r.mu.Lock()
		r.events = append(r.events, kind+" "+w.Name+"="+w.Spec.Owner)
		r.rvs = append(r.rvs, rv)
		r.mu.Unlock()
	}
	if _, err := b.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { rec("add", o) },
		UpdateFunc: func(_, o any) { rec("update", o) },
		DeleteFunc: func(o any) { rec("delete", o) },
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *eventRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// expect waits for the recorder to hold exactly want, in order.
func (r *eventRecorder) expect(t *testing.T, want ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d events", len(want)), func() bool { return len(r.list()) >= len(want) })
	got := r.list()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// quiet checks that no event beyond the first n arrives for a while (a
// few poll intervals).
func (r *eventRecorder) quiet(t *testing.T, n int) {
	t.Helper()
	time.Sleep(700 * time.Millisecond)
	if got := r.list(); len(got) != n {
		t.Fatalf("unexpected events: %v", got[n:])
	}
}

func keys(b Built) string {
	k := b.Informer.GetStore().ListKeys()
	sort.Strings(k)
	return strings.Join(k, " ")
}

// logCapture records what klog logs while a test runs, in klog's text
// format. (A logr sink would read easier, but klog.SetLogger must not run
// while other goroutines log, and informers of earlier tests may still be
// winding down.)
type logCapture struct{ buf *st.SyncBuffer }

func captureKlog(t *testing.T) *logCapture { return &logCapture{buf: captureLogs(t)} }

// find waits for a line of severity sev ("ERROR", "INFO") containing every
// one of subs, and returns it.
func (c *logCapture) find(t *testing.T, sev string, subs ...string) string {
	t.Helper()
	var line string
	waitFor(t, fmt.Sprintf("a %s log line with %q", sev, subs), func() bool {
		klog.Flush()
	lines:
		for _, l := range strings.Split(c.buf.String(), "\n") {
			if !strings.HasPrefix(l, sev[:1]) {
				continue
			}
			for _, s := range subs {
				if !strings.Contains(l, s) {
					continue lines
				}
			}
			line = l
			return true
		}
		return false
	})
	return line
}

// fileGoroutines counts the goroutines of file watches and of fsnotify.
func fileGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("fsnotify")) || bytes.Contains(g, []byte("custominformer.(*fileWatch)")) {
			count++
		}
	}
	return count
}

func waitNoFileGoroutines(t *testing.T) {
	t.Helper()
	waitFor(t, "file watch and fsnotify goroutines to end", func() bool { return fileGoroutines() == 0 })
}

func TestFileSourceSyncsAndFollowsChanges(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.yaml", ewYAML("w1", "alice"))
	put(t, dir, "multi.yml", "# two workloads\n---\n"+ewYAML("w2", "bob")+"---\n---\n"+ewYAML("w3", "carol"))
	put(t, dir, ".hidden.yaml", "not: [valid")
	put(t, dir, "notes.txt", "not: [valid")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(dir, "sub"), "x.yaml", "not: [valid")

	b := buildFile(t, dir)
	r := recordWorkloads(t, b)
	log := run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	r.expect(t, "add w1=alice", "add w2=bob", "add w3=carol")
	if k := keys(b); k != "w1 w2 w3" {
		t.Fatalf("keys = %s", k)
	}
	obj, _, _ := b.Informer.GetStore().GetByKey("w1")
	w1 := obj.(*v1alpha1.ExternalWorkload)
	if w1.UID == "" || w1.ResourceVersion == "" || w1.CreationTimestamp.IsZero() || w1.Spec.NodeName != "host-1" || w1.Namespace != "" {
		t.Fatalf("w1 = %+v", w1)
	}
	uid := w1.UID

	put(t, dir, "c.json", `{"apiVersion": "batch-scheduler.io/v1alpha1", "kind": "ExternalWorkload",
		"metadata": {"name": "w4"}, "spec": {"nodeName": "host-2", "workloadKind": "vm", "owner": "dave"}}`)
	r.expect(t, "add w1=alice", "add w2=bob", "add w3=carol", "add w4=dave")
	put(t, dir, "a.yaml", ewYAML("w1", "erin"))
	r.expect(t, "add w1=alice", "add w2=bob", "add w3=carol", "add w4=dave", "update w1=erin")
	obj, _, _ = b.Informer.GetStore().GetByKey("w1")
	if got := obj.(*v1alpha1.ExternalWorkload).UID; got != uid {
		t.Fatalf("UID changed on update: %s -> %s", uid, got)
	}
	remove(t, filepath.Join(dir, "multi.yml"))
	all := []string{"add w1=alice", "add w2=bob", "add w3=carol", "add w4=dave", "update w1=erin", "delete w2=bob", "delete w3=carol"}
	r.expect(t, all...)

	// Rewriting a file with the same objects is no change.
	put(t, dir, "c.json", `{"apiVersion": "batch-scheduler.io/v1alpha1", "kind": "ExternalWorkload",
		"metadata": {"name": "w4"}, "spec": {"nodeName": "host-2", "workloadKind": "vm", "owner": "dave"}}`+"\n\n")
	r.quiet(t, len(all))
	if k := keys(b); k != "w1 w4" {
		t.Fatalf("keys = %s", k)
	}
	r.mu.Lock()
	for i := 1; i < len(r.rvs); i++ {
		if r.rvs[i] <= r.rvs[i-1] {
			t.Errorf("resourceVersions not increasing: %v", r.rvs)
		}
	}
	r.mu.Unlock()
	if errs := log.list(); len(errs) != 0 {
		t.Fatalf("unexpected list/watch errors: %v", errs)
	}
}

func TestFileSourceSemanticComparison(t *testing.T) {
	dir := t.TempDir()
	withCPU := func(q string) string {
		return ewYAML("w1", "alice") + "  resources:\n    cpu: " + q + "\n"
	}
	put(t, dir, "a.yaml", withCPU("1"))
	inv := fileLW(t, dir)
	l1, err := inv.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, dir, "a.yaml", "# the same, spelled differently\n"+withCPU(`"1000m"`))
	l2, err := inv.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv1, rv2 := l1.(*v1alpha1.ExternalWorkloadList).ResourceVersion, l2.(*v1alpha1.ExternalWorkloadList).ResourceVersion; rv1 != rv2 {
		t.Fatalf("an equal object was recorded as a change: rv %s -> %s", rv1, rv2)
	}
	put(t, dir, "a.yaml", withCPU("2"))
	l3, err := inv.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := l3.(*v1alpha1.ExternalWorkloadList)
	if list.ResourceVersion == l2.(*v1alpha1.ExternalWorkloadList).ResourceVersion || list.Items[0].Spec.Resources.Cpu().String() != "2" {
		t.Fatalf("change not recorded: %+v", list)
	}
}

func TestFileSourceBadFileKeepsStateAndRecovers(t *testing.T) {
	logs := captureKlog(t)
	dir := t.TempDir()
	put(t, dir, "a.yaml", ewYAML("w1", "alice"))
	b := buildFile(t, dir)
	r := recordWorkloads(t, b)
	run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	r.expect(t, "add w1=alice")

	put(t, dir, "bad.yaml", ewYAML("w2", "bob")+"---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n")
	line := logs.find(t, "ERROR", "bad.yaml: document 2 (line 10)", `kind \"Node\"`)
	if !strings.Contains(line, `informer="workloads"`) || !strings.Contains(line, `directory="`+dir+`"`) {
		t.Fatalf("log line lacks the informer or directory: %s", line)
	}
	// The whole scan is rejected: neither w2 nor a change to a good file
	// gets through while bad.yaml is bad.
	put(t, dir, "a.yaml", ewYAML("w1", "carol"))
	r.quiet(t, 1)
	if k := keys(b); k != "w1" {
		t.Fatalf("keys = %s", k)
	}

	put(t, dir, "bad.yaml", ewYAML("w2", "bob"))
	r.expect(t, "add w1=alice", "update w1=carol", "add w2=bob")
	logs.find(t, "INFO", "valid again", `informer="workloads"`)

	// The directory itself going away is an error too; the state stays.
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	logs.find(t, "ERROR", "inventory directory "+dir+": no such file or directory")
	r.quiet(t, 3)
	if k := keys(b); k != "w1 w2" {
		t.Fatalf("keys = %s", k)
	}
	put(t, moved, "a.yaml", ewYAML("w1", "dave"))
	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	r.expect(t, "add w1=alice", "update w1=carol", "add w2=bob", "update w1=dave")
	// And it is watched again: a change is seen.
	remove(t, filepath.Join(dir, "bad.yaml"))
	r.expect(t, "add w1=alice", "update w1=carol", "add w2=bob", "update w1=dave", "delete w2=bob")
}

func TestFileSourceBadInitialDirectory(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.yaml", ewYAML("w1", "alice"))
	put(t, dir, "b.yaml", "apiVersion: batch-scheduler.io/v1alpha1\nkind: ExternalWorkload\nmetadata:\n  labels: {a: b}\n")
	b := buildFile(t, dir)
	log := run(t, b)
	err := waitForError(t, b, log, contains("b.yaml: document 1 (line 1): metadata.name: required"))
	t.Logf("reported: %v", err)
	put(t, dir, "b.yaml", ewYAML("w2", "bob"))
	waitFor(t, "sync once the file is fixed", b.Informer.HasSynced)
	if k := keys(b); k != "w1 w2" {
		t.Fatalf("keys = %s", k)
	}
}

func TestFileSourceRejectsBadContent(t *testing.T) {
	good := ewYAML("w1", "alice")
	tests := []struct {
		name, file, content string
		want                []string
	}{
		{"wrong kind", "bad.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n",
			[]string{`bad.yaml: document 1 (line 1): apiVersion "v1" and kind "Node": want apiVersion "batch-scheduler.io/v1alpha1" and kind "ExternalWorkload"`}},
		{"second document", "bad.yaml", "---\n" + ewYAML("w2", "bob") + "---\nkind: ExternalWorkload\n",
			[]string{`bad.yaml: document 2 (line 11): apiVersion "" and kind "ExternalWorkload"`}},
		{"syntax", "bad.yaml", ewYAML("w2", "bob") + "  extra: [\n",
			[]string{"bad.yaml: document 1: ", "line"}},
		{"unknown field", "bad.yaml", strings.Replace(ewYAML("w2", "bob"), "owner:", "ownr:", 1),
			[]string{`bad.yaml: document 1 (line 1): line 8: unknown field "spec.ownr"`}},
		{"unknown fields", "bad.yaml", strings.Replace(ewYAML("w2", "bob"), "metadata:\n", "metadata:\n  lables: {}\n", 1) + "  zone: a\n",
			[]string{`bad.yaml: document 1 (line 1): line 4: unknown field "metadata.lables"; line 10: unknown field "spec.zone"`}},
		{"duplicate key", "bad.yaml", ewYAML("w2", "bob") + "  owner: carol\n",
			[]string{`bad.yaml: document 1 (line 1): line 9: mapping key "owner" already defined at line 8`}},
		{"wrong type", "bad.yaml", strings.Replace(ewYAML("w2", "bob"), "nodeName: host-1", "nodeName: [a]", 1),
			[]string{"bad.yaml: document 1 (line 1): line 6: ", "spec.nodeName"}},
		{"no name", "bad.yaml", strings.Replace(ewYAML("", "bob"), "name: ", "annotations: {}", 1),
			[]string{"bad.yaml: document 1 (line 1): metadata.name: required"}},
		{"bad name", "bad.yaml", ewYAML("Bad_Name", "bob"),
			[]string{`bad.yaml: document 1 (line 1): metadata.name "Bad_Name": `}},
		{"namespace", "bad.yaml", strings.Replace(ewYAML("w2", "bob"), "metadata:\n", "metadata:\n  namespace: ns\n", 1),
			[]string{`metadata.namespace "ns": must not be set, ExternalWorkload is cluster-scoped`}},
		{"invalid spec", "bad.yaml", strings.Replace(ewYAML("w2", "bob"), "workloadKind: vm", "workloadKind: \"\"", 1),
			[]string{"bad.yaml: document 1 (line 1): spec.workloadKind: Required value"}},
		{"duplicate name", "b.yaml", ewYAML("w1", "bob"),
			[]string{`b.yaml: document 1 (line 1): ExternalWorkload "w1" is already defined at a.yaml: document 1 (line 1)`}},
		{"not a mapping", "bad.yml", "- a\n- b\n",
			[]string{"bad.yml: document 1 (line 1): not a mapping"}},
		{"bad json", "bad.json", `{"apiVersion": "v1",`,
			[]string{"bad.json: document 1: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			put(t, dir, "a.yaml", good)
			inv := fileLW(t, dir)
			before, err := inv.List(metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			put(t, dir, tt.file, tt.content)
			_, err = inv.List(metav1.ListOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "inventory directory "+dir+": ") {
				t.Errorf("error %q does not start with the directory", err)
			}
			var se *scanError
			if !errors.As(err, &se) {
				t.Errorf("error is a %T, want a *scanError", err)
			}
			remove(t, filepath.Join(dir, tt.file))
			after, err := inv.List(metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if b, a := before.(*v1alpha1.ExternalWorkloadList), after.(*v1alpha1.ExternalWorkloadList); a.ResourceVersion != b.ResourceVersion || len(a.Items) != 1 {
				t.Fatalf("state changed by a rejected scan: %+v -> %+v", b, a)
			}
		})
	}
}

func TestFileSourceLimitsTheErrorMessage(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 13; i++ {
		put(t, dir, fmt.Sprintf("bad%02d.yaml", i), "kind: Pod\n")
	}
	_, err := fileLW(t, dir).List(metav1.ListOptions{})
	if err == nil || !strings.HasSuffix(err.Error(), "; and 3 more") || strings.Contains(err.Error(), "bad10.yaml") {
		t.Fatalf("error = %v", err)
	}
	var se *scanError
	if !errors.As(err, &se) || len(se.problems) != 13 {
		t.Fatalf("error %T does not hold the 13 problems", err)
	}
}

func TestFileSourceRefusesHugeFiles(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.yaml", ewYAML("w1", "alice"))
	f, err := os.Create(filepath.Join(dir, "huge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(FileMaxBytes + 1); err != nil { // sparse
		t.Fatal(err)
	}
	f.Close()
	_, err = fileLW(t, dir).List(metav1.ListOptions{})
	if err == nil || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "huge.yaml: 16777217 bytes, more than 16777216") {
		t.Fatalf("error = %v", err)
	}
}

func TestFileSourceConfigMapSymlinkSwap(t *testing.T) {
	for _, poll := range []string{"200ms", "1h"} {
		t.Run("poll "+poll, func(t *testing.T) { testConfigMapSymlinkSwap(t, poll) })
	}
}

func testConfigMapSymlinkSwap(t *testing.T, poll string) {
	dir := t.TempDir()
	// Like the kubelet's atomic writer: data in a timestamped hidden
	// directory, "..data" pointing at it, and one top-level symlink per
	// key through "..data".
	project := func(gen string, files map[string]string) {
		t.Helper()
		genDir := filepath.Join(dir, gen)
		if err := os.Mkdir(genDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(genDir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		old, _ := os.Readlink(filepath.Join(dir, "..data"))
		if err := os.Symlink(gen, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		for name := range files {
			link := filepath.Join(dir, name)
			if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
				if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
					t.Fatal(err)
				}
			}
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if _, keep := files[e.Name()]; !keep && !strings.HasPrefix(e.Name(), ".") {
				remove(t, filepath.Join(dir, e.Name()))
			}
		}
		if old != "" {
			if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
				t.Fatal(err)
			}
		}
	}
	project("..2026_01_01_00_00_00.1", map[string]string{"a.yaml": ewYAML("w1", "alice"), "b.yaml": ewYAML("w2", "bob")})
	b := buildFilePolling(t, dir, poll)
	r := recordWorkloads(t, b)
	log := run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	r.expect(t, "add w1=alice", "add w2=bob")

	project("..2026_01_01_00_05_00.2", map[string]string{"a.yaml": ewYAML("w1", "carol"), "c.yaml": ewYAML("w3", "dave")})
	waitFor(t, "the new generation", func() bool { return len(r.list()) >= 5 })
	r.quiet(t, 5)
	got := r.list()[2:]
	sort.Strings(got)
	if strings.Join(got, ", ") != "add w3=dave, delete w2=bob, update w1=carol" {
		t.Fatalf("events after the swap: %v", r.list()[2:])
	}
	if k := keys(b); k != "w1 w3" {
		t.Fatalf("keys = %s", k)
	}
	if errs := log.list(); len(errs) != 0 {
		t.Fatalf("unexpected list/watch errors: %v", errs)
	}
}

func TestFileSourceNotifiesWithoutWaitingForAPoll(t *testing.T) {
	dir := t.TempDir()
	b := buildFilePolling(t, dir, "1h")
	r := recordWorkloads(t, b)
	run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	put(t, dir, "a.yaml", ewYAML("w1", "alice"))
	r.expect(t, "add w1=alice")
	// Written in place, not renamed, is seen too. (One write of the same
	// length, so that no scan can see the file half-written.)
	f, err := os.OpenFile(filepath.Join(dir, "a.yaml"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(ewYAML("w1", "bobby")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r.expect(t, "add w1=alice", "update w1=bobby")
	remove(t, filepath.Join(dir, "a.yaml"))
	r.expect(t, "add w1=alice", "update w1=bobby", "delete w1=bobby")
}

func TestFileSourcePollsChangesBehindSymlinks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "x.yaml")
	if err := os.WriteFile(target, []byte(ewYAML("w1", "alice")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "x.yaml")); err != nil {
		t.Fatal(err)
	}
	b := buildFile(t, dir)
	r := recordWorkloads(t, b)
	run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)
	r.expect(t, "add w1=alice")
	// Nothing changes in the watched directory itself: only polling sees
	// this.
	put(t, outside, "x.yaml", ewYAML("w1", "bob"))
	r.expect(t, "add w1=alice", "update w1=bob")
}

func TestFileSourceChurnDeliversEveryChangeOnce(t *testing.T) {
	dir := t.TempDir()
	b := buildFile(t, dir)
	r := recordWorkloads(t, b)
	log := run(t, b)
	waitFor(t, "sync", b.Informer.HasSynced)

	rng := rand.New(rand.NewSource(1))
	want := map[string]string{} // name -> owner
	for i := 0; i < 60; i++ {
		f := rng.Intn(5)
		name := fmt.Sprintf("f%d.yaml", f)
		for j := 0; j < 3; j++ {
			delete(want, fmt.Sprintf("w%d-%d", f, j))
		}
		if rng.Intn(4) == 0 {
			_ = os.Remove(filepath.Join(dir, name))
		} else {
			var docs []string
			for j := 0; j < 1+rng.Intn(3); j++ {
				w, owner := fmt.Sprintf("w%d-%d", f, j), fmt.Sprintf("o%d", i)
				docs = append(docs, ewYAML(w, owner))
				want[w] = owner
			}
			put(t, dir, name, strings.Join(docs, "---\n"))
		}
		time.Sleep(time.Duration(rng.Intn(30)) * time.Millisecond)
	}
	var wantKeys []string
	for w, o := range want {
		wantKeys = append(wantKeys, w+"="+o)
	}
	sort.Strings(wantKeys)
	state := func() string {
		var got []string
		for _, o := range b.Informer.GetStore().List() {
			w := o.(*v1alpha1.ExternalWorkload)
			got = append(got, w.Name+"="+w.Spec.Owner)
		}
		sort.Strings(got)
		return strings.Join(got, " ")
	}
	waitFor(t, "the final state", func() bool { return state() == strings.Join(wantKeys, " ") })

	// Replaying the events gives the final state, and each is legal: an
	// add of something absent, an update or delete of something present.
	seen := map[string]string{}
	for _, e := range r.list() {
		kind, rest, _ := strings.Cut(e, " ")
		w, owner, _ := strings.Cut(rest, "=")
		_, present := seen[w]
		switch {
		case kind == "add" && !present, kind == "update" && present:
			if kind == "update" && seen[w] == owner {
				t.Errorf("update without change: %s", e)
			}
			seen[w] = owner
		case kind == "delete" && present:
			delete(seen, w)
		default:
			t.Fatalf("illegal event %q in %v", e, r.list())
		}
	}
	var replayed []string
	for w, o := range seen {
		replayed = append(replayed, w+"="+o)
	}
	sort.Strings(replayed)
	if strings.Join(replayed, " ") != strings.Join(wantKeys, " ") {
		t.Fatalf("replayed %v, want %v", replayed, wantKeys)
	}
	r.mu.Lock()
	for i := 1; i < len(r.rvs); i++ {
		if r.rvs[i] <= r.rvs[i-1] {
			t.Errorf("resourceVersions not increasing at %d: %v", i, r.rvs)
			break
		}
	}
	r.mu.Unlock()
	if errs := log.list(); len(errs) != 0 {
		t.Fatalf("unexpected list/watch errors: %v", errs)
	}
}

func TestFileSourceNodesAndPods(t *testing.T) {
	build := func(resource, dir string) Built {
		ci := configapi.CustomInformer{Name: strings.ToLower(resource) + "s", Resource: resource, SourceType: FileSource,
			SourceArgs: configapi.NewRawArgs("c.yaml", []byte("directory: "+dir+"\n"))}
		b, err := Build(context.Background(), NewInTreeSourceRegistry(), "c.yaml", 2, ci)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Run("nodes", func(t *testing.T) {
		dir := t.TempDir()
		put(t, dir, "nodes.JSON", `{
	"apiVersion": "v1", "kind": "Node",
	"metadata": {"name": "vm-host-1", "labels": {"since": "2024-01-01", "flag": "on"}},
	"status": {"capacity": {"cpu": "4"}}
}`)
		put(t, dir, "more.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: vm-host-2\n  labels:\n    since: 2024-01-02\n    flag: on\n")
		b := build("Node", dir)
		run(t, b)
		waitFor(t, "sync", b.Informer.HasSynced)
		if k := keys(b); k != "vm-host-1 vm-host-2" {
			t.Fatalf("keys = %s", k)
		}
		for _, name := range []string{"vm-host-1", "vm-host-2"} {
			obj, _, _ := b.Informer.GetStore().GetByKey(name)
			n := obj.(*v1.Node)
			if !strings.HasPrefix(n.Labels["since"], "2024-01-0") || len(n.Labels["since"]) != 10 || n.Labels["flag"] != "on" {
				t.Errorf("%s: labels %v", name, n.Labels)
			}
		}
		obj, _, _ := b.Informer.GetStore().GetByKey("vm-host-1")
		if q := obj.(*v1.Node).Status.Capacity[v1.ResourceCPU]; q.String() != "4" {
			t.Errorf("capacity cpu = %s", q.String())
		}
	})
	t.Run("pods", func(t *testing.T) {
		dir := t.TempDir()
		put(t, dir, "pods.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: p1
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata:
  name: p1
  namespace: batch
spec:
  containers: [{name: c, image: busybox}]
`)
		b := build("Pod", dir)
		run(t, b)
		waitFor(t, "sync", b.Informer.HasSynced)
		if k := keys(b); k != "batch/p1 default/p1" {
			t.Fatalf("keys = %s", k)
		}
		a, _, _ := b.Informer.GetStore().GetByKey("default/p1")
		c, _, _ := b.Informer.GetStore().GetByKey("batch/p1")
		if ua, uc := a.(*v1.Pod).UID, c.(*v1.Pod).UID; ua == "" || ua == uc {
			t.Fatalf("UIDs %q and %q: want distinct generated UIDs", ua, uc)
		}
	})
}

func TestFileSourceWatchProtocol(t *testing.T) {
	dir := t.TempDir()
	put(t, dir, "a.yaml", ewYAML("w1", "alice"))
	inv := fileLW(t, dir)
	l, err := inv.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	list := l.(*v1alpha1.ExternalWorkloadList)
	if len(list.Items) != 1 || list.ResourceVersion != "2" {
		t.Fatalf("list = %+v", list)
	}
	recv := func(w watch.Interface) watch.Event {
		t.Helper()
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended")
			}
			return e
		case <-time.After(20 * time.Second):
			t.Fatal("no event")
		}
		return watch.Event{}
	}
	ended := func(w watch.Interface) {
		t.Helper()
		for {
			select {
			case _, ok := <-w.ResultChan():
				if !ok {
					return
				}
			case <-time.After(20 * time.Second):
				t.Fatal("watch did not end")
			}
		}
	}
	name := func(e watch.Event) string {
		return string(e.Type) + " " + e.Object.(*v1alpha1.ExternalWorkload).Name + " " + e.Object.(*v1alpha1.ExternalWorkload).ResourceVersion
	}

	t.Run("from the list", func(t *testing.T) {
		w, err := inv.Watch(metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		put(t, dir, "b.yaml", ewYAML("w2", "bob"))
		if got := name(recv(w)); got != "ADDED w2 3" {
			t.Fatalf("event = %s", got)
		}
		remove(t, filepath.Join(dir, "b.yaml"))
		if got := name(recv(w)); got != "DELETED w2 4" {
			t.Fatalf("event = %s", got)
		}
		w.Stop()
		w.Stop()
		ended(w)
	})
	t.Run("from zero", func(t *testing.T) {
		w, err := inv.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		if got := name(recv(w)); got != "ADDED w1 2" {
			t.Fatalf("event = %s", got)
		}
		w.Stop()
		ended(w)
	})
	t.Run("replay", func(t *testing.T) {
		w, err := inv.Watch(metav1.ListOptions{ResourceVersion: "2"})
		if err != nil {
			t.Fatal(err)
		}
		if got := name(recv(w)) + ", " + name(recv(w)); got != "ADDED w2 3, DELETED w2 4" {
			t.Fatalf("events = %s", got)
		}
		w.Stop()
		ended(w)
	})
	t.Run("context and timeout", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		w, err := inv.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "4"})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		ended(w)
		one := int64(1)
		start := time.Now()
		w, err = inv.Watch(metav1.ListOptions{ResourceVersion: "4", TimeoutSeconds: &one})
		if err != nil {
			t.Fatal(err)
		}
		ended(w)
		if d := time.Since(start); d < 900*time.Millisecond {
			t.Fatalf("ended after %v", d)
		}
	})
	t.Run("expired", func(t *testing.T) {
		for _, rv := range []string{"99"} {
			w, err := inv.Watch(metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatal(err)
			}
			e := recv(w)
			if e.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(e.Object)) {
				t.Fatalf("rv %s: event %s %#v, want an Expired error", rv, e.Type, e.Object)
			}
			ended(w)
		}
		// Push the early changes out of the history.
		var docs []string
		for i := 0; i < 600; i++ {
			docs = append(docs, ewYAML(fmt.Sprintf("bulk-%d", i), "x"))
		}
		put(t, dir, "bulk.yaml", strings.Join(docs, "---\n"))
		if _, err := inv.List(metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		remove(t, filepath.Join(dir, "bulk.yaml"))
		if _, err := inv.List(metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		w, err := inv.Watch(metav1.ListOptions{ResourceVersion: "2"})
		if err != nil {
			t.Fatal(err)
		}
		e := recv(w)
		st, ok := e.Object.(*metav1.Status)
		if e.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
			t.Fatalf("event %s %#v, want 410 Expired", e.Type, e.Object)
		}
		ended(w)
	})
	t.Run("bad options", func(t *testing.T) {
		neg := int64(-1)
		for _, o := range []metav1.ListOptions{{ResourceVersion: "x"}, {TimeoutSeconds: &neg}} {
			if _, err := inv.Watch(o); !apierrors.IsBadRequest(err) {
				t.Errorf("%+v: error %v, want BadRequest", o, err)
			}
		}
	})
	waitNoFileGoroutines(t)
}

func TestFileSourceReleasesGoroutines(t *testing.T) {
	waitNoFileGoroutines(t) // nothing left over from earlier tests
	dir := t.TempDir()
	put(t, dir, "a.yaml", ewYAML("w1", "alice"))
	t.Run("informer", func(t *testing.T) {
		b := buildFile(t, dir)
		r := recordWorkloads(t, b)
		run(t, b)
		waitFor(t, "sync", b.Informer.HasSynced)
		r.expect(t, "add w1=alice")
		// One watch: its goroutine and fsnotify's reader.
		waitFor(t, "the watch goroutines", func() bool { return fileGoroutines() >= 2 })
		if n := fileGoroutines(); n > 2 {
			t.Fatalf("%d file/fsnotify goroutines for one watch", n)
		}
		put(t, dir, "a.yaml", ewYAML("w1", "bob"))
		r.expect(t, "add w1=alice", "update w1=bob")
	})
	// The subtest's cleanup stopped the informer.
	waitNoFileGoroutines(t)

	// A list starts nothing.
	inv := fileLW(t, dir)
	if _, err := inv.List(metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := fileGoroutines(); n != 0 {
		t.Fatalf("%d goroutines after a list", n)
	}
	// A stopped watch has released everything by the time its channel is
	// closed, but for the return of its own goroutine.
	w, err := inv.Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-w.ResultChan() // ADDED w1
	w.Stop()
	for range w.ResultChan() {
	}
	waitNoFileGoroutines(t)
}

func TestFileSourceArgErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ args, want string }{
		{"", "directory: required"},
		{"pollInterval: 1s\n", "directory: required"},
		{"directory: /nonexistent/inv\n", "directory: /nonexistent/inv: no such file or directory"},
		{"directory: " + file + "\n", "directory: " + file + ": not a directory"},
		{"\n\ndirectory: " + dir + "\npolInterval: 1s\n", `c.yaml: line 2: custom informer "workloads": source file: line 4: field polInterval not found`},
		{"directory: " + dir + "\npollInterval: -1s\n", "pollInterval: must not be negative"},
		{"directory: " + dir + "\npollInterval: 10ms\n", "pollInterval: must be at least 100ms"},
		{"directory: " + dir + "\npollInterval: often\n", "line 2"},
	}
	for _, tt := range tests {
		_, err := buildSource(t, FileSource, tt.args)
		if err == nil {
			t.Errorf("args %q: no error, want %q", tt.args, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `custom informer "workloads": source file`) {
			t.Errorf("args %q: error %q, want it to contain %q", tt.args, err, tt.want)
		}
	}
	inv := fileLW(t, dir)
	if inv.poll != 200*time.Millisecond {
		t.Errorf("poll = %v", inv.poll)
	}
	lw, err := newFileSource(context.Background(), configapi.CustomInformer{Name: "x", Resource: "Node",
		SourceArgs: configapi.NewRawArgs("c.yaml", []byte("directory: "+dir+"\n"))}, &v1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lw.(*inventory).poll; got != DefaultFilePollInterval {
		t.Errorf("default poll = %v", got)
	}
}
